// The inference-memory result's memory-vs-batch chart, drawn from the data the server rendered:
// on the calculator's page (redrawn after every htmx swap) and in a card's worked examples, where
// several may share a page, so every such chart is drawn. Presets are static/js/model-presets.js.
(function () {
  "use strict";

  function draw(el) {
    if (!window.uPlot || el.dataset.drawn) return;
    var s = JSON.parse(el.dataset.series);
    var u = s.unit_bytes;
    var totals = s.total_bytes.map(function (b) { return b / u; });
    var budget = s.batch.map(function () { return s.budget_bytes / u; });
    var whole = s.batch.map(function () { return s.gpu_memory_bytes / u; });
    var now = s.batch.map(function (b, i) { return b === s.batch_now ? totals[i] : null; });
    var t = JSON.parse(el.dataset.labels);  // in the reader's language
    el.uplot = new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 260,
      scales: { x: { time: false, distr: 3, log: 2 } },
      axes: [{ label: t.x }, { label: t.y, size: 60 }],
      series: [
        { label: t.batch },
        { label: t.total, stroke: "#2f5bd3", width: 2 },
        { label: t.budget, stroke: "#b42318", dash: [6, 4] },
        { label: s.gpu, stroke: "#8a8a8a", dash: [2, 4] },
        { label: t.yours, stroke: "#1f7a4d", points: { show: true, size: 9, fill: "#1f7a4d" }, width: 0 },
      ],
    }, [s.batch, totals, budget, whole, now], el);
    el.dataset.drawn = "1";
  }

  function drawAll() {
    document.querySelectorAll(".chart[data-series][id='inference-chart']").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    if (window.htmx) window.htmx.onLoad(drawAll);
  });
})();
