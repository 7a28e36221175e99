// Copy buttons: <button class="copy-button" data-copy="ELEMENT_ID" hidden>Copy</button> copies
// the text of the element with that id. The buttons are rendered hidden and shown here, so a
// browser without this script never sees a button that does nothing. No inline script (CSP).
(function () {
  "use strict";
  function fallbackCopy(text) {
    // navigator.clipboard needs a secure context; plain-http deployments use the selection.
    var area = document.createElement("textarea");
    area.value = text; area.setAttribute("readonly", ""); area.className = "visually-hidden";
    document.body.appendChild(area); area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
    area.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () { return fallbackCopy(text); });
    }
    return fallbackCopy(text);
  }
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var source = document.getElementById(button.dataset.copy);
    if (!source) return;
    var label = button.textContent;
    button.hidden = false;
    button.addEventListener("click", function () {
      copy(source.textContent.trim()).then(function () {
        button.textContent = "Copied"; button.classList.add("is-copied");
        button.dataset.copied = "1";
      }, function () {
        button.textContent = "Select and copy by hand";
      });
      window.setTimeout(function () { button.textContent = label; button.classList.remove("is-copied"); }, 2500);
    });
  });
})();
