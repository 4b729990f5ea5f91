// Live chart for the collectives demo: each `measurement` server-sent event (JSON, a DOM event
// from htmx's hx-sse extension) is one collective at one size; the chart plots bus bandwidth
// (nccl-tests' definition) against the buffer size S, one line per collective, log x. On a GPU
// with a preset in app.calc.hardware, a dashed line marks the busbw its link allows. Words come
// from the chart element's data-labels, in the page's language.
(function () {
  "use strict";
  var state = null;
  var colors = ["#2f5bd3", "#e0912f", "#7a4fc7", "#1f7a4d", "#b42318"];

  function freshState(el, m) {
    var words = JSON.parse(el.dataset.labels || "{}");
    var series = [{ label: "S" }];
    m.kinds.forEach(function (kind, i) {
      series.push({ label: (words.series || "{kind} busbw, GB/s").replace("{kind}", kind),
        stroke: colors[i % colors.length], width: 2,
        points: { show: true } });
    });
    var data = [m.sizes.slice()];
    m.kinds.forEach(function () { data.push(m.sizes.map(function () { return null; })); });
    if (m.peak_busbw_gbps) {
      series.push({ label: (words.peak || "{link} peak, GB/s").replace("{link}", m.peak_label),
        stroke: "#555", width: 1, dash: [6, 4], points: { show: false } });
      data.push(m.sizes.map(function () { return m.peak_busbw_gbps; }));
    }
    var opts = {
      width: Math.max(280, el.clientWidth || 600),
      height: 260,
      scales: { x: { time: false, distr: 3, log: 2 }, y: { auto: true } },
      axes: [
        { label: words.size || "buffer size S", values: function (u, vals) {
          return vals.map(function (v) { return v >= 1048576 ? (v / 1048576) + " MiB" : (v / 1024) + " KiB"; });
        } },
        { label: words.busbw || "bus bandwidth, GB/s", size: 60 },
      ],
      series: series,
    };
    var plot = new window.uPlot(opts, data, el);
    el.uplot = plot;  // as every chart script keeps it: tests read the drawn labels from it
    return { el: el, data: data, kinds: m.kinds, plot: plot };
  }

  document.addEventListener("measurement", function (e) {
    var el = document.getElementById("demo-chart");
    if (!el || !window.uPlot) return;
    var m = JSON.parse(e.detail.data);
    if (!m.kinds) return;
    if (!state || state.el !== el) state = freshState(el, m);
    var series = state.kinds.indexOf(m.kind) + 1;
    var column = state.data[0].indexOf(m.payload_bytes);
    if (series < 1 || column < 0) return;
    state.data[series][column] = m.busbw_gbps;
    state.plot.setData(state.data);
  });
})();
