// Top-N chart of a leaderboard tab, drawn with the vendored Chart.js.
// The canvas carries data-url (the chart-data endpoint for the current tab) and
// data-initial-metric. The metric toggle picks the agents too (seed 000: "Top-N
// agents by Pass Rate, Score, or Both"): Pass rate fetches the top N by pass rate,
// Score and Both the top N by rank. "Both" draws two side-by-side panels, each with
// its own scale, never two unrelated scales over one set of bars. The mode is kept
// in the address (?metric=) by chart-permalink.js; the server reads it for the first render. Readable without colour: score
// bars are solid, pass rate bars hatched, every bar carries its value as a direct
// label, and a dashed line marks 1.00 ("matched the paper"). The tooltip gives the
// interval and the coverage. The same numbers are in the <details> table, which
// this script keeps in sync.
(function () {
  "use strict";
  var canvas = document.getElementById("board-chart");
  if (!canvas || typeof window.Chart === "undefined") return;

  var INK = "#1f2328", MUTED = "#57606a", GRID = "#d0d7de";
  var SCORE_COLOUR = "#0b5cad", PASS_COLOUR = "#b35900";
  // A phone's row: its height and its bar's thickness, in pixels (the name's line is the rest).
  var ROW_NARROW = 40, ROW_BAR = 14;
  var chart = null, rows = [], metric = canvas.dataset.initialMetric || "both", by = null;
  function byFor(m) { return m === "pass_rate" ? "pass_rate" : "score"; }

  function hatch(colour) {
    var tile = document.createElement("canvas");
    tile.width = 8; tile.height = 8;
    var ctx = tile.getContext("2d");
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, 8, 8);
    ctx.strokeStyle = colour; ctx.lineWidth = 2.5;
    ctx.beginPath(); ctx.moveTo(0, 8); ctx.lineTo(8, 0); ctx.moveTo(-2, 2); ctx.lineTo(2, -2); ctx.moveTo(6, 10); ctx.lineTo(10, 6); ctx.stroke();
    return ctx.createPattern(tile, "repeat");
  }

  function fmtScore(v) { return v === null || v === undefined ? "—" : Number(v).toFixed(2); }
  function fmtPass(v) { return v === null || v === undefined ? "—" : (Math.round(v * 1000) / 10) + "%"; }

  // A paper-coloured patch under a label drawn over the grid or the dashed line.
  function halo(ctx, x, y, w, h) {
    var ink = ctx.fillStyle;
    ctx.fillStyle = "rgba(255, 255, 255, .85)"; ctx.fillRect(x, y, w, h); ctx.fillStyle = ink;
  }

  // Direct labels at the end of each bar, so values never depend on colour or hover.
  var valueLabels = {
    id: "podiumValueLabels",
    afterDatasetsDraw: function (c) {
      var ctx = c.ctx;
      ctx.save();
      ctx.font = "12px system-ui, sans-serif";
      ctx.fillStyle = INK;
      ctx.textBaseline = "middle";
      c.data.datasets.forEach(function (ds, i) {
        var meta = c.getDatasetMeta(i);
        if (meta.hidden) return;
        var axis = c.scales[ds.xAxisID];
        meta.data.forEach(function (bar, j) {
          var raw = ds.data[j];
          if (raw === null || raw === undefined) return;
          var text = ds.podiumKind === "score" ? fmtScore(raw) : fmtPass(raw / 100);
          var width = ctx.measureText(text).width;
          // A score label that would run into the pass-rate panel goes inside its (solid) bar.
          if (metric === "both" && ds.podiumKind === "score" && bar.x + 4 + width > axis.right && bar.x - width - 4 > axis.left) {
            ctx.fillStyle = "#fff"; ctx.fillText(text, bar.x - width - 4, bar.y); ctx.fillStyle = INK;
          } else {
            // On paper, so the dashed 1.00 line and the grid never run through the digits.
            halo(ctx, bar.x + 2, bar.y - 8, width + 4, 16);
            ctx.fillText(text, bar.x + 4, bar.y);
          }
        });
      });
      ctx.restore();
    }
  };

  function datasets() {
    var out = [];
    if (metric !== "pass_rate") {
      out.push({
        label: "Score (ratio to paper)", podiumKind: "score", xAxisID: "xScore",
        data: rows.map(function (r) { return r.score; }),
        backgroundColor: SCORE_COLOUR, borderColor: SCORE_COLOUR, borderWidth: 1, grouped: false,
        barThickness: narrow() ? ROW_BAR : undefined
      });
    }
    if (metric !== "score") {
      out.push({
        label: "Pass rate (%)", podiumKind: "pass", xAxisID: "xPass",
        data: rows.map(function (r) { return r.pass_rate === null ? null : r.pass_rate * 100; }),
        backgroundColor: hatch(PASS_COLOUR), borderColor: PASS_COLOUR, borderWidth: 1.5, grouped: false,
        barThickness: narrow() ? ROW_BAR : undefined
      });
    }
    return out;
  }

  // "Both": the two value axes sit side by side in one stack (Chart.js lays stacked
  // horizontal axes out left to right), so each metric gets its own panel and scale.
  function scales() {
    var maxScore = Math.max(1.5, Math.max.apply(null, rows.map(function (r) { return r.ci_high || r.score || 0; })) * 1.15);
    var both = metric === "both";
    return {
      y: {
        // On a phone the names go above their bars (rowLabels), not beside them: beside, they
        // were cut to 15 characters and left each panel a third of the width.
        ticks: { color: INK, autoSkip: false, display: !narrow() },
        grid: { display: false }
      },
      xScore: {
        display: metric !== "pass_rate", position: "bottom", min: 0, max: Math.ceil(maxScore * 10) / 10,
        stack: both ? "panels" : undefined, stackWeight: 1,
        title: { display: true, text: narrow() && both ? "Score" : "Score (1.00 = matched the paper)", color: INK },
        // In "Both" the score panel's last tick would touch the pass-rate panel's "0%": left unlabelled.
        ticks: {
          color: MUTED, stepSize: narrow() ? 0.5 : undefined,
          callback: function (v) { return both && v >= this.max ? "" : Number(v).toFixed(1); }
        },
        grid: { color: GRID }
      },
      xPass: {
        display: metric !== "score", position: "bottom", min: 0, max: 115,
        stack: both ? "panels" : undefined, stackWeight: 1,
        title: { display: true, text: "Pass rate (%)", color: INK },
        ticks: { color: MUTED, maxRotation: 0, autoSkip: !narrow(), callback: function (v) { return v <= 100 ? v + "%" : ""; } },
        // A phone's narrow panel is marked 0, 50 and 100% (Chart.js skipped all but 0% there).
        afterBuildTicks: function (axis) { if (narrow()) axis.ticks = [0, 50, 100].map(function (v) { return { value: v }; }); },
        grid: { color: GRID }
      }
    };
  }

  // The paper's result: a dashed vertical line at score 1.00 with its meaning written on it.
  var paperLine = {
    id: "podiumPaperLine",
    afterDatasetsDraw: function (c) {
      var axis = c.scales.xScore;
      if (!axis || metric === "pass_rate") return;
      var x = axis.getPixelForValue(1), area = c.chartArea, ctx = c.ctx;
      ctx.save();
      ctx.strokeStyle = INK; ctx.lineWidth = 1.5; ctx.setLineDash([5, 4]);
      ctx.beginPath(); ctx.moveTo(x, area.top - 4); ctx.lineTo(x, area.bottom); ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = INK; ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "bottom";
      ctx.fillText("1.00 matched the paper", x, area.top - 5);
      ctx.restore();
    },
    afterLayout: function (c) {
      // For tests and for people debugging the layout: where each panel sits.
      ["xScore", "xPass"].forEach(function (id) {
        var a = c.scales[id];
        canvas.dataset[id + "Panel"] = a && a.options.display ? Math.round(a.left) + "," + Math.round(a.right) : "";
      });
    }
  };

  function narrow() { return canvas.parentElement.clientWidth < 560; }

  // On a phone each bar's name is written on the line above it, across the chart's whole width
  // (cut with an ellipsis only if it is wider than that).
  var rowLabels = {
    id: "podiumRowLabels",
    afterDatasetsDraw: function (c) {
      if (!narrow()) return;
      var ctx = c.ctx, area = c.chartArea, y = c.scales.y, meta = c.getDatasetMeta(0), written = [];
      ctx.save();
      ctx.font = "600 12px system-ui, sans-serif"; ctx.fillStyle = INK; ctx.textBaseline = "bottom";
      c.data.labels.forEach(function (label, i) {
        var text = String(label), max = area.right - area.left;
        while (text.length > 1 && ctx.measureText(text).width > max) text = text.slice(0, -2) + "\u2026";
        var bar = meta.data[i], top = (bar ? bar.y - bar.height / 2 : y.getPixelForValue(i) - ROW_BAR / 2) - 2;
        halo(ctx, area.left, top - 14, ctx.measureText(text).width + 4, 14);
        ctx.fillText(text, area.left + 2, top);
        written.push(text);
      });
      ctx.restore();
      // For tests, as the panels' places are: the names as written.
      canvas.dataset.rowLabels = JSON.stringify(written);
    }
  };

  function fmtCI(r) {
    return r.ci_low === null || r.ci_low === undefined ? "no interval" : "95% CI " + fmtScore(r.ci_low) + "\u2013" + fmtScore(r.ci_high);
  }

  // A partial run ranks after every complete run (seed 000), so its bar can sit below shorter
  // ones: the mark right after the rank (never cut off on a phone) is the board table's, whose
  // caption says what it means, and the tooltip says it too.
  var PARTIAL = "\u25d0";
  function axisLabel(r) { return r.rank + ". " + (r.complete ? "" : PARTIAL + " ") + r.label; }

  function draw() {
    var box = canvas.parentElement;
    // A phone's rows are taller: each holds its name's line above a thinner bar.
    box.style.height = Math.max(170, rows.length * (narrow() ? ROW_NARROW : 18) + 90) + "px";
    var config = {
      type: "bar",
      data: { labels: rows.map(axisLabel), datasets: datasets() },
      options: {
        indexAxis: "y", responsive: true, maintainAspectRatio: false, animation: false,
        layout: { padding: { right: 48, top: 16 } },
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              label: function (item) {
                var ds = item.dataset, r = rows[item.dataIndex];
                if (ds.podiumKind === "score") return "Score " + fmtScore(item.raw) + " (" + fmtCI(r) + ")";
                return "Pass rate " + fmtPass(item.raw / 100);
              },
              afterLabel: function (item) {
                var r = rows[item.dataIndex];
                var text = "Coverage " + r.covered + "/" + r.required + " tasks";
                return r.complete ? text : text + " (partial run: ranked after complete runs)";
              }
            }
          }
        },
        scales: scales()
      },
      // The dashed line first: the value and name labels are written over it, on paper.
      plugins: [paperLine, valueLabels, rowLabels]
    };
    if (chart) chart.destroy();
    chart = new window.Chart(canvas, config);
  }

  function syncTable() {
    var body = document.querySelector("[data-chart-rows]");
    if (!body) return;
    body.textContent = "";
    rows.forEach(function (r) {
      var tr = document.createElement("tr");
      // The mark goes with the rank, as on the axis; not with the coverage cell, which is the tab's:
      // a run covering every task of a genre tab can still miss others of the release.
      var rank = document.createElement("td"); rank.className = "num"; rank.textContent = r.rank + (r.complete ? "" : " " + PARTIAL);
      var name = document.createElement("th"); name.scope = "row"; name.textContent = r.label;
      var score = document.createElement("td"); score.className = "num"; score.textContent = fmtScore(r.score);
      var ci = document.createElement("td"); ci.className = "num";
      ci.textContent = r.ci_low === null || r.ci_low === undefined ? "\u2014" : fmtScore(r.ci_low) + "\u2013" + fmtScore(r.ci_high);
      var pass = document.createElement("td"); pass.className = "num"; pass.textContent = fmtPass(r.pass_rate);
      var cov = document.createElement("td"); cov.className = "num"; cov.textContent = r.covered + "/" + r.required;
      tr.append(rank, name, score, ci, pass, cov);
      body.appendChild(tr);
    });
    var title = document.querySelector("[data-chart-title]");
    if (title) title.textContent = chartTitle(rows.length);
  }

  // The board template's wording: "Top 0 agents" and "Top 1 agents" read as broken.
  function chartTitle(n) {
    var what = by === "pass_rate" ? "pass rate" : "score";
    if (!n) return "filtered" in canvas.dataset ? "No agents match these filters" : "No agents yet";
    return n === 1 ? "Top agent by " + what : "Top " + n + " agents by " + what;
  }

  function load(n) {
    var url = new URL(canvas.dataset.url, window.location.href);
    url.searchParams.set("n", String(n));
    var wanted = byFor(metric);
    url.searchParams.set("by", wanted);
    fetch(url.toString(), { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (data) {
        rows = data.rows;
        by = wanted;
        canvas.dataset.loadedN = String(n);
        canvas.dataset.by = by;
        if (!rows.length) {
          // An empty chart read as broken: say why there is nothing to draw (the table says it too).
          var box = canvas.parentElement;
          box.textContent = "No runs to chart on this view" + ("filtered" in canvas.dataset ? ": none match these filters." : " yet.");
          box.className = "chart-box chart-box--empty muted";
          box.setAttribute("data-chart-empty", "");
          syncTable();
          return;
        }
        draw();
        syncTable();
        canvas.dataset.metric = metric;
      })
      .catch(function () {
        var box = canvas.parentElement;
        box.textContent = "The chart could not be loaded; the same numbers are in the table below.";
        box.className = "chart-box chart-box--error";
      });
  }

  var select = document.getElementById("chart-n");
  document.querySelectorAll("input[name=chart-metric]").forEach(function (input) {
    input.addEventListener("change", function () {
      if (!input.checked) return;
      metric = input.value;
      document.querySelectorAll("[data-chart-key]").forEach(function (key) { key.hidden = key.dataset.chartKey !== metric; });
      if (byFor(metric) !== by) { load(select ? select.value : 10); return; }
      draw();
      canvas.dataset.metric = metric;
    });
  });
  if (select) select.addEventListener("change", function () { load(select.value); });
  load(select ? select.value : 10);
})();
