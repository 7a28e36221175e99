"""The Sokoban rules Podium serves (seed 001): XSB levels, moves, solved, corner deadlock.

Pure and standard-library only, like the rest of :mod:`scoring`: the play API,
the manifest sync, the solver, the generator and the browser replay all apply
these same rules, so a recorded episode replays to the same result anywhere.

Cells are numbered ``row * width + col`` on the level's rectangle (ragged XSB
rows are padded with floor). A :class:`State` is the player's cell and the
sorted tuple of crate cells; it is hashable, so the solver can keep a visited set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

__all__ = [
    "ACTIONS",
    "MAX_SIDE",
    "Level",
    "LevelError",
    "MoveResult",
    "State",
    "apply",
    "is_dead_corner",
    "is_deadlocked",
    "is_solved",
    "parse_xsb",
    "render_xsb",
]

# The four moves of the play API and their (row, col) offsets.
ACTIONS: dict[str, tuple[int, int]] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
# Bounds on a level: a hidden level is served on every reset, and the solver's
# state space grows with the cell count; 50 x 50 is far beyond any level we ship.
MAX_SIDE = 50

WALL, PLAYER, PLAYER_ON_GOAL, CRATE, CRATE_ON_GOAL, GOAL, FLOOR = "#", "@", "+", "$", "*", ".", " "
# XSB also writes floor as "-" or "_" (so a line's trailing floor survives editors).
_FLOOR_ALIASES = {"-", "_"}
_KNOWN = {WALL, PLAYER, PLAYER_ON_GOAL, CRATE, CRATE_ON_GOAL, GOAL, FLOOR} | _FLOOR_ALIASES


class LevelError(ValueError):
    """A level text that is not a playable XSB level; the message says where and why."""


@dataclass(frozen=True)
class State:
    """Where the player stands and where the crates are (sorted cell numbers)."""

    player: int
    crates: tuple[int, ...]


@dataclass(frozen=True)
class Level:
    """A parsed level: the fixed board plus its starting :class:`State`."""

    width: int
    height: int
    walls: frozenset[int]
    goals: frozenset[int]
    start: State

    def cell(self, row: int, col: int) -> int:
        return row * self.width + col

    def position(self, cell: int) -> tuple[int, int]:
        """(row, col) of a cell number."""
        return divmod(cell, self.width)

    def neighbour(self, cell: int, action: str) -> int | None:
        """The cell one step ``action`` from ``cell``, or None off the board."""
        d_row, d_col = ACTIONS[action]
        row, col = divmod(cell, self.width)
        row, col = row + d_row, col + d_col
        if 0 <= row < self.height and 0 <= col < self.width:
            return row * self.width + col
        return None


@dataclass(frozen=True)
class MoveResult:
    """One applied action: the new state and what happened.

    ``outcome`` is ``"moved"`` (the player stepped onto free floor),
    ``"pushed"`` (the player pushed one crate one cell) or ``"blocked"``
    (a wall, a crate against a wall or crate, or the board's edge: nothing moved).
    """

    state: State
    outcome: str


def parse_xsb(text: str) -> Level:
    """Parse one level in XSB text (``#`` wall, ``@`` player, ``+`` player on goal,
    ``$`` crate, ``*`` crate on goal, ``.`` goal, space / ``-`` / ``_`` floor).

    Blank lines before and after are ignored; trailing spaces are floor.
    Refused (LevelError, naming line and column): an unknown character, not
    exactly one player, no crate, crates and goals of different counts, a
    level already solved, a side over MAX_SIDE, or a player who can walk off
    the board (the level must be enclosed by walls).
    """
    lines = _xsb_rows(text)
    height = len(lines)
    width = max(len(line.rstrip()) for line in lines)
    if height > MAX_SIDE or width > MAX_SIDE:
        raise LevelError(f"the level is {width} x {height}; at most {MAX_SIDE} x {MAX_SIDE} is accepted")
    pieces = _XsbPieces()
    for row, line in enumerate(lines):
        for col, char in enumerate(line.rstrip()):
            pieces.add(row, col, char, width)
    pieces.check()
    player = pieces.players[0][0] * width + pieces.players[0][1]
    level = Level(
        width, height, frozenset(pieces.walls), frozenset(pieces.goals), State(player, tuple(sorted(pieces.crates)))
    )
    if is_solved(level, level.start):
        raise LevelError("every crate already stands on a goal; expected a level with something to do")
    _check_enclosed(level)
    return level


def _xsb_rows(text: str) -> list[str]:
    """The level's rows, blank lines before and after dropped; refuses a non-text or empty level."""
    if not isinstance(text, str):
        raise LevelError(f"expected the level as text, got {type(text).__name__}")
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise LevelError("the level is empty; expected XSB rows of #@+$*. and spaces")
    return lines


@dataclass
class _XsbPieces:
    """What parse_xsb collects cell by cell (cells numbered row * width + col)."""

    walls: set[int] = field(default_factory=set)
    goals: set[int] = field(default_factory=set)
    crates: list[int] = field(default_factory=list)
    players: list[tuple[int, int]] = field(default_factory=list)

    def add(self, row: int, col: int, char: str, width: int) -> None:
        if char not in _KNOWN:
            raise LevelError(
                f"line {row + 1}, column {col + 1}: unknown character {char!r}; expected one of # @ + $ * . space"
            )
        cell = row * width + col
        if char == WALL:
            self.walls.add(cell)
        if char in (GOAL, PLAYER_ON_GOAL, CRATE_ON_GOAL):
            self.goals.add(cell)
        if char in (CRATE, CRATE_ON_GOAL):
            self.crates.append(cell)
        if char in (PLAYER, PLAYER_ON_GOAL):
            self.players.append((row, col))

    def check(self) -> None:
        """Exactly one player, at least one crate, as many goals as crates."""
        if len(self.players) != 1:
            where = ", ".join(f"line {r + 1} column {c + 1}" for r, c in self.players) or "none found"
            raise LevelError(f"expected exactly one player (@ or +), found {len(self.players)} ({where})")
        if not self.crates:
            raise LevelError("expected at least one crate ($ or *), found none")
        if len(self.crates) != len(self.goals):
            raise LevelError(
                f"expected as many goals as crates, found {len(self.crates)} crates and {len(self.goals)} goals"
            )


def _check_enclosed(level: Level) -> None:
    """The player's walkable region (walls stop it, crates do not) never reaches the board's edge."""
    seen = {level.start.player}
    todo = [level.start.player]
    while todo:
        cell = todo.pop()
        row, col = level.position(cell)
        if row in (0, level.height - 1) or col in (0, level.width - 1):
            raise LevelError(
                f"line {row + 1}, column {col + 1}: the player can reach the edge of the board; "
                "expected the level to be enclosed by walls (#)"
            )
        for action in ACTIONS:
            nxt = level.neighbour(cell, action)
            if nxt is not None and nxt not in level.walls and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)


def apply(level: Level, state: State, action: str) -> MoveResult:
    """Apply one of ACTIONS: step, or push one crate one cell (never two, never into a wall)."""
    if action not in ACTIONS:
        raise LevelError(f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    target = level.neighbour(state.player, action)
    if target is None or target in level.walls:
        return MoveResult(state, "blocked")
    if target not in state.crates:
        return MoveResult(State(target, state.crates), "moved")
    beyond = level.neighbour(target, action)
    if beyond is None or beyond in level.walls or beyond in state.crates:
        return MoveResult(state, "blocked")
    crates = tuple(sorted(beyond if crate == target else crate for crate in state.crates))
    return MoveResult(State(target, crates), "pushed")


def is_solved(level: Level, state: State) -> bool:
    """Every crate stands on a goal (there are as many goals as crates)."""
    return all(crate in level.goals for crate in state.crates)


def _blocked(level: Level, cell: int, action: str) -> bool:
    nxt = level.neighbour(cell, action)
    return nxt is None or nxt in level.walls


def is_dead_corner(level: Level, cell: int) -> bool:
    """A non-goal cell with a wall above or below and a wall left or right."""
    if cell in level.goals:
        return False
    vertical = _blocked(level, cell, "up") or _blocked(level, cell, "down")
    horizontal = _blocked(level, cell, "left") or _blocked(level, cell, "right")
    return vertical and horizontal


def is_deadlocked(level: Level, state: State) -> bool:
    """Seed 001's cheap corner test: some crate not on a goal is wedged in a corner of walls.

    Such a crate can never move again: with a wall above (or below), a
    vertical push needs the player to stand in that wall or pushes the crate
    into it, and the same holds sideways; a crate that cannot move and is not
    on a goal leaves the level unsolvable, so the test never reports a
    solvable state.
    It undercounts: crates frozen against each other, a crate along a wall with
    no goal on that wall, or 2 x 2 blocks are all deadlocks it does not see, so
    a deadlock rate built on it is a lower bound.
    """
    return any(is_dead_corner(level, crate) for crate in state.crates)


@lru_cache(maxsize=512)
def _board(level: Level) -> tuple[str, ...]:
    """Each cell's character with nothing on it (wall, goal or floor), row by row: a level's
    fixed part, drawn once per level instead of once per move (the play API renders the
    state in every answer)."""
    walls, goals = level.walls, level.goals
    return tuple(
        WALL if cell in walls else GOAL if cell in goals else FLOOR for cell in range(level.width * level.height)
    )


def render_xsb(level: Level, state: State) -> str:
    """The state as XSB text, one line per row, trailing floor trimmed."""
    chars = list(_board(level))
    walls, goals = level.walls, level.goals
    # A wall is drawn whatever a (malformed) state puts on it; the player is drawn over a crate.
    for cell in state.crates:
        if cell not in walls:
            chars[cell] = CRATE_ON_GOAL if cell in goals else CRATE
    if state.player not in walls:
        chars[state.player] = PLAYER_ON_GOAL if state.player in goals else PLAYER
    width = level.width
    return "\n".join("".join(chars[start : start + width]).rstrip() for start in range(0, len(chars), width))
