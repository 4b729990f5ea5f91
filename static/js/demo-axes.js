// What the demo charts share so their labels stay readable at any rank count (the worker
// allows up to 64 ranks): ticks thinned to the room each label needs, and ranks grouped into
// fastest / median / slowest once one line per rank would bury the chart and its legend.
(function () {
  "use strict";
  var NICE = [1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128];
  var measure = null;

  // Width in CSS pixels of `text` in uPlot's axis font (its default: 12px system-ui).
  function textWidth(text, font) {
    if (!measure) measure = document.createElement("canvas").getContext("2d");
    measure.font = font || "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";
    return measure.measureText(text).width;
  }

  // The smallest nice step k such that labels `labelPx` wide, on items `pxPerItem` apart,
  // keep `gapPx` of space between them when every k-th item is labelled.
  function stride(pxPerItem, labelPx, gapPx) {
    var need = labelPx + (gapPx === undefined ? 8 : gapPx);
    for (var i = 0; i < NICE.length; i++) if (NICE[i] * pxPerItem >= need) return NICE[i];
    return Math.ceil(need / Math.max(pxPerItem, 1e-6));
  }

  // Above this many ranks a chart draws fastest, median and slowest instead of every rank.
  var MAX_RANK_LINES = 8;

  // [min, median, max] of per-rank values.
  function spread(values) {
    var s = values.slice().sort(function (a, b) { return a - b; });
    var mid = s.length >> 1;
    var median = s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
    return [s[0], median, s[s.length - 1]];
  }

  // The translated labels a page gives its chart in data-labels (JSON), or the English ones.
  function labels(el, english) {
    var given = {};
    try { given = JSON.parse(el.getAttribute("data-labels") || "{}"); } catch (_e) { given = {}; }
    var out = {};
    Object.keys(english).forEach(function (k) { out[k] = given[k] || english[k]; });
    return out;
  }

  window.ShardLabAxes = {
    textWidth: textWidth,
    stride: stride,
    spread: spread,
    labels: labels,
    MAX_RANK_LINES: MAX_RANK_LINES,
  };
})();
