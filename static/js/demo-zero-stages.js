// Charts of the DDP vs ZeRO demo, fed by `measurement` server-sent events (JSON in
// e.detail.data, one per strategy step): the loss curve of each strategy (they should lie on
// top of each other) and, per strategy and rank, the bytes of parameters, gradients and
// optimizer state after the latest step, as one stacked bar per rank.
(function () {
  "use strict";
  var NAMES = { ddp: "DDP", zero1: "ZeRO-1", zero2: "ZeRO-2", zero3: "ZeRO-3" };
  var SHORT = { ddp: "DDP", zero1: "Z1", zero2: "Z2", zero3: "Z3" };  // where the names do not fit
  var COLORS = { ddp: "#2f5bd3", zero1: "#e0912f", zero2: "#7a4fc7", zero3: "#1f7a4d" };
  var KINDS = [["params", "#2f5bd3"], ["grads", "#e0912f"], ["optimizer", "#7a4fc7"]];
  var KIB = 1024;
  var loss = null;
  var memory = null;

  function width(el) { return Math.max(280, el.clientWidth || 600); }

  function lossChart(el, strategies) {
    var words = window.ShardLabAxes.labels(el, { step: "step", loss: "loss (mean over ranks)" });
    var series = [{ label: words.step }];
    strategies.forEach(function (s, i) {
      // Dashes of different lengths keep coinciding curves visible under one another.
      series.push({ label: NAMES[s], stroke: COLORS[s], width: 2, dash: i ? [2 + 4 * i, 4] : [],
        points: { show: true } });
    });
    var opts = { width: width(el), height: 220, scales: { x: { time: false } }, series: series,
      axes: [{ label: words.step, incrs: [1, 2, 5] }, { label: words.loss, size: 60 }] };
    var data = series.map(function () { return []; });
    var plot = new window.uPlot(opts, data, el);
    el.uplot = plot;
    return { el: el, strategies: strategies, data: data, plot: plot };
  }

  // One stacked bar per rank (parameters, gradients, optimizer states), the ranks of each
  // strategy side by side and the strategies apart. Labels stay readable at any rank count: the
  // strategy's name once under its group, and rank numbers only as often as they fit.
  function memoryChart(el, strategies, ranks) {
    var n = ranks.length;
    var gap = Math.max(1, Math.ceil(n / 6));
    var xs = [];
    var centres = [];
    strategies.forEach(function (_s, si) {
      ranks.forEach(function (_r, ri) { xs.push(slot(si, ri, n, gap)); });
      centres.push(slot(si, 0, n, gap) + (n - 1) / 2);
    });
    var raw = KINDS.map(function () { return xs.map(function () { return null; }); });
    var bars = window.uPlot.paths && window.uPlot.paths.bars ? window.uPlot.paths.bars({ size: [0.85, 48] }) : undefined;
    var words = window.ShardLabAxes.labels(el, { rank: "rank", params: "parameters", grads: "gradients",
      optimizer: "optimizer states", yAxis: "KiB per rank after the step" });
    var series = [{ label: words.rank, value: function (_u, v) {
      return v === null ? "" : NAMES[strategies[Math.floor(v / (n + gap))]] + " · " + rankAt(v, n, gap);
    } }];
    // Drawn top of the stack first, so each later (lower) part covers the one before it.
    KINDS.slice().reverse().forEach(function (k, i) {
      var kind = KINDS.length - 1 - i;
      series.push({ label: words[k[0]] + " KiB", fill: k[1], stroke: k[1], paths: bars, points: { show: !bars },
        value: function (_u, _v, _si, di) { return di === null || raw[kind][di] === null ? "–" : raw[kind][di].toFixed(2); } });
    });
    function rankTicks(u) {
      var pxPerRank = u.bbox.width / (window.devicePixelRatio || 1) / Math.max(1, u.scales.x.max - u.scales.x.min);
      var label = window.ShardLabAxes.textWidth(String(n - 1));
      var step = window.ShardLabAxes.stride(pxPerRank, label, 10);
      var out = [];
      strategies.forEach(function (_s, si) {
        for (var r = 0; r < n; r += step) out.push(slot(si, r, n, gap));
      });
      return out;
    }
    function groupNames(u) {
      var room = centres.length > 1 ? u.valToPos(centres[1], "x") - u.valToPos(centres[0], "x") : Infinity;
      var widest = Math.max.apply(null, strategies.map(function (s) { return window.ShardLabAxes.textWidth(NAMES[s]); }));
      var names = widest + 8 <= room ? NAMES : SHORT;
      return strategies.map(function (s) { return names[s]; });
    }
    var opts = { width: width(el), height: 260, series: series, legend: { live: true },
      scales: { x: { time: false, range: function () { return [-1, slot(strategies.length - 1, n - 1, n, gap) + 1]; } },
        y: { range: function (_u, _min, max) { return [0, max * 1.05 || 1]; } } },
      axes: [
        { scale: "x", splits: rankTicks, values: function (_u, vals) { return vals.map(function (v) { return String(rankAt(v, n, gap)); }); },
          grid: { show: false }, size: 28, gap: 4 },
        { scale: "x", side: 2, splits: function () { return centres; }, grid: { show: false }, ticks: { show: false },
          values: function (u) { return groupNames(u); }, size: 24, gap: 0 },
        { label: words.yAxis, size: 70 },
      ] };
    var data = [xs].concat(KINDS.map(function () { return xs.map(function () { return null; }); }));
    var plot = new window.uPlot(opts, data, el);
    el.uplot = plot;
    return { el: el, strategies: strategies, n: n, gap: gap, raw: raw, data: data, plot: plot };
  }

  function slot(si, ri, n, gap) { return si * (n + gap) + ri; }
  function rankAt(x, n, gap) { return Math.round(x) % (n + gap); }

  document.addEventListener("measurement", function (e) {
    var lossEl = document.getElementById("zero-loss-chart");
    var memEl = document.getElementById("zero-memory-chart");
    if (!lossEl || !memEl || !window.uPlot || !window.ShardLabAxes) return;
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
      var at = memory.data[0].indexOf(slot(si, ri, memory.n, memory.gap));
      var total = 0;
      KINDS.forEach(function (k, ki) {
        memory.raw[ki][at] = r[k[0]] / KIB;
        total += r[k[0]] / KIB;
      });
      // The stack's series run top first: everything, then all but the optimizer states, ...
      KINDS.forEach(function (_k, ki) {
        memory.data[ki + 1][at] = total;
        total -= memory.raw[KINDS.length - 1 - ki][at];
      });
    });
    memory.plot.setData(memory.data);
  });
})();
