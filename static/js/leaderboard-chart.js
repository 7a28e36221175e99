// Top-N chart of a leaderboard tab, drawn with the vendored Chart.js.
// The canvas carries data-url (the chart-data endpoint for the current tab); the
// metric toggle (Both / Score / Pass rate) redraws without a request, the N
// selector fetches again. Readable without colour: score bars are solid, pass
// rate bars hatched, and every bar carries its value as a direct label. The same
// numbers are in the <details> table, which this script keeps in sync.
(function () {
  "use strict";
  var canvas = document.getElementById("board-chart");
  if (!canvas || typeof window.Chart === "undefined") return;

  var INK = "#1f2328", MUTED = "#57606a", GRID = "#d0d7de";
  var SCORE_COLOUR = "#0b5cad", PASS_COLOUR = "#b35900";
  var chart = null, rows = [], metric = "both";

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
        meta.data.forEach(function (bar, j) {
          var raw = ds.data[j];
          if (raw === null || raw === undefined) return;
          var text = ds.podiumKind === "score" ? fmtScore(raw) : fmtPass(raw / 100);
          ctx.fillText(text, bar.x + 4, bar.y);
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
        backgroundColor: SCORE_COLOUR, borderColor: SCORE_COLOUR, borderWidth: 1
      });
    }
    if (metric !== "score") {
      out.push({
        label: "Pass rate (%)", podiumKind: "pass", xAxisID: "xPass",
        data: rows.map(function (r) { return r.pass_rate === null ? null : r.pass_rate * 100; }),
        backgroundColor: hatch(PASS_COLOUR), borderColor: PASS_COLOUR, borderWidth: 1.5
      });
    }
    return out;
  }

  function scales() {
    var maxScore = Math.max(1.5, Math.max.apply(null, rows.map(function (r) { return r.score || 0; })) * 1.15);
    return {
      y: { ticks: { color: INK, autoSkip: false }, grid: { display: false } },
      xScore: {
        display: metric !== "pass_rate", position: "bottom", min: 0, max: Math.ceil(maxScore * 10) / 10,
        title: { display: true, text: "Score (1.00 = matched the paper)", color: MUTED },
        ticks: { color: MUTED, callback: function (v) { return Number(v).toFixed(1); } }, grid: { color: GRID }
      },
      xPass: {
        display: metric !== "score", position: metric === "pass_rate" ? "bottom" : "top", min: 0, max: 115,
        title: { display: true, text: "Pass rate (%)", color: MUTED },
        ticks: { color: MUTED, callback: function (v) { return v <= 100 ? v + "%" : ""; } },
        grid: { display: metric === "pass_rate", color: GRID }
      }
    };
  }

  function draw() {
    var box = canvas.parentElement;
    var perRow = metric === "both" ? 34 : 24;
    box.style.height = Math.max(220, rows.length * perRow + 150) + "px";
    var config = {
      type: "bar",
      data: { labels: rows.map(function (r) { return r.rank + ". " + r.label; }), datasets: datasets() },
      options: {
        indexAxis: "y", responsive: true, maintainAspectRatio: false, animation: false,
        layout: { padding: { right: 48 } },
        plugins: {
          legend: { position: "bottom", labels: { color: INK, boxWidth: 18 } },
          tooltip: {
            callbacks: {
              label: function (item) {
                var ds = item.dataset;
                return ds.label + ": " + (ds.podiumKind === "score" ? fmtScore(item.raw) : fmtPass(item.raw / 100));
              }
            }
          }
        },
        scales: scales()
      },
      plugins: [valueLabels]
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
      var rank = document.createElement("td"); rank.className = "num"; rank.textContent = r.rank;
      var name = document.createElement("th"); name.scope = "row"; name.textContent = r.label;
      var score = document.createElement("td"); score.className = "num"; score.textContent = fmtScore(r.score);
      var pass = document.createElement("td"); pass.className = "num"; pass.textContent = fmtPass(r.pass_rate);
      tr.append(rank, name, score, pass);
      body.appendChild(tr);
    });
    document.querySelectorAll("[data-chart-n]").forEach(function (el) { el.textContent = String(rows.length); });
  }

  function load(n) {
    var url = new URL(canvas.dataset.url, window.location.href);
    url.searchParams.set("n", String(n));
    fetch(url.toString(), { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (data) {
        rows = data.rows;
        canvas.dataset.loadedN = String(n);
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

  document.querySelectorAll("input[name=chart-metric]").forEach(function (input) {
    input.addEventListener("change", function () {
      if (!input.checked) return;
      metric = input.value;
      draw();
      canvas.dataset.metric = metric;
    });
  });
  var select = document.getElementById("chart-n");
  if (select) select.addEventListener("change", function () { load(select.value); });
  load(select ? select.value : 10);
})();
