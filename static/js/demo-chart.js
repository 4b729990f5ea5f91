// Live chart for a demo run: each `measurement` server-sent event (JSON, dispatched by
// htmx's hx-sse extension as a DOM event that bubbles to the document) adds one point per
// rank: its time for the step and the bytes it wrote, beside the calculator's prediction.
(function () {
  "use strict";
  var MIB = 1048576;
  var state = null;

  function freshState(el, ranks) {
    var series = [{ label: "iteration" }];
    var colors = ["#2f5bd3", "#e0912f", "#7a4fc7", "#1f7a4d", "#b42318", "#0e7490", "#a16207", "#be185d"];
    ranks.forEach(function (r, i) {
      series.push({ label: "rank " + r.rank + " ms", scale: "ms", stroke: colors[i % colors.length], width: 2 });
    });
    ranks.forEach(function (r, i) {
      series.push({ label: "rank " + r.rank + " wire MiB", scale: "MiB", stroke: colors[i % colors.length], dash: [4, 4] });
    });
    series.push({ label: "predicted MiB", scale: "MiB", stroke: "#5b6472", width: 1 });
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 240,
      scales: { x: { time: false }, ms: { auto: true }, MiB: { auto: true } },
      axes: [
        { label: "iteration", incrs: [1, 2, 5, 10] },
        { scale: "ms", label: "ms per all-reduce" },
        // Wire and predicted bytes differ by a few hundred bytes per MiB: show the digits.
        { scale: "MiB", side: 1, label: "MiB sent", grid: { show: false }, size: 70,
          values: function (u, vals) { return vals.map(function (v) { return v.toFixed(4); }); } },
      ],
      series: series,
    };
    var data = series.map(function () { return []; });
    return { el: el, data: data, plot: new window.uPlot(opts, data, el) };
  }

  document.addEventListener("measurement", function (e) {
    var el = document.getElementById("demo-chart");
    if (!el || !window.uPlot) return;
    var m = JSON.parse(e.detail.data);
    if (!state || state.el !== el) state = freshState(el, m.ranks);
    var row = [m.iteration];
    m.ranks.forEach(function (r) { row.push(r.time_s * 1000); });
    m.ranks.forEach(function (r) { row.push(r.wire_bytes / MIB); });
    row.push(m.predicted_bytes / MIB);
    row.forEach(function (v, i) { if (state.data[i]) state.data[i].push(v); });
    state.plot.setData(state.data);
  });
})();
