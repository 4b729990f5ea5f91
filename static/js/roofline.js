// Attainable FLOP/s against intensity (log-log) with the operation marked, drawn from the data
// the server rendered: on the roofline page (again after every htmx swap of the result) and in a
// card's worked examples, where several may share a page, so every such chart is drawn.
(function () {
  "use strict";

  function draw(el) {
    if (!window.uPlot || el.dataset.drawn) return;
    var s = JSON.parse(el.dataset.series);
    var tera = function (v) { return v === null ? null : v / 1e12; };
    var roof = s.roof.map(tera);
    var op = s.intensity.map(function (x) { return x === s.op_intensity ? s.op_flops / 1e12 : null; });
    var ridge = s.intensity.map(function (x, i) { return x === s.ridge ? roof[i] : null; });
    var t = JSON.parse(el.dataset.labels);  // in the reader's language
    el.uplot = new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 300,
      scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
      axes: [{ label: t.x }, { label: "TFLOP/s", size: 70 }],
      series: [
        { label: t.intensity },
        { label: t.roof, stroke: "#2f5bd3", width: 2 },
        { label: t.operation, stroke: "#b42318", width: 0, points: { show: true, size: 12, fill: "#b42318" } },
        { label: t.ridge, stroke: "#666", width: 0, points: { show: true, size: 8, fill: "#666" } },
      ],
    }, [s.intensity, roof, op, ridge], el);
    el.dataset.drawn = "1";
  }

  function drawAll() {
    document.querySelectorAll(".chart[data-series][id='roofline-chart']").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    if (window.htmx) window.htmx.onLoad(drawAll);
  });
})();
