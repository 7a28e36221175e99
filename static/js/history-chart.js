// History charts, drawn with the vendored Chart.js from the JSON at the canvas's data-url.
// data-kind="release": the Overall leader's score as a step line over time (x = time in ms,
// labelled as dates), today's top-N as points, and a dashed reference at 1.00 (matched the
// paper). data-kind="race": one line per top agent version, its Overall after each released
// race. Every number is also in the page's tables, so the chart adds no information of its own.
(function () {
  "use strict";
  var canvas = document.getElementById("history-chart");
  if (!canvas || typeof window.Chart === "undefined") return;

  var INK = "#1f2328", GRID = "#d0d7de";
  var PALETTE = ["#0b5cad", "#b35900", "#1a7f37", "#8250df", "#cf222e", "#57606a", "#116329", "#953800"];
  var DASHES = [[], [6, 3], [2, 2], [8, 3, 2, 3], [1, 3]];

  function day(ms) { return new Date(ms).toISOString().slice(0, 10); }
  function clock(ms) { return new Date(ms).toISOString().slice(11, 16); }

  // The time axis. Left to itself Chart.js spread a history of a few minutes (every run verified
  // the same day) over the whole width with every tick labelled the same date, and a single point
  // over a zero-width range. So: at least an hour around the points, a round step (minutes to
  // months) giving at most six ticks, the range widened to whole steps, and the ticks labelled
  // with what tells them apart (the time within one day, the date beyond). UTC, as the tables.
  var MINUTE = 60000, HOUR = 60 * MINUTE, DAY = 24 * HOUR;
  var STEPS = [MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
    DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 60 * DAY, 90 * DAY, 180 * DAY, 365 * DAY];
  function timeAxis(xs) {
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
    if (hi - lo < HOUR) { var mid = (lo + hi) / 2; lo = mid - HOUR / 2; hi = mid + HOUR / 2; }
    var step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) { if ((hi - lo) / STEPS[i] <= 6) { step = STEPS[i]; break; } }
    lo = Math.floor(lo / step) * step; hi = Math.ceil(hi / step) * step;
    var oneDay = day(lo) === day(hi - 1);
    return {
      min: lo, max: hi, step: step,
      title: oneDay && step < DAY ? "Verified on " + day(lo) + " (UTC)" : "Verified (UTC)",
      label: function (v) { return step >= DAY ? day(v) : oneDay ? clock(v) : day(v).slice(5) + " " + clock(v); }
    };
  }
  function fmt(v, digits) { return v === null || v === undefined ? "—" : Number(v).toFixed(digits); }

  function releaseChart(data) {
    var leader = data.leader.map(function (p) { return { x: Date.parse(p.at), y: p.score, label: p.label }; });
    if (leader.length) {
      // Carry the current leader to now so the last step has a length.
      var last = leader[leader.length - 1];
      leader.push({ x: Math.max(Date.now(), last.x), y: last.y, label: last.label });
    }
    var top = data.top.map(function (p) { return { x: Date.parse(p.at), y: p.score, label: "#" + p.rank + " " + p.label }; });
    var xs = leader.concat(top).map(function (p) { return p.x; });
    var axis = xs.length ? timeAxis(xs) : null;
    var reference = axis ? [{ x: axis.min, y: 1 }, { x: axis.max, y: 1 }] : [];
    return {
      type: "line",
      data: {
        datasets: [
          { label: "Leader's score", data: leader, stepped: "before", borderColor: PALETTE[0], backgroundColor: PALETTE[0], pointRadius: 3, borderWidth: 2 },
          { label: "Today's top agents (when verified)", data: top, showLine: false, borderColor: PALETTE[1], backgroundColor: PALETTE[1], pointRadius: 5, pointStyle: "rectRot" },
          { label: "1.00 = matched the paper", data: reference, borderColor: INK, borderDash: [4, 4], borderWidth: 1, pointRadius: 0 }
        ]
      },
      options: {
        parsing: false,
        scales: {
          x: axis ? {
            type: "linear", min: axis.min, max: axis.max,
            title: { display: true, text: axis.title, color: INK },
            ticks: { color: INK, stepSize: axis.step, callback: function (v) { return axis.label(v); } }, grid: { color: GRID }
          } : { type: "linear", ticks: { display: false }, grid: { color: GRID } },
          y: { title: { display: true, text: "Score (ratio to paper)", color: INK }, ticks: { color: INK }, grid: { color: GRID }, suggestedMin: 0 }
        },
        plugins: {
          tooltip: { callbacks: {
            title: function (items) { return items.length ? day(items[0].parsed.x) + " " + clock(items[0].parsed.x) + " UTC" : ""; },
            label: function (item) { return (item.raw.label || item.dataset.label) + ": " + fmt(item.parsed.y, 2); }
          } }
        }
      }
    };
  }

  function raceChart(data) {
    var labels = data.races.map(function (r) { return "Race " + r.number; });
    return {
      type: "line",
      data: {
        labels: labels,
        datasets: data.series.map(function (s, i) {
          var colour = PALETTE[i % PALETTE.length];
          return { label: s.label, data: s.overall, borderColor: colour, backgroundColor: colour, borderDash: DASHES[i % DASHES.length], spanGaps: false, pointRadius: 4, borderWidth: 2 };
        })
      },
      options: {
        scales: {
          x: { ticks: { color: INK }, grid: { color: GRID } },
          y: { title: { display: true, text: "Overall (mean vs Field)", color: INK }, ticks: { color: INK }, grid: { color: GRID } }
        },
        plugins: {
          tooltip: { callbacks: { label: function (item) { return item.dataset.label + ": " + fmt(item.parsed.y, 3); } } }
        }
      }
    };
  }

  fetch(canvas.dataset.url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
    .then(function (response) { if (!response.ok) throw new Error(response.status); return response.json(); })
    .then(function (data) {
      var config = canvas.dataset.kind === "race" ? raceChart(data) : releaseChart(data);
      config.options.responsive = true;
      config.options.maintainAspectRatio = false;
      config.options.animation = false;
      config.options.plugins.legend = { labels: { color: INK, usePointStyle: true } };
      new window.Chart(canvas, config);
      canvas.dataset.drawn = String(config.data.datasets.length);  // for tests: the chart is drawn
    })
    .catch(function () { canvas.setAttribute("aria-label", "The chart could not be loaded; the tables below hold the same numbers."); });
})();
