// The training-memory page: the memory-vs-DP chart, drawn from the data the server rendered.
// Presets and the config.json reader are static/js/model-presets.js.
(function () {
  "use strict";

  function drawChart(root) {
    var el = (root || document).querySelector ? (root || document).querySelector("#dp-chart") : null;
    if (!el) el = document.getElementById("dp-chart");
    if (!el || !window.uPlot || el.dataset.drawn) return;
    var s = JSON.parse(el.dataset.series);
    var ys = s.gpu_bytes.map(function (b) { return b / s.unit_bytes; });
    var limit = s.dp.map(function () { return s.limit_bytes / s.unit_bytes; });
    new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 260,
      scales: { x: { time: false, distr: 3, log: 2 } },
      axes: [{ label: "data-parallel degree" }, { label: s.unit + " per GPU", size: 60 }],
      series: [{ label: "DP" }, { label: "this set-up", stroke: "#2f5bd3", width: 2 },
               { label: s.gpu, stroke: "#b42318", dash: [6, 4] }],
    }, [s.dp, ys, limit], el);
    el.dataset.drawn = "1";
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (!document.getElementById("training-form")) return;
    drawChart(document);
    if (window.htmx) window.htmx.onLoad(function () { drawChart(document); });
  });
})();
