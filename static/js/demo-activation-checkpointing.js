// Live chart for the activation-checkpointing demo: each `measurement` server-sent event
// (JSON, dispatched by htmx's hx-sse extension on the document) adds one step of one mode:
// the bytes saved for backward (left axis, beside the calculator's prediction) and the
// slowest rank's step time (right axis). One colour per mode.
(function () {
  "use strict";
  var MIB = 1048576;
  var COLORS = ["#2f5bd3", "#e0912f", "#1f7a4d", "#7a4fc7"];
  var state = null;

  function freshState(el, modes) {
    var words = window.ShardLabAxes.labels(el, { iteration: "iteration", saved: "{mode} saved",
      predicted: "predicted", mibAxis: "MiB saved for backward", msAxis: "ms per step", modes: {} });
    var name = function (mode) { return words.modes[mode] || mode; };
    var series = [{ label: words.iteration }];
    modes.forEach(function (mode, i) {
      series.push({ label: words.saved.replace("{mode}", name(mode)) + " MiB", scale: "MiB", stroke: COLORS[i % COLORS.length],
                    width: 0, points: { show: true, size: 9, fill: COLORS[i % COLORS.length] } });
    });
    modes.forEach(function (mode, i) {
      series.push({ label: name(mode) + " ms", scale: "ms", stroke: COLORS[i % COLORS.length],
                    width: 0, points: { show: true, size: 7, fill: "#ffffff" } });
    });
    series.push({ label: words.predicted + " MiB", scale: "MiB", stroke: "#5b6472", width: 0,
                  points: { show: true, size: 5, fill: "#5b6472" } });
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 240,
      scales: { x: { time: false }, MiB: { auto: true, range: function (u, min, max) { return [0, max * 1.1]; } }, ms: { auto: true } },
      axes: [
        { label: words.iteration, incrs: [1, 2, 5, 10] },
        { scale: "MiB", label: words.mibAxis },
        { scale: "ms", side: 1, label: words.msAxis, grid: { show: false } },
      ],
      series: series,
    };
    var data = series.map(function () { return []; });
    var plot = new window.uPlot(opts, data, el);
    el.uplot = plot;
    return { el: el, modes: modes, data: data, plot: plot };
  }

  document.addEventListener("measurement", function (e) {
    var el = document.getElementById("demo-chart");
    if (!el || !window.uPlot || !window.ShardLabAxes) return;
    var m = JSON.parse(e.detail.data);
    if (m.saved_bytes === undefined) return;
    if (!state || state.el !== el) state = freshState(el, m.modes);
    var row = [m.iteration];
    state.modes.forEach(function (mode) { row.push(mode === m.mode ? m.saved_bytes / MIB : null); });
    state.modes.forEach(function (mode) { row.push(mode === m.mode ? m.time_s * 1000 : null); });
    row.push(m.predicted_bytes / MIB);
    row.forEach(function (v, i) { state.data[i].push(v); });
    state.plot.setData(state.data);
  });
})();
