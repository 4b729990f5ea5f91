// Renders what the server marked up: KaTeX math (.math.inline / .math.block, from the
// cards' dollarmath and the calculators' formulas) and mermaid diagrams (pre.mermaid, on
// pages that load mermaid). Runs on page load and again on every htmx swap.
(function () {
  "use strict";

  function renderMath(root) {
    if (!window.katex) return;
    root.querySelectorAll(".math.inline, .math.block").forEach(function (el) {
      if (el.dataset.rendered) return;
      window.katex.render(el.textContent, el, {
        displayMode: el.classList.contains("block"),
        throwOnError: false,
      });
      el.dataset.rendered = "1";
    });
  }

  function renderDiagrams(root) {
    if (!window.mermaid) return;
    var diagrams = root.querySelectorAll("pre.mermaid:not([data-processed])");
    if (diagrams.length) window.mermaid.run({ nodes: diagrams });
  }

  function renderRich(root) {
    renderMath(root);
    renderDiagrams(root);
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (window.mermaid) {
      window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
    }
    renderRich(document.body);
    if (window.htmx) {
      window.htmx.onLoad(function (el) { renderRich(el.parentElement || el); });
    }
  });
})();
