// The progress page's history chart: answers per day and correct answers per day (uPlot),
// from the JSON the server put in #history-chart's data-history attribute.
(function () {
  "use strict";

  document.addEventListener("DOMContentLoaded", function () {
    var el = document.getElementById("history-chart");
    if (!el || !window.uPlot) return;
    var h = JSON.parse(el.dataset.history);
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 200,
      series: [
        {},
        { label: "answers", stroke: "#2f5bd3", width: 2, fill: "rgba(47,91,211,0.08)" },
        { label: "correct", stroke: "#1f7a4d", width: 2 },
      ],
      axes: [{}, { label: "per day", incrs: [1, 2, 5, 10, 20, 50, 100] }],
    };
    new window.uPlot(opts, [h.days, h.answers, h.correct], el);
  });
})();
