// Cost-versus-score chart (HAL's headline view), drawn with the vendored Chart.js.
// The canvas carries data-url (the cost-chart endpoint for the board's tab and filters).
// Points: ranked runs with a cost (recorded: circles, declared: crosses); the line joins
// the Pareto frontier; diamonds are reference baselines (not ranked). Readable without
// colour: the marker shape carries the basis, and the <details> table repeats every number.
(function () {
  "use strict";
  var canvas = document.getElementById("cost-chart");
  if (!canvas || typeof window.Chart === "undefined") return;

  var INK = "#1f2328", MUTED = "#57606a", GRID = "#d0d7de";
  var POINT = "#0b5cad", FRONTIER = "#b35900", BASELINE = "#6639ba";

  function usd(v) { return v === null || v === undefined ? "—" : "$" + (v >= 0.01 || v === 0 ? v.toFixed(2) : v.toFixed(4)); }
  function fmtScore(v) { return v === null || v === undefined ? "—" : Number(v).toFixed(2); }
  // Label only 1, 2 and 5 of each decade: a log axis otherwise crowds its ticks.
  function logTick(v) {
    var m = Math.round(v / Math.pow(10, Math.floor(Math.log10(v))) * 1000) / 1000;
    return m === 1 || m === 2 || m === 5 ? usd(v) : "";
  }
  function xy(p) { return { x: Math.max(p.cost_usd, 0.0001), y: p.score, p: p }; }

  function syncTable(points, baselines) {
    var body = document.querySelector("[data-cost-rows]");
    if (!body) return;
    body.textContent = "";
    if (!points.length && !baselines.length) {
      var tr = document.createElement("tr"); var td = document.createElement("td");
      td.colSpan = 5; td.textContent = "No ranked run on this view has a cost."; tr.appendChild(td); body.appendChild(tr);
      return;
    }
    points.concat(baselines).forEach(function (p) {
      var tr = document.createElement("tr");
      var cells = [p.rank === undefined ? "baseline" : String(p.rank), p.label, usd(p.cost_usd) + " " + p.cost_basis, fmtScore(p.score), p.frontier ? "yes" : ""];
      cells.forEach(function (text, i) {
        var cell = document.createElement(i === 1 ? "th" : "td");
        if (i === 1) cell.scope = "row";
        if (i !== 1) cell.className = "num";
        cell.textContent = text;
        tr.appendChild(cell);
      });
      body.appendChild(tr);
    });
  }

  function draw(data) {
    var points = data.points || [], baselines = data.baselines || [];
    var recorded = points.filter(function (p) { return p.cost_basis === "recorded"; }).map(xy);
    var declared = points.filter(function (p) { return p.cost_basis !== "recorded"; }).map(xy);
    var frontier = points.filter(function (p) { return p.frontier; }).map(xy);
    var datasets = [
      { type: "line", label: "Pareto frontier", data: frontier, borderColor: FRONTIER, backgroundColor: FRONTIER,
        borderWidth: 2, pointRadius: 0, stepped: "before", order: 3 },
      { label: "Recorded cost", data: recorded, borderColor: POINT, backgroundColor: "rgba(11,92,173,0.15)",
        pointStyle: "circle", pointRadius: 5, borderWidth: 1.5, order: 1 },
      { label: "Declared cost", data: declared, borderColor: POINT, backgroundColor: POINT,
        pointStyle: "crossRot", pointRadius: 6, borderWidth: 2, order: 1 },
      { label: "Baseline (not ranked)", data: baselines.map(xy), borderColor: BASELINE, backgroundColor: BASELINE,
        pointStyle: "rectRot", pointRadius: 6, borderWidth: 1.5, order: 2 }
    ].filter(function (ds) { return ds.data.length || ds.label === "Pareto frontier"; });
    new window.Chart(canvas, {
      type: "scatter",
      data: { datasets: datasets },
      options: {
        responsive: true, maintainAspectRatio: false, animation: false,
        plugins: {
          legend: { position: "bottom", labels: { color: INK, usePointStyle: true } },
          tooltip: {
            callbacks: {
              label: function (item) {
                var p = item.raw.p;
                return p.label + ": score " + fmtScore(p.score) + ", " + usd(p.cost_usd) + " (" + p.cost_basis + ")" +
                  (p.frontier ? ", on the frontier" : "");
              }
            }
          }
        },
        scales: {
          x: { type: "logarithmic", title: { display: true, text: "Cost per run (USD, log scale)", color: MUTED },
               ticks: { color: MUTED, callback: logTick },
               grid: { color: GRID } },
          y: { min: 0, title: { display: true, text: "Score (1.00 = matched the paper)", color: MUTED },
               ticks: { color: MUTED, callback: function (v) { return Number(v).toFixed(1); } }, grid: { color: GRID } }
        }
      }
    });
    syncTable(points, baselines);
    canvas.dataset.points = String(points.length);
    canvas.dataset.loaded = "1";
  }

  fetch(new URL(canvas.dataset.url, window.location.href).toString(), { headers: { Accept: "application/json" }, credentials: "same-origin" })
    .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
    .then(function (data) {
      if (!(data.points || []).length && !(data.baselines || []).length) {
        var box = canvas.parentElement;
        box.textContent = "No ranked run on this view has a cost yet (no recorded tokens with a price, and none declared).";
        box.className = "chart-box chart-box--empty muted";
        box.setAttribute("data-chart-empty", "");
        // The key describes points and the table repeats them: with none, both only add noise.
        var card = box.closest(".cost-card");
        if (card) card.querySelectorAll(".chart-key, .chart-table").forEach(function (el) { el.hidden = true; });
        syncTable([], []);
        return;
      }
      draw(data);
    })
    .catch(function () {
      var box = canvas.parentElement;
      box.textContent = "The cost chart could not be loaded; the data is linked in the table below.";
      box.className = "chart-box chart-box--error";
    });
})();
