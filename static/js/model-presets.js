// Forms that describe a model (data-presets: the preset slug -> its fields, as JSON): picking a
// preset fills the model fields, and editing a model field switches the picker to "custom"; a
// pasted config.json fills them through the API. Shared by the calculator pages with a model.
(function () {
  "use strict";

  function setField(form, name, value) {
    form.querySelectorAll('[name="' + name + '"]').forEach(function (el) {
      if (el.type === "checkbox") el.checked = !!value;
      else if (el.type !== "hidden") el.value = value === null || value === undefined ? "" : String(value);
    });
  }

  // Fields filled from script fire no input events of their own: ask htmx directly.
  function recalc(form) { form.dispatchEvent(new Event("recalc")); }

  function fillModel(form, fields) {
    Object.keys(fields).forEach(function (name) { setField(form, name, fields[name]); });
  }

  // The words come from the status element's data-* (the page's language, gettext
  // placeholders kept): the API under /api/ answers in English.
  function onConfig(f) {
    var status = f.querySelector("#hf-config-status");
    var words = status.dataset;
    var text = f.querySelector("#hf-config").value;
    var body;
    try { body = JSON.parse(text); } catch (err) { status.textContent = words.invalidJson + " " + err.message; return; }
    fetch("/api/calc/model/from-hf-config", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    }).then(function (r) { return r.json().then(function (j) { return [r.status, j]; }); })
      .then(function (res) {
        if (res[0] !== 200) {
          var detail = res[1].detail;
          status.textContent = words.refused + " " + (typeof detail === "string" ? detail : JSON.stringify(detail));
          return;
        }
        fillModel(f, res[1].model);
        setField(f, "preset", "custom");
        status.textContent = words.filled.replace("%(params)s", res[1].total_params.toLocaleString("en-US"));
        recalc(f);
      });
  }

  function wire(form) {
    var presets = JSON.parse(form.dataset.presets);
    var picker = form.querySelector('select[name="preset"]');
    var modelFields = Object.keys(presets[Object.keys(presets)[0]] || {});
    picker.addEventListener("change", function () {
      if (presets[picker.value]) fillModel(form, presets[picker.value]);
      recalc(form);
    });
    modelFields.forEach(function (name) {
      form.querySelectorAll('[name="' + name + '"]').forEach(function (el) {
        el.addEventListener("input", function () { picker.value = "custom"; });
      });
    });
    var fill = form.querySelector("#hf-config-fill");
    if (fill) fill.addEventListener("click", function () { onConfig(form); });
  }

  window.ShardLabModel = { fillModel: fillModel, setField: setField, recalc: recalc };
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-presets]").forEach(wire);
  });
})();
