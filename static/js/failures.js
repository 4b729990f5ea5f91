// Goodput against the checkpoint interval, drawn from the data the server rendered, with Young's,
// Daly's and the chosen interval marked: on the failures page (redrawn after htmx swaps) and in
// a card's worked examples, where several may share a page, so every such chart is drawn.
(function () {
  "use strict";

  function mark(xs, ys, at) {
    return xs.map(function (x, i) { return at !== null && x === at ? ys[i] : null; });
  }

  function draw(el) {
    if (!window.uPlot || el.dataset.drawn) return;
    var s = JSON.parse(el.dataset.series);
    var pct = s.goodput.map(function (g) { return 100 * g; });
    var dot = function (color) { return { show: true, size: 10, fill: color, stroke: color }; };
    var t = JSON.parse(el.dataset.labels);  // in the reader's language
    el.uplot = new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 260,
      scales: { x: { time: false, distr: 3 } },
      axes: [{ label: t.x }, { label: t.y, size: 50 }],
      series: [
        { label: t.tau },
        { label: t.goodput, stroke: "#2f5bd3", width: 2 },
        { label: "Young", stroke: "#b42318", width: 0, points: dot("#b42318") },
        { label: "Daly", stroke: "#7a4fc7", width: 0, points: dot("#7a4fc7") },
        { label: t.yours, stroke: "#1f7a4d", width: 0, points: dot("#1f7a4d") },
      ],
    }, [s.minutes, pct, mark(s.minutes, pct, s.young_min), mark(s.minutes, pct, s.daly_min),
        mark(s.minutes, pct, s.chosen_min)], el);
    el.dataset.drawn = "1";
  }

  function drawAll() {
    document.querySelectorAll(".chart[data-series][id='failures-chart']").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    if (window.htmx) window.htmx.onLoad(drawAll);
  });
})();
