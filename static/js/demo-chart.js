// Live chart for a demo run: each `measurement` server-sent event (JSON, dispatched by
// htmx's hx-sse extension as a DOM event that bubbles to the document) adds one point per
// rank: its time for the step and the bytes it wrote, beside the calculator's prediction.
// Past ShardLabAxes.MAX_RANK_LINES ranks it draws the fastest, median and slowest rank's time
// and the least and most bytes written, so the lines and the legend stay readable.
(function () {
  "use strict";
  var MIB = 1048576;
  var COLORS = ["#2f5bd3", "#e0912f", "#7a4fc7", "#1f7a4d", "#b42318", "#0e7490", "#a16207", "#be185d"];
  var state = null;

  function freshState(el, ranks) {
    var axes = window.ShardLabAxes;
    var grouped = ranks.length > axes.MAX_RANK_LINES;
    var words = axes.labels(el, { fastest: "fastest rank", median: "median rank", slowest: "slowest rank",
      least: "least written", most: "most written", iteration: "iteration", rank: "rank {rank}",
      rankWire: "rank {rank} wire", predicted: "predicted", msAxis: "ms per all-reduce", mibAxis: "MiB sent" });
    var series = [{ label: words.iteration }];
    if (grouped) {
      [words.fastest, words.median, words.slowest].forEach(function (name, i) {
        series.push({ label: name + " ms", scale: "ms", stroke: COLORS[i], width: 2 });
      });
      [words.least, words.most].forEach(function (name, i) {
        series.push({ label: name + " MiB", scale: "MiB", stroke: COLORS[3 + i], dash: [4, 4] });
      });
    } else {
      ranks.forEach(function (r, i) {
        series.push({ label: words.rank.replace("{rank}", r.rank) + " ms", scale: "ms", stroke: COLORS[i % COLORS.length], width: 2 });
      });
      ranks.forEach(function (r, i) {
        series.push({ label: words.rankWire.replace("{rank}", r.rank) + " MiB", scale: "MiB", stroke: COLORS[i % COLORS.length], dash: [4, 4] });
      });
    }
    series.push({ label: words.predicted + " MiB", scale: "MiB", stroke: "#5b6472", width: 1 });
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 240,
      scales: { x: { time: false }, ms: { auto: true }, MiB: { auto: true } },
      axes: [
        { label: words.iteration, incrs: [1, 2, 5, 10] },
        { scale: "ms", label: words.msAxis },
        // Wire and predicted bytes differ by a few hundred bytes per MiB: show the digits.
        { scale: "MiB", side: 1, label: words.mibAxis, grid: { show: false }, size: 70,
          values: function (u, vals) { return vals.map(function (v) { return v.toFixed(4); }); } },
      ],
      series: series,
    };
    var data = series.map(function () { return []; });
    var plot = new window.uPlot(opts, data, el);
    el.uplot = plot;
    return { el: el, data: data, grouped: grouped, plot: plot };
  }

  document.addEventListener("measurement", function (e) {
    var el = document.getElementById("demo-chart");
    if (!el || !window.uPlot || !window.ShardLabAxes) return;
    var m = JSON.parse(e.detail.data);
    if (m.iteration === undefined || !m.ranks || m.predicted_bytes === undefined) return;
    if (!state || state.el !== el) state = freshState(el, m.ranks);
    var ms = m.ranks.map(function (r) { return r.time_s * 1000; });
    var wire = m.ranks.map(function (r) { return r.wire_bytes / MIB; });
    var row = [m.iteration];
    if (state.grouped) {
      var w = window.ShardLabAxes.spread(wire);
      row = row.concat(window.ShardLabAxes.spread(ms), [w[0], w[2]]);
    } else {
      row = row.concat(ms, wire);
    }
    row.push(m.predicted_bytes / MIB);
    row.forEach(function (v, i) { if (state.data[i]) state.data[i].push(v); });
    state.plot.setData(state.data);
  });
})();
