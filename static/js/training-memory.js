// The training-memory page: a pasted config.json fills the model fields through the API, and
// the memory-vs-DP chart is drawn from the data the server rendered. Presets are
// static/js/model-presets.js.
(function () {
  "use strict";

  function form() { return document.getElementById("training-form"); }

  function onConfig(f) {
    var status = document.getElementById("hf-config-status");
    var text = document.getElementById("hf-config").value;
    var body;
    try { body = JSON.parse(text); } catch (err) { status.textContent = "Not valid JSON: " + err.message; return; }
    fetch("/api/calc/model/from-hf-config", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    }).then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })
      .then(function (res) {
        if (res[0] !== 200) {
          var detail = res[1].detail;
          status.textContent = typeof detail === "string" ? detail : JSON.stringify(detail);
          return;
        }
        window.ShardLabModel.fillModel(f, res[1].model);
        window.ShardLabModel.setField(f, "preset", "custom");
        status.textContent = "Filled: " + res[1].total_params.toLocaleString() + " parameters.";
        window.ShardLabModel.recalc(f);
      });
  }

  function drawChart(root) {
    var el = (root || document).querySelector ? (root || document).querySelector("#dp-chart") : null;
    if (!el) el = document.getElementById("dp-chart");
    if (!el || !window.uPlot || el.dataset.drawn) return;
    var s = JSON.parse(el.dataset.series);
    var ys = s.gpu_bytes.map(function (b) { return b / s.unit_bytes; });
    var limit = s.dp.map(function () { return s.limit_bytes / s.unit_bytes; });
    new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 260,
      scales: { x: { time: false, distr: 3, log: 2 } },
      axes: [{ label: "data-parallel degree" }, { label: s.unit + " per GPU", size: 60 }],
      series: [{ label: "DP" }, { label: "this set-up", stroke: "#2f5bd3", width: 2 },
               { label: s.gpu, stroke: "#b42318", dash: [6, 4] }],
    }, [s.dp, ys, limit], el);
    el.dataset.drawn = "1";
  }

  document.addEventListener("DOMContentLoaded", function () {
    var f = form();
    if (!f) return;
    document.getElementById("hf-config-fill").addEventListener("click", function () { onConfig(f); });
    drawChart(document);
    if (window.htmx) window.htmx.onLoad(function () { drawChart(document); });
  });
})();
