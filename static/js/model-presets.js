// Forms that describe a model (data-presets: the preset slug -> its fields, as JSON): picking a
// preset fills the model fields, and editing a model field switches the picker to "custom".
// Shared by the training-memory and inference-memory pages.
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
  }

  window.ShardLabModel = { fillModel: fillModel, setField: setField, recalc: recalc };
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-presets]").forEach(wire);
  });
})();
