// Forms marked data-autosubmit submit themselves when a control changes; their
// Apply button stays for people without JavaScript and is hidden otherwise.
(function () {
  "use strict";
  document.querySelectorAll("form[data-autosubmit]").forEach(function (form) {
    var button = form.querySelector("[data-autosubmit-button]");
    if (button) button.hidden = true;
    form.addEventListener("change", function () { form.submit(); });
  });
})();
