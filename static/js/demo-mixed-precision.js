// Live chart for the mixed-precision demo: each `measurement` server-sent event (JSON,
// dispatched by htmx's hx-sse extension on the document) adds one precision case: the share
// of gradient elements that came out zero, beside the calculator's prediction.
(function () {
  "use strict";
  var state = null;

  // The cases' names under their points; a name wider than the room between two points wraps
  // at its " + " ("fp16 + loss scale" on a phone), so neighbours never overlap.
  function caseNames(u, vals) {
    var room = vals.length > 1 ? Math.abs(u.valToPos(vals[1], "x") - u.valToPos(vals[0], "x")) : Infinity;
    return vals.map(function (v) {
      var name = (state && state.names[v]) || "";
      var fits = window.ShardLabAxes.textWidth(name) + 8 <= room;
      return fits ? name : name.replace(" + ", "\n+ ");
    });
  }

  function freshState(el) {
    var words = window.ShardLabAxes.labels(el, { case: "case", measured: "zero gradients, measured",
      predicted: "predicted", yAxis: "share of gradients that are zero", cases: {} });
    var series = [
      { label: words.case },
      { label: words.measured, stroke: "#b42318", width: 0,
        points: { show: true, size: 10, fill: "#b42318" } },
      { label: words.predicted, stroke: "#5b6472", width: 0,
        points: { show: true, size: 6, fill: "#ffffff" } },
    ];
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 220,
      scales: { x: { time: false }, y: { range: [0, 1] } },
      axes: [
        { label: words.case, incrs: [1], size: 56, values: caseNames },
        { label: words.yAxis },
      ],
      series: series,
    };
    var data = series.map(function () { return []; });
    var plot = new window.uPlot(opts, data, el);
    el.uplot = plot;
    return { el: el, names: {}, cases: words.cases, data: data, plot: plot };
  }

  document.addEventListener("measurement", function (e) {
    var el = document.getElementById("demo-chart");
    if (!el || !window.uPlot || !window.ShardLabAxes) return;
    var m = JSON.parse(e.detail.data);
    if (m.zero_fraction === undefined) return;
    if (!state || state.el !== el) state = freshState(el);
    state.names[m.iteration] = state.cases[m.case] || m.case;
    state.data[0].push(m.iteration);
    state.data[1].push(m.zero_fraction);
    state.data[2].push(m.predicted_zero_fraction);
    state.plot.setData(state.data);
  });
})();
