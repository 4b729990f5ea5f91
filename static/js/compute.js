// Days to finish vs GPU count, drawn from the data the server rendered: on the compute & time
// page (again after every htmx swap of the result) and in a card's worked examples, where
// several may share a page, so every such chart is drawn.
(function () {
  "use strict";

  function draw(el) {
    if (!window.uPlot || el.dataset.drawn) return;
    var s = JSON.parse(el.dataset.series);
    var here = s.gpus.map(function (g, i) { return g === s.current ? s.days[i] : null; });
    var t = JSON.parse(el.dataset.labels);  // in the reader's language
    el.uplot = new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 260,
      scales: { x: { time: false, distr: 3 }, y: { distr: 3 } },
      axes: [{ label: t.gpus }, { label: t.days, size: 70 }],
      series: [
        { label: t.gpus },
        { label: t.curve, stroke: "#2f5bd3", width: 2 },
        { label: t.here, stroke: "#b42318", width: 0, points: { show: true, size: 10, fill: "#b42318" } },
      ],
    }, [s.gpus, s.days, here], el);
    el.dataset.drawn = "1";
  }

  function drawAll() {
    document.querySelectorAll(".chart[data-series][id='compute-chart']").forEach(draw);
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawAll();
    if (window.htmx) window.htmx.onLoad(drawAll);
  });
})();
