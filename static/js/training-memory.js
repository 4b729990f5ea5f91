// The memory-vs-DP chart of the training-memory result, drawn from the data the server
// rendered: on the calculator's page, and in a card's worked examples (several per card, so
// every chart on the page is drawn). Presets and the config.json reader are
// static/js/model-presets.js.
(function () {
  "use strict";

  function draw(el) {
    if (!window.uPlot || el.dataset.drawn) return;
    var s = JSON.parse(el.dataset.series);
    var ys = s.gpu_bytes.map(function (b) { return b / s.unit_bytes; });
    var limit = s.dp.map(function () { return s.limit_bytes / s.unit_bytes; });
    // Labels come translated from the page (data-*), in English when absent.
    var d = el.dataset;
    el.uplot = new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 260,
      scales: { x: { time: false, distr: 3, log: 2 } },
      axes: [{ label: d.xLabel || "data-parallel degree" },
             { label: d.yLabel || s.unit + " per GPU", size: 60 }],
      series: [{ label: "DP" }, { label: d.seriesLabel || "this set-up", stroke: "#2f5bd3", width: 2 },
               { label: s.gpu, stroke: "#b42318", dash: [6, 4] }],
    }, [s.dp, ys, limit], el);
    el.dataset.drawn = "1";
  }

  function drawAll() {
    document.querySelectorAll(".chart[data-series][id='dp-chart']").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    if (window.htmx) window.htmx.onLoad(drawAll);
  });
})();
