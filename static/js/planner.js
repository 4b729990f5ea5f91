// The planner page: the scatter of step time against memory per GPU (uPlot) with the Pareto
// front drawn as a line, and the ranked table sorted by any column. Both work on what the
// server rendered (data-chart, data-value), and again after every htmx swap.
(function () {
  "use strict";

  function drawChart() {
    var el = document.getElementById("planner-chart");
    if (!el || !window.uPlot || el.dataset.drawn) return;
    var d = JSON.parse(el.dataset.chart);
    var chosen = d.memory_gb.map(function (m, i) {
      return d.chosen && m === d.chosen[0] && d.step_s[i] === d.chosen[1] ? d.step_s[i] : null;
    });
    var none = function () { return null; };
    var t = JSON.parse(el.dataset.labels);  // in the reader's language
    el.uplot = new window.uPlot({
      width: Math.max(280, el.clientWidth || 600), height: 300,
      // A log axis: the slowest layouts take many times the best one's step, and on a linear
      // axis they press every near-best layout flat along the bottom.
      scales: { x: { time: false }, y: { distr: 3, log: 10 } },
      axes: [{ label: t.x }, { label: t.y, size: 60 }],
      series: [
        { label: t.memory },
        { label: t.layouts, stroke: "#7a869a", paths: none, points: { show: true, size: 5 } },
        { label: t.front, stroke: "#2f5bd3", width: 2, spanGaps: true, points: { show: true, size: 7 } },
        { label: t.chosen, stroke: "#b42318", paths: none, points: { show: true, size: 12, width: 2 } },
      ],
    }, [d.memory_gb, d.step_s, d.front_s, chosen], el);
    el.dataset.drawn = "1";
    el.dataset.frontPoints = String(d.front_s.filter(function (s) { return s !== null; }).length);
  }

  function cellKey(row, index, numeric) {
    var cell = row.children[index];
    var raw = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
    return numeric ? parseFloat(raw) : raw;
  }

  function sortBy(table, th) {
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.dataset.sort === "num";
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = cellKey(a, index, numeric), y = cellKey(b, index, numeric);
      var order = x < y ? -1 : x > y ? 1 : 0;
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }

  function wireTables() {
    document.querySelectorAll("table.sortable:not([data-wired])").forEach(function (table) {
      table.dataset.wired = "1";
      table.querySelectorAll("th[data-sort]").forEach(function (th) {
        th.tabIndex = 0;
        th.addEventListener("click", function () { sortBy(table, th); });
        th.addEventListener("keydown", function (e) { if (e.key === "Enter") sortBy(table, th); });
      });
    });
  }

  function refresh() { drawChart(); wireTables(); }

  document.addEventListener("DOMContentLoaded", function () {
    if (!document.getElementById("planner-form")) return;
    refresh();
    if (window.htmx) window.htmx.onLoad(refresh);
  });
})();
