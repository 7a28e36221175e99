// Upload page and submission page: send the bundle with XMLHttpRequest (so the
// progress bar can follow the upload), then poll the status JSON every second
// and update received -> verifying -> verdict in place. Everything inserted is
// set as text (textContent), never as HTML.
(function () {
  "use strict";
  var POLL_MS = 1000;

  function csrfToken(form) {
    var input = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // Six significant digits, like the server's `plain` filter: 0.48835533749999993 is 0.488355.
  // (The comparison tolerance is 1e-6, so a real mismatch still shows as two different values.)
  function plain(v) {
    if (v === null || v === undefined) return "null";
    if (typeof v === "number" && isFinite(v) && !Number.isInteger(v)) return String(parseFloat(v.toPrecision(6)));
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  // A diff cell; a value the server withholds (it would reveal a withheld anchor) is named, never shown.
  function cell(withheld, value) {
    var td = document.createElement("td"); td.className = "num";
    if (withheld) {
      var span = document.createElement("span"); span.className = "withheld"; span.textContent = "Withheld";
      td.appendChild(span);
    } else {
      td.textContent = plain(value);
    }
    return td;
  }

  // The server's sentence filter (leaderboard/templatetags/podium.py): a refusal's message, written
  // for the API ("the bundle is larger ..."), as a sentence; its code goes after it, never before.
  function sentence(message) {
    var text = String(message || "").trim();
    if (!text) return "";
    if (/^[a-z]+(?![\w.\/:-])/.test(text)) text = text.charAt(0).toUpperCase() + text.slice(1);
    return /[.!?]$/.test(text) ? text : text + ".";
  }

  function render(panel, data) {
    var order = ["received", "verifying", "done"];
    var current = data.status === "error" ? "verifying" : data.status;
    var reached = order.indexOf(current);
    // Steps are coloured by outcome: a refused bundle's verdict step is red, never a green tick.
    var refused = data.verdict === "mismatch" || data.verdict === "rejected" || data.status === "error";
    panel.querySelectorAll("[data-step]").forEach(function (li) {
      var i = order.indexOf(li.dataset.step);
      var finished = i < reached || (i === reached && data.done);
      var failed = refused && i === reached;
      li.classList.toggle("is-failed", failed);
      li.classList.toggle("is-done", finished && !failed);
      li.classList.toggle("is-current", i === reached && !data.done && !failed);
      if (i === reached) li.setAttribute("aria-current", "step"); else li.removeAttribute("aria-current");
    });
    panel.dataset.status = data.status;
    panel.dataset.verdict = data.verdict || "";
    var status = panel.querySelector("[data-field=status]");
    if (status) status.textContent = data.status_label;
    var verdict = panel.querySelector("[data-field=verdict]");
    if (verdict) {
      verdict.textContent = data.verdict || "";
      verdict.className = data.verdict ? "verdict verdict--" + data.verdict : "";
    }
    // Refusals (mismatch, rejected) and transient errors show their message as an error;
    // a passing verdict's message is shown as a plain note.
    var failed = data.verdict === "mismatch" || data.verdict === "rejected" || data.status === "error";
    var errorBox = panel.querySelector("[data-field=error]");
    if (errorBox) {
      errorBox.hidden = !(failed && data.error_message);
      panel.querySelector("[data-field=error-code]").textContent = data.error_code || "";
      panel.querySelector("[data-field=error-code-line]").hidden = !data.error_code;
      panel.querySelector("[data-field=error-message]").textContent = sentence(data.error_message);
    }
    var note = panel.querySelector("[data-field=note]");
    if (note) {
      note.hidden = failed || !data.error_message;
      note.textContent = failed ? "" : data.error_message || "";
    }
    var runLink = panel.querySelector("[data-field=run-link]");
    if (runLink) {
      runLink.hidden = !data.run_url;
      if (data.run_url) panel.querySelector("[data-field=run-href]").href = data.run_url;
    }
    // The same bytes uploaded again: say plainly that this is the earlier submission.
    var duplicate = panel.querySelector("[data-field=duplicate]");
    if (duplicate) {
      duplicate.hidden = data.created !== false;
      if (data.created === false) {
        duplicate.textContent = "You uploaded this exact file before" + (data.uploaded_at ? " (" + data.uploaded_at + ")" : "") +
          ": nothing new was submitted, and the status below is that earlier submission's.";
      }
    }
    var detail = panel.querySelector("[data-field=detail-href]");
    if (detail && data.detail_url) detail.href = data.detail_url;
    var diff = panel.querySelector("[data-field=diff]");
    if (diff) {
      var list = data.diff || [];
      diff.hidden = list.length === 0;
      var body = panel.querySelector("[data-field=diff-rows]");
      if (list.length && body) {
        body.textContent = "";
        list.forEach(function (item) {
          var tr = document.createElement("tr");
          if (item.status !== "match") tr.className = "row--diff";
          var path = document.createElement("th"); path.scope = "row";
          var code = document.createElement("code"); code.textContent = item.path; path.appendChild(code);
          var claimed = cell(item.withheld, item.claimed);
          var recomputed = cell(item.withheld, item.recomputed);
          var result = document.createElement("td");
          var span = document.createElement("span"); span.className = "result result--" + item.status; span.textContent = item.status;
          result.appendChild(span);
          tr.append(path, claimed, recomputed, result);
          body.appendChild(tr);
        });
      }
    }
  }

  function poll(panel, url) {
    fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (data) {
        render(panel, data);
        if (!data.done) window.setTimeout(function () { poll(panel, url); }, POLL_MS);
      })
      .catch(function () { window.setTimeout(function () { poll(panel, url); }, POLL_MS * 3); });
  }

  // A submission page: keep polling until the verdict is in.
  document.querySelectorAll(".status-panel[data-status-url]").forEach(function (panel) {
    if (panel.dataset.status === "done") return;
    poll(panel, panel.dataset.statusUrl);
  });

  var form = document.querySelector("form[data-upload-form]");
  if (!form) return;
  var input = form.querySelector("input[type=file]");
  var zone = form.querySelector("[data-dropzone]");
  var fileName = form.querySelector("[data-file-name]");
  var progress = form.querySelector("[data-progress]");
  var bar = form.querySelector("[data-progress-bar]");
  var pct = form.querySelector("[data-progress-text]");
  var errorBox = form.querySelector("[data-upload-error]");
  var button = form.querySelector("[data-upload-button]");
  var dropped = null;

  function showFile(file) { fileName.textContent = file ? file.name + " (" + Math.ceil(file.size / 1024) + " KiB)" : ""; }
  // The sentence, then its code (if the server sent one) small after it, as the page itself shows a refusal.
  function showError(message, code) {
    errorBox.textContent = sentence(message);
    if (code) {
      var line = document.createElement("small"), tag = document.createElement("code");
      line.className = "error-code"; tag.textContent = code;
      line.append("Code ", tag);
      errorBox.append(" ", line);
    }
    errorBox.hidden = false;
  }

  input.addEventListener("change", function () { dropped = null; showFile(input.files[0]); });
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.add("is-over"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.remove("is-over"); });
  });
  zone.addEventListener("drop", function (e) {
    if (e.dataTransfer && e.dataTransfer.files.length) { dropped = e.dataTransfer.files[0]; showFile(dropped); }
  });

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    errorBox.hidden = true;
    var file = dropped || input.files[0];
    if (!file) { showError("Choose a bundle file (.age) to upload."); return; }
    var data = new FormData(form);
    data.set("bundle", file, file.name);
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("X-CSRFToken", csrfToken(form));
    progress.hidden = false; button.disabled = true;
    xhr.upload.addEventListener("progress", function (ev) {
      if (!ev.lengthComputable) return;
      var p = Math.round((ev.loaded / ev.total) * 100);
      bar.value = p; bar.textContent = p + "%"; pct.textContent = p + "%";
    });
    xhr.addEventListener("load", function () {
      button.disabled = false;
      var body = null;
      try { body = JSON.parse(xhr.responseText); } catch (err) { body = null; }
      if (xhr.status >= 200 && xhr.status < 300 && body) {
        bar.value = 100; pct.textContent = "100%, uploaded";
        var slot = document.querySelector("[data-status-slot]");
        var panel = document.getElementById("status-template").content.firstElementChild.cloneNode(true);
        slot.textContent = "";
        slot.appendChild(panel);
        render(panel, body);
        if (!body.done) poll(panel, body.status_url);
      } else {
        progress.hidden = true;
        if (body && body.error) showError(body.error.message, body.error.code);
        else showError("The upload failed (HTTP " + xhr.status + "). Try again.");
      }
    });
    xhr.addEventListener("error", function () {
      button.disabled = false; progress.hidden = true;
      showError("The upload failed: the connection was interrupted. Try again.");
    });
    xhr.send(data);
  });
})();
