// The progress page's history chart: answers per day and correct answers per day (uPlot),
// from the JSON the server put in #history-chart's data-history attribute, with the labels
// in the reader's language from data-labels.
(function () {
  "use strict";

  // uPlot's month and weekday names are English; these are the page's language's, which in
  // English are the very names uPlot would use.
  function dateNames(lang) {
    var names = { MMMM: [], MMM: [], WWWW: [], WWW: [] };
    var month = function (style) { return new Intl.DateTimeFormat(lang, { month: style, timeZone: "UTC" }); };
    var day = function (style) { return new Intl.DateTimeFormat(lang, { weekday: style, timeZone: "UTC" }); };
    for (var m = 0; m < 12; m++) {
      var first = new Date(Date.UTC(2024, m, 1));
      names.MMMM.push(month("long").format(first));
      names.MMM.push(month("short").format(first));
    }
    for (var w = 0; w < 7; w++) {
      var sunday = new Date(Date.UTC(2024, 0, 7 + w));  // 7 January 2024 was a Sunday
      names.WWWW.push(day("long").format(sunday));
      names.WWW.push(day("short").format(sunday));
    }
    return names;
  }

  document.addEventListener("DOMContentLoaded", function () {
    var el = document.getElementById("history-chart");
    if (!el || !window.uPlot) return;
    var h = JSON.parse(el.dataset.history);
    var t = JSON.parse(el.dataset.labels);
    var names = dateNames(document.documentElement.lang || "en");
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 200,
      fmtDate: function (template) { return window.uPlot.fmtDate(template, names); },
      series: [
        // A day, not uPlot's default hour and am/pm: the points are whole days.
        { label: t.day, value: "{YYYY}-{MM}-{DD}" },
        { label: t.answers, stroke: "#2f5bd3", width: 2, fill: "rgba(47,91,211,0.08)" },
        { label: t.correct, stroke: "#1f7a4d", width: 2 },
      ],
      axes: [{}, { label: t.y, incrs: [1, 2, 5, 10, 20, 50, 100] }],
    };
    el.uplot = new window.uPlot(opts, [h.days, h.answers, h.correct], el);
  });
})();
