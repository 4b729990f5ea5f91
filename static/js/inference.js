// The inference-memory page: presets fill the model fields, and the memory-vs-batch chart is
// drawn from the data the server rendered (redrawn after every htmx swap).
(function () {
  "use strict";

  var MODEL_FIELDS = ["layers", "hidden", "heads", "kv_heads", "head_dim", "ffn_hidden", "vocab"];

  function onPreset(f, select) {
    var presets = JSON.parse(f.dataset.presets);
    var fields = presets[select.value];
    if (fields) {
      MODEL_FIELDS.forEach(function (name) {
        var el = f.querySelector('[name="' + name + '"]');
        if (el) el.value = fields[name] === null || fields[name] === undefined ? "" : fields[name];
      });
    }
    f.dispatchEvent(new Event("recalc"));
  }

  function drawChart() {
    var el = document.getElementById("inference-chart");
    if (!el || !window.uPlot || el.dataset.drawn) return;
    var s = JSON.parse(el.dataset.series);
    var u = s.unit_bytes;
    var totals = s.total_bytes.map(function (b) { return b / u; });
    var budget = s.batch.map(function () { return s.budget_bytes / u; });
    var whole = s.batch.map(function () { return s.gpu_memory_bytes / u; });
    var now = s.batch.map(function (b, i) { return b === s.batch_now ? totals[i] : null; });
    new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 260,
      scales: { x: { time: false, distr: 3, log: 2 } },
      axes: [{ label: "batch (sequences)" }, { label: s.unit + " per GPU", size: 60 }],
      series: [
        { label: "batch" },
        { label: "weights + KV cache + overhead", stroke: "#2f5bd3", width: 2 },
        { label: "budget (u × memory)", stroke: "#b42318", dash: [6, 4] },
        { label: s.gpu, stroke: "#8a8a8a", dash: [2, 4] },
        { label: "your batch", stroke: "#1f7a4d", points: { show: true, size: 9, fill: "#1f7a4d" }, width: 0 },
      ],
    }, [s.batch, totals, budget, whole, now], el);
    el.dataset.drawn = "1";
  }

  document.addEventListener("DOMContentLoaded", function () {
    var f = document.getElementById("inference-form");
    if (!f) return;
    var preset = f.querySelector('select[name="preset"]');
    preset.addEventListener("change", function () { onPreset(f, preset); });
    MODEL_FIELDS.forEach(function (name) {
      var el = f.querySelector('[name="' + name + '"]');
      if (el) el.addEventListener("input", function () { preset.value = "custom"; });
    });
    drawChart();
    if (window.htmx) window.htmx.onLoad(function () { drawChart(); });
  });
})();
