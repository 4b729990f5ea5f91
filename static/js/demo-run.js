// What a demo page does once Run is pressed. The run's panel lands in #demo-output: beside the
// form on a wide screen, under it on a phone, at or below the fold. So when the panel arrives
// (or the form's errors), it is scrolled into sight unless it already starts in the window's
// upper half, as it does beside the form; and each status the run reports is said to
// a screen reader through #demo-announce, a role=status line that is in the page from the
// start (a live region that arrives with the panel, or is replaced by each out-of-band swap,
// is not reliably read).
(function () {
  "use strict";

  function text(el) {
    return el ? el.textContent.replace(/\s+/g, " ").trim() : "";
  }

  // Only the form's own swap: the stream's out-of-band swaps fire on the stream's element.
  document.addEventListener("htmx:after:swap", function (e) {
    if (!e.target || e.target.id !== "demo-form") return;
    var output = document.getElementById("demo-output");
    var first = output && output.firstElementChild;
    if (!first) return;
    var top = first.getBoundingClientRect().top;
    if (top >= 0 && top <= window.innerHeight / 2) return;
    var still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    // The form's errors only into sight, with the fields they name still above them.
    var block = first.classList.contains("errors") ? "nearest" : "start";
    first.scrollIntoView({ block: block, behavior: still ? "auto" : "smooth" });
  });

  // Says the status each time it changes, with the verdict's tally once the run has one (the
  // verdict lands just before "Finished.").
  function announcer(output, live) {
    var said = "";
    return function () {
      var status = text(output.querySelector("#demo-status"));
      if (!status || status === said) return;
      said = status;
      var tally = text(output.querySelector(".verdict-tally"));
      live.textContent = tally ? status + " " + tally : status;
    };
  }

  document.addEventListener("DOMContentLoaded", function () {
    var output = document.getElementById("demo-output");
    var live = document.getElementById("demo-announce");
    if (!output || !live || !window.MutationObserver) return;
    new window.MutationObserver(announcer(output, live))
      .observe(output, { childList: true, subtree: true, characterData: true });
  });
})();
