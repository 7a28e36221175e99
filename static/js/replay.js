// Replay of one scorecard episode (templates/scorecards/episode.html).
// Reads the recorded moves (and, when the operator revealed the hidden set, the
// level's layout) from the section's data-replay-json attribute, and steps through them: the
// same rules as scoring/sokoban/engine.py (one crate pushed one cell, never two,
// never into a wall). Without a layout it steps through the move list only.
(function () {
  "use strict";
  var root = document.querySelector("[data-replay]");
  if (!root || !root.dataset.replayJson) return;
  var data = JSON.parse(root.dataset.replayJson);
  var layout = data.layout, moves = data.moves || [];
  var OFFSETS = { up: [-1, 0], down: [1, 0], left: [0, -1], right: [0, 1] };
  var SVG = "http://www.w3.org/2000/svg";
  var CELL = 32;

  // frames[i] = the state after the first i recorded entries (frame 0: the level's start).
  var frames = [];
  function startState() {
    return layout ? { player: layout.player, crates: layout.crates.slice() } : null;
  }
  function step(state, action) {
    var off = OFFSETS[action];
    if (!state || !off) return state;
    var w = layout.width, h = layout.height;
    function next(cell) {
      var r = Math.floor(cell / w) + off[0], c = (cell % w) + off[1];
      return r < 0 || r >= h || c < 0 || c >= w ? -1 : r * w + c;
    }
    var walls = layout.walls;
    var target = next(state.player);
    if (target < 0 || walls.indexOf(target) >= 0) return state;
    var at = state.crates.indexOf(target);
    if (at < 0) return { player: target, crates: state.crates };
    var beyond = next(target);
    if (beyond < 0 || walls.indexOf(beyond) >= 0 || state.crates.indexOf(beyond) >= 0) return state;
    var crates = state.crates.slice();
    crates[at] = beyond;
    return { player: target, crates: crates };
  }
  var state = startState();
  frames.push(state);
  moves.forEach(function (move) {
    state = move.result === "reset" ? startState() : step(state, move.action);
    frames.push(state);
  });

  var board = root.querySelector("[data-replay-board]");
  function el(name, attrs) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    return node;
  }
  function draw(frame) {
    if (!board || !layout) return;
    var w = layout.width, h = layout.height;
    board.setAttribute("viewBox", "0 0 " + w * CELL + " " + h * CELL);
    while (board.firstChild) board.removeChild(board.firstChild);
    for (var cell = 0; cell < w * h; cell++) {
      var x = (cell % w) * CELL, y = Math.floor(cell / w) * CELL;
      var wall = layout.walls.indexOf(cell) >= 0;
      board.appendChild(el("rect", { x: x, y: y, width: CELL, height: CELL, "class": wall ? "sk-wall" : "sk-floor" }));
      if (layout.goals.indexOf(cell) >= 0) {
        board.appendChild(el("circle", { cx: x + CELL / 2, cy: y + CELL / 2, r: CELL / 6, "class": "sk-goal" }));
      }
    }
    frame.crates.forEach(function (crate) {
      var x = (crate % w) * CELL, y = Math.floor(crate / w) * CELL;
      var onGoal = layout.goals.indexOf(crate) >= 0;
      board.appendChild(el("rect", { x: x + 4, y: y + 4, width: CELL - 8, height: CELL - 8, rx: 3, "class": onGoal ? "sk-crate sk-crate--home" : "sk-crate" }));
    });
    var px = (frame.player % w) * CELL, py = Math.floor(frame.player / w) * CELL;
    board.appendChild(el("circle", { cx: px + CELL / 2, cy: py + CELL / 2, r: CELL / 2.8, "class": "sk-player" }));
  }

  var list = root.querySelector("[data-replay-moves]");
  var items = moves.map(function (move) {
    var li = document.createElement("li");
    var text = move.result === "reset" ? "reset (level back to its start)" :
      "step " + move.step + ": " + (move.action ? move.action + " — " + move.result : "action not shown");
    if (move.solved) text += " · solved";
    if (move.deadlocked) { text += " · DEADLOCK"; li.className = "is-deadlock"; }
    // When the server received it (UTC, to the millisecond): the gaps are the agent's and the network's.
    if (move.at) text += " · " + move.at.slice(11, 23) + " UTC";
    li.textContent = text;
    list.appendChild(li);
    return li;
  });

  var status = root.querySelector("[data-replay-status]");
  var playButton = root.querySelector("[data-replay-play]");
  var position = 0, timer = null;
  function show(index) {
    position = Math.max(0, Math.min(moves.length, index));
    if (layout) draw(frames[position]);
    items.forEach(function (li, i) { li.classList.toggle("is-current", i === position - 1); });
    var last = position > 0 ? moves[position - 1] : null;
    var steps = last ? last.step : 0;
    var note = "";
    if (last && last.deadlocked) note = " — deadlocked here: a crate is wedged in a corner";
    else if (last && last.solved) note = " — solved";
    else if (last && last.result === "reset") note = " — the level set to its start";
    else if (position === moves.length && moves.length) note = " — end of the recorded moves";
    status.textContent = "Step " + steps + " (entry " + position + " of " + moves.length + ")" + note;
    root.setAttribute("data-position", String(position));
    if (position >= moves.length) pause();
  }
  function pause() {
    if (timer) window.clearInterval(timer);
    timer = null;
    playButton.textContent = "▶ Play";
    playButton.setAttribute("aria-pressed", "false");
  }
  function play() {
    if (position >= moves.length) show(0);
    playButton.textContent = "Pause"; // no pause glyph in every font (an empty box in Debian's Chromium)
    playButton.setAttribute("aria-pressed", "true");
    timer = window.setInterval(function () { show(position + 1); }, 250);
  }
  playButton.addEventListener("click", function () { if (timer) pause(); else play(); });
  root.querySelector("[data-replay-next]").addEventListener("click", function () { pause(); show(position + 1); });
  root.querySelector("[data-replay-back]").addEventListener("click", function () { pause(); show(position - 1); });
  root.querySelector("[data-replay-first]").addEventListener("click", function () { pause(); show(0); });
  root.querySelector("[data-replay-last]").addEventListener("click", function () { pause(); show(moves.length); });
  show(0);
})();
