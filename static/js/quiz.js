// Quiz pages: opening a hint marks the answer as hinted (FSRS then rates a right answer Hard),
// and a mock interview's clock counts down, reloading the page when time is up.
(function () {
  "use strict";

  document.addEventListener("toggle", function (e) {
    var hint = e.target;
    if (!hint.classList || !hint.classList.contains("hint") || !hint.open) return;
    var form = hint.closest("form");
    var flag = form && form.querySelector(".hinted-flag");
    if (flag) flag.value = "1";
  }, true);

  function startClock(el) {
    var end = Date.now() + Number(el.dataset.remainingS) * 1000;
    function tick() {
      var left = Math.max(0, Math.round((end - Date.now()) / 1000));
      el.textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
      if (left === 0) {
        window.location.reload();
        return;
      }
      window.setTimeout(tick, 1000);
    }
    tick();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var clock = document.getElementById("mock-clock");
    if (clock) startClock(clock);
  });
})();
