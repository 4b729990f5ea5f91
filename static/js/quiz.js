// Quiz pages: opening a hint marks the answer as hinted (FSRS then rates a right answer Hard),
// a mock interview's clock counts down, reloading the page when time is up, times are shown
// in the reader's time zone, and the keyboard answers as Anki users expect (below).
(function () {
  "use strict";

  // <time data-local> (templates/quiz/_macros.html local_time) holds an instant and says it
  // in UTC; here it is said in the browser's time zone, in the page's language, 24-hour.
  var LOCAL_FORMATS = {
    date: { year: "numeric", month: "short", day: "numeric" },
    time: { hour: "2-digit", minute: "2-digit", hourCycle: "h23" },
    datetime: { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hourCycle: "h23" },
  };

  function localTimes(root) {
    var lang = document.documentElement.lang || undefined;
    root.querySelectorAll("time[data-local]").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      var format = LOCAL_FORMATS[el.dataset.local];
      if (!format || isNaN(when.getTime())) return;
      el.title = el.textContent;  // the UTC time stays at hand
      el.textContent = new Intl.DateTimeFormat(lang, format).format(when);
      el.removeAttribute("data-local");
    });
  }

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
    localTimes(document);
    var clock = document.getElementById("mock-clock");
    if (clock) startClock(clock);
    // The answer box takes the keys, without scrolling the question's start out of sight
    // (autofocus would, on a phone).
    var box = document.querySelector("#question [data-autofocus]");
    if (box) box.focus({ preventScroll: true });
  });

  // Keyboard: 1-9 picks the option with that number (ticks or unticks one of several), Enter
  // submits; Space reveals a flashcard's back, then 1-4 rates it Again, Hard, Good or Easy;
  // once the result shows, Enter or Space goes to the next question. Bound once on the
  // document, so it works on whatever htmx has swapped in. While the focus is in a text box
  // the keys are the box's (Enter there submits the form, as it always does).
  var TYPING = /^(text|number|search|email|password|tel|url|date|time)$/;

  function isTyping(el) {
    if (!el || !el.tagName) return false;
    if (el.isContentEditable) return true;
    var tag = el.tagName.toLowerCase();
    if (tag === "textarea" || tag === "select") return true;
    return tag === "input" && TYPING.test(el.type || "text");
  }

  // A control that acts on Enter or Space by itself: leave those keys to it.
  function activatesItself(el) {
    if (!el || !el.closest) return false;
    return Boolean(el.closest("a[href], button, summary, input[type=submit]"));
  }

  function answerForm() {
    var form = document.querySelector("#question form.answer-form");
    return form && !form.inert ? form : null;
  }

  function nextLink() {
    return document.querySelector("#quiz-result #next-question");
  }

  function submit(form) {
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
  }

  function pickOption(form, number) {
    var inputs = form.querySelectorAll(".options input[type=radio], .options input[type=checkbox]");
    var input = inputs[number - 1];
    if (!input || input.disabled) return false;
    input.checked = input.type === "checkbox" ? !input.checked : true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }

  function rate(form, number) {
    var reveal = form.querySelector("details.reveal");
    if (!reveal || !reveal.open) return false;
    var button = form.querySelector("button[name=rating][value='" + number + "']");
    if (!button || button.disabled) return false;
    button.click();
    return true;
  }

  document.addEventListener("keydown", function (e) {
    if (e.defaultPrevented || e.isComposing || e.repeat || e.ctrlKey || e.metaKey || e.altKey) return;
    var target = e.target;
    var space = e.key === " " || e.key === "Spacebar";

    var next = nextLink();
    if (next) {
      if ((e.key === "Enter" || space) && (target === next || !activatesItself(target))) {
        e.preventDefault();
        window.location.assign(next.href);
      }
      return;
    }

    var form = answerForm();
    if (!form) return;
    if (form.classList.contains("htmx-request")) {
      if (e.key === "Enter") e.preventDefault(); // the answer is on its way: not twice
      return;
    }
    if (/^[1-9]$/.test(e.key)) {
      if (isTyping(target)) return;
      var number = Number(e.key);
      if (form.querySelector("details.reveal") ? rate(form, number) : pickOption(form, number)) {
        e.preventDefault();
      }
    } else if (space) {
      var reveal = form.querySelector("details.reveal");
      if (!reveal || reveal.open || isTyping(target) || activatesItself(target)) return;
      e.preventDefault();
      reveal.open = true;
    } else if (e.key === "Enter") {
      // In a text box, on a button or a link, Enter already does what it should.
      if (isTyping(target) || activatesItself(target)) return;
      if (form.querySelector("details.reveal")) return; // a flashcard is rated, not submitted
      e.preventDefault();
      submit(form);
    }
  });

  // Once an answer's result is in, the answer form is done with: it cannot be sent twice, the
  // result scrolls into sight (it lands below the question, often below the fold), the focus
  // moves to the next question and a screen reader is told the verdict.
  function showResult(result) {
    var verdict = result.querySelector(".verdict") || result;
    var box = verdict.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) {
      var still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
      result.scrollIntoView({ block: "start", behavior: still ? "auto" : "smooth" });
    }
  }

  function announce(text) {
    var status = document.getElementById("quiz-status");
    if (!status) return;
    status.textContent = "";
    // After the focus has moved, so that reading the focused link does not cut the verdict off.
    window.setTimeout(function () { status.textContent = text; }, 150);
  }

  document.addEventListener("htmx:after:swap", function () {
    var results = document.getElementById("quiz-result");
    if (results) localTimes(results);
    var next = nextLink();
    if (!next) {
      var error = results && results.querySelector(".errors");
      if (error) error.scrollIntoView({ block: "nearest" });
      return;
    }
    var result = document.getElementById("result");
    if (!result || result.dataset.shown) return;  // once, however many swaps an answer makes
    result.dataset.shown = "1";
    var form = document.querySelector("#question form.answer-form");
    if (form) form.inert = true;
    next.focus({ preventScroll: true });
    showResult(result);
    var verdict = result.querySelector(".verdict");
    if (verdict) announce(verdict.textContent.replace(/\s+/g, " ").trim());
  });
})();
