// A free response (issue #27): the item's clock counts down beside the answer box, the
// browser's speech input (where it has one) types what the learner says, and once the
// answer is set beside the model answer it can no longer be edited.
(function () {
  "use strict";

  function startClock(box) {
    var clock = box.querySelector(".free-clock");
    if (!clock) return;
    var end = Date.now() + Number(box.dataset.minutes) * 60 * 1000;
    clock.hidden = false;
    function tick() {
      if (!document.body.contains(clock)) return;
      var left = Math.round((end - Date.now()) / 1000);
      if (left <= 0) {
        clock.textContent = box.dataset.timeUp || "0:00";
        clock.classList.add("bad");
        return;
      }
      clock.textContent = Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0");
      window.setTimeout(tick, 1000);
    }
    tick();
  }

  function startDictation(box) {
    var Recognition = window.SpeechRecognition || window.webkitSpeechRecognition;
    var button = box.querySelector("button.dictate");
    var text = box.querySelector("textarea");
    if (!Recognition || !button || !text) return;
    button.hidden = false;
    var listening = null;
    button.addEventListener("click", function () {
      if (listening) { listening.stop(); return; }
      var recognition = new Recognition();
      recognition.lang = document.documentElement.lang || "en";
      recognition.continuous = true;
      recognition.interimResults = false;
      recognition.onresult = function (e) {
        for (var i = e.resultIndex; i < e.results.length; i++) {
          if (e.results[i].isFinal) text.value += (text.value && !/\s$/.test(text.value) ? " " : "") + e.results[i][0].transcript;
        }
      };
      recognition.onend = function () { listening = null; button.setAttribute("aria-pressed", "false"); };
      recognition.onerror = recognition.onend;
      recognition.start();
      listening = recognition;
      button.setAttribute("aria-pressed", "true");
    });
  }

  function setUp(root) {
    root.querySelectorAll(".free-answer:not([data-ready])").forEach(function (box) {
      box.dataset.ready = "1";
      startClock(box);
      startDictation(box);
    });
  }

  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
  document.addEventListener("htmx:after:swap", function (e) {
    setUp(document);
    var comparison = document.getElementById("free-comparison");
    var box = document.querySelector(".free-answer");
    if (!comparison || !box) return;
    var text = box.querySelector("textarea");
    if (text) text.readOnly = true;
    var compare = box.querySelector("button.compare");
    if (compare) compare.hidden = true;
    var dictate = box.querySelector("button.dictate");
    if (dictate) dictate.hidden = true;
    comparison.scrollIntoView({ block: "start" });
  });
})();
