// Live chart for the tensor-parallel demo: each `measurement` server-sent event (JSON, a DOM
// event from htmx's hx-sse extension) adds one step: the bytes each rank sent in its forward
// and backward passes, logical (what torch issued, ring-counted) and wire (what gloo wrote),
// beside the calculator's prediction for that split. Past ShardLabAxes.MAX_RANK_LINES ranks
// it draws the least and most bytes written instead of one line per rank.
(function () {
  "use strict";
  var KIB = 1024;
  var state = null;

  function freshState(el, ranks) {
    var colors = ["#2f5bd3", "#e0912f", "#7a4fc7", "#1f7a4d", "#b42318", "#0e7490", "#a16207", "#be185d"];
    var grouped = ranks.length > window.ShardLabAxes.MAX_RANK_LINES;
    var words = window.ShardLabAxes.labels(el, { least: "least written", most: "most written", step: "step",
      predicted: "predicted", rankLogical: "rank {rank} logical", rankWire: "rank {rank} wire",
      xAxis: "step (splits one after the other)", yAxis: "KiB sent per step (fwd + bwd)" });
    var series = [{ label: words.step }, { label: words.predicted + " KiB", stroke: "#5b6472", width: 1 },
      { label: words.rankLogical.replace("{rank}", 0) + " KiB", stroke: "#111827", width: 2, dash: [2, 3] }];
    if (grouped) {
      [words.least, words.most].forEach(function (name, i) {
        series.push({ label: name + " KiB", stroke: colors[i], width: 2 });
      });
    } else {
      ranks.forEach(function (r, i) {
        series.push({ label: words.rankWire.replace("{rank}", r.rank) + " KiB", stroke: colors[i % colors.length], width: 2 });
      });
    }
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 240,
      scales: { x: { time: false } },
      axes: [{ label: words.xAxis, incrs: [1, 2, 5, 10] }, { label: words.yAxis, size: 70 }],
      series: series,
    };
    var data = series.map(function () { return []; });
    var plot = new window.uPlot(opts, data, el);
    el.uplot = plot;
    return { el: el, data: data, grouped: grouped, plot: plot, count: 0 };
  }

  document.addEventListener("measurement", function (e) {
    var el = document.getElementById("demo-chart");
    if (!el || !window.uPlot || !window.ShardLabAxes) return;
    var m = JSON.parse(e.detail.data);
    if (m.layout === undefined) return;
    if (!state || state.el !== el) state = freshState(el, m.ranks);
    var row = [state.count, m.predicted_bytes / KIB, m.ranks[0].logical_bytes / KIB];
    var wire = m.ranks.map(function (r) { return r.wire_bytes / KIB; });
    if (state.grouped) {
      var w = window.ShardLabAxes.spread(wire);
      row.push(w[0], w[2]);
    } else {
      row = row.concat(wire);
    }
    state.count += 1;
    row.forEach(function (v, i) { if (state.data[i]) state.data[i].push(v); });
    state.plot.setData(state.data);
  });
})();
