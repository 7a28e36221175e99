// The top-N chart's state in the URL (issue 13: every view is a shareable URL).
// ?metric=both|score|pass_rate and ?n=5|10|20|50 are applied on load through the chart's own
// controls (their change events redraw it), and every change rewrites the address bar and the
// board's in-page links (tabs, sort headers, pages, search) so the chart mode travels with them.
// Defaults are left out of URLs. Runs before leaderboard-chart.js (both deferred, in order) so
// the chart's first fetch already uses ?n= (no race between two fetches); the metric, which the
// chart holds in a variable, is applied once its listeners exist (DOMContentLoaded).
(function () {
  "use strict";
  var DEFAULTS = { metric: "both", n: "10" };
  var select = document.getElementById("chart-n");
  var radios = document.querySelectorAll("input[name=chart-metric]");
  if (!select || !radios.length) return;

  function state() {
    var checked = document.querySelector("input[name=chart-metric]:checked");
    return { metric: checked ? checked.value : DEFAULTS.metric, n: select.value };
  }

  function withState(href, s) {
    var url = new URL(href, window.location.href);
    Object.keys(DEFAULTS).forEach(function (key) {
      if (s[key] === DEFAULTS[key]) url.searchParams.delete(key); else url.searchParams.set(key, s[key]);
    });
    return url;
  }

  function publish() {
    var s = state();
    var here = withState(window.location.href, s);
    window.history.replaceState(null, "", here.pathname + here.search + here.hash);
    document.querySelectorAll("a[href^='?']").forEach(function (a) {
      var url = withState(a.getAttribute("href"), s);
      a.setAttribute("href", url.search || "?");
    });
    document.querySelectorAll("form.board-search, form.filter-form").forEach(function (form) {
      Object.keys(DEFAULTS).forEach(function (key) {
        var input = form.querySelector("input[type=hidden][name=" + key + "]");
        if (s[key] === DEFAULTS[key]) { if (input) input.remove(); return; }
        if (!input) { input = document.createElement("input"); input.type = "hidden"; input.name = key; form.appendChild(input); }
        input.value = s[key];
      });
    });
  }

  var params = new URLSearchParams(window.location.search);
  var n = params.get("n");
  if (n && Array.prototype.some.call(select.options, function (o) { return o.value === n; })) select.value = n;
  var metric = params.get("metric");
  var wanted = null;
  radios.forEach(function (radio) { if (metric && radio.value === metric) wanted = radio; });

  document.addEventListener("DOMContentLoaded", function () {
    if (wanted && !wanted.checked) {
      wanted.checked = true;
      wanted.dispatchEvent(new Event("change", { bubbles: true }));
    }
    radios.forEach(function (radio) { radio.addEventListener("change", publish); });
    select.addEventListener("change", publish);
    publish();
  });
})();
