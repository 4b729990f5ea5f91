// Charts of the DDP vs ZeRO demo, fed by `measurement` server-sent events (JSON in
// e.detail.data, one per strategy step): the loss curve of each strategy (they should lie on
// top of each other) and, per strategy and rank, the bytes of parameters, gradients and
// optimizer state after the latest step, as bars.
(function () {
  "use strict";
  var NAMES = { ddp: "DDP", zero1: "ZeRO-1", zero2: "ZeRO-2", zero3: "ZeRO-3" };
  var COLORS = { ddp: "#2f5bd3", zero1: "#e0912f", zero2: "#7a4fc7", zero3: "#1f7a4d" };
  var KINDS = [["params", "parameters", "#2f5bd3"], ["grads", "gradients", "#e0912f"],
    ["optimizer", "optimizer states", "#7a4fc7"]];
  var KIB = 1024;
  var loss = null;
  var memory = null;

  function width(el) { return Math.max(280, el.clientWidth || 600); }

  function lossChart(el, strategies) {
    var series = [{ label: "step" }];
    strategies.forEach(function (s, i) {
      // Dashes of different lengths keep coinciding curves visible under one another.
      series.push({ label: NAMES[s], stroke: COLORS[s], width: 2, dash: i ? [2 + 4 * i, 4] : [],
        points: { show: true } });
    });
    var opts = { width: width(el), height: 220, scales: { x: { time: false } }, series: series,
      axes: [{ label: "step", incrs: [1, 2, 5] }, { label: "loss (mean over ranks)", size: 60 }] };
    var data = series.map(function () { return []; });
    return { el: el, strategies: strategies, data: data, plot: new window.uPlot(opts, data, el) };
  }

  function memoryChart(el, strategies, ranks) {
    var labels = {};
    var xs = [];
    strategies.forEach(function (s, si) {
      ranks.forEach(function (r, ri) {
        var slot = (si * ranks.length + ri) * (KINDS.length + 1);
        labels[slot + 1] = NAMES[s] + " r" + r;
        KINDS.forEach(function (_k, ki) { xs.push(slot + ki); });
      });
    });
    var bars = window.uPlot.paths && window.uPlot.paths.bars ? window.uPlot.paths.bars({ size: [0.9] }) : undefined;
    var series = [{ label: "strategy, rank" }];
    KINDS.forEach(function (k) {
      series.push({ label: k[1] + " KiB", fill: k[2], stroke: k[2], paths: bars, points: { show: !bars } });
    });
    var opts = { width: width(el), height: 240, series: series,
      scales: { x: { time: false }, y: { range: function (_u, _min, max) { return [0, max * 1.05 || 1]; } } },
      axes: [{ values: function (_u, vals) { return vals.map(function (v) { return labels[v] || ""; }); },
        splits: function () { return Object.keys(labels).map(Number); } },
      { label: "KiB per rank after the step", size: 70 }] };
    var data = [xs].concat(KINDS.map(function () { return xs.map(function () { return null; }); }));
    return { el: el, strategies: strategies, ranks: ranks, data: data, plot: new window.uPlot(opts, data, el) };
  }

  document.addEventListener("measurement", function (e) {
    var lossEl = document.getElementById("zero-loss-chart");
    var memEl = document.getElementById("zero-memory-chart");
    if (!lossEl || !memEl || !window.uPlot) return;
    var m = JSON.parse(e.detail.data);
    if (!m.strategies) return;
    var ranks = m.memory.map(function (r) { return r.rank; });
    if (!loss || loss.el !== lossEl) loss = lossChart(lossEl, m.strategies);
    if (!memory || memory.el !== memEl) memory = memoryChart(memEl, m.strategies, ranks);

    var si = loss.strategies.indexOf(m.strategy);
    var x = loss.data[0].indexOf(m.step);
    if (x < 0) {
      loss.data[0].push(m.step);
      for (var i = 1; i < loss.data.length; i++) loss.data[i].push(null);
      x = loss.data[0].length - 1;
    }
    loss.data[si + 1][x] = m.loss;
    loss.plot.setData(loss.data);

    m.memory.forEach(function (r, ri) {
      var slot = (si * ranks.length + ri) * (KINDS.length + 1);
      KINDS.forEach(function (k, ki) {
        var at = memory.data[0].indexOf(slot + ki);
        memory.data[ki + 1][at] = r[k[0]] / KIB;
      });
    });
    memory.plot.setData(memory.data);
  });
})();
