"""The episode-set parser: a scorecard release's hidden levels -> EpisodeSet (pure: no Django, no file I/O).

Every level is solved by BFS while parsing, so a level that cannot be served
(malformed, unsolvable, too big to solve within the budget, or with a wrong
stated optimal length) never syncs. A ``levels_file`` is read through the
ManifestFiles view, never from outside the manifest or under reference/.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from leaderboard.manifest.checker import Checker, describe
from leaderboard.manifest.loader import parse_yaml
from leaderboard.manifest.types import EpisodeLevel, EpisodeSet, ManifestFiles, Problem
from scoring.sokoban import OVER_BUDGET, UNSOLVABLE, LevelError, parse_xsb, solve

__all__ = ["LEVEL_ID_PATTERN", "LEVEL_SEARCH_MAX_NODES", "MAX_LEVEL_CHARS", "parse_episode_set"]

# A level id is a path segment of the play API (/api/v1/scorecards/<id>/levels/<level id>/...):
# the API's routes use this very pattern, so every level a release syncs can be played (an id
# such as "lvl 1" synced, counted in every card's padded total, and could never be reset).
LEVEL_ID_PATTERN = r"[A-Za-z0-9._-]{1,100}"
_LEVEL_ID = re.compile(LEVEL_ID_PATTERN)

# A hidden Sokoban level: XSB of at most 50 x 50 cells (scoring.sokoban.engine.MAX_SIDE) plus newlines.
MAX_LEVEL_CHARS = 51 * 50
# BFS states per level at sync. Every level is solved on every sync, so the budget bounds
# how long a sync takes; the demo set's largest level needs a few thousand.
LEVEL_SEARCH_MAX_NODES = 200_000
# BFS states for a whole hidden set at sync: every level may not take its own budget, or a 2 MiB
# levels file of hard levels is hours of one request. Twenty hard levels' worth (a few seconds);
# the demo's 100 levels take a few hundred thousand in all.
SET_SEARCH_MAX_NODES = 20 * LEVEL_SEARCH_MAX_NODES


def parse_episode_set(
    release: Mapping[str, Any], check: Checker, scheme: str | None, files: ManifestFiles, problems: list[Problem]
) -> EpisodeSet | None:
    present = "episode_set" in release
    if scheme != "scorecard":
        if present and scheme is not None:
            check.problem(("episode_set",), f"only scheme scorecard has an episode_set; this benchmark is {scheme}")
        return None
    if not present:
        check.problem((), "missing required field 'episode_set' (scheme scorecard needs its hidden episode set)")
        return None
    data = check.mapping(release["episode_set"], ("episode_set",), "a mapping with size and levels or levels_file")
    if data is None:
        return None
    path = ("episode_set",)
    check.known_keys(data, ("size", "levels", "levels_file"), path)
    size = check.integer(data, "size", path, minimum=1)
    if ("levels" in data) == ("levels_file" in data):
        check.problem(path, "expected exactly one of 'levels' (a list) or 'levels_file' (a YAML file of that list)")
        return None
    if "levels" in data:
        levels = _parse_levels(data["levels"], check, (*path, "levels"))
    else:
        levels = _read_levels_file(data, check, files, problems)
    if size is None or levels is None:
        return None
    if len(levels) != size:
        check.problem((*path, "size"), f"expected {len(levels)} (the number of levels listed), got {size}")
        return None
    return EpisodeSet(size=size, levels=tuple(levels))


def _read_levels_file(
    data: Mapping[str, Any], check: Checker, files: ManifestFiles, problems: list[Problem]
) -> list[EpisodeLevel] | None:
    """The levels of ``levels_file``: a YAML file of the level list, inside the manifest, outside reference/."""
    path = ("episode_set",)
    name = check.string(data, "levels_file", path, max_len=200)
    if name is None:
        return None
    relpath = PurePosixPath(name)
    if relpath.is_absolute() or ".." in relpath.parts or "reference" in relpath.parts:
        check.problem((*path, "levels_file"), "expected a path inside the manifest, outside reference/")
        return None
    raw = files.read(str(relpath))
    if raw is None:
        check.problem((*path, "levels_file"), f"expected the file {name!r} in the manifest; it is missing")
        return None
    parsed = parse_yaml(raw, str(relpath), problems)
    if parsed is None:
        return None
    return _parse_levels(parsed[0], Checker(str(relpath), parsed[1], problems), ())


def _parse_levels(value: Any, check: Checker, path: tuple[Any, ...]) -> list[EpisodeLevel] | None:
    """Each level's XSB text, solved by BFS here so a level that cannot be served never syncs.

    Refused, naming the file, line and level: malformed XSB, no solution, no
    solution found within LEVEL_SEARCH_MAX_NODES states, and a stated
    ``optimal_len`` that differs from the BFS length."""
    if not isinstance(value, list) or not value:
        check.problem(path, f"expected a non-empty list of {{id, xsb, optimal_len}}, got {describe(value)}")
        return None
    levels: list[EpisodeLevel] = []
    seen: set[str] = set()
    ok = True
    search = _SetSearch()
    for index, item in enumerate(value):
        where = (*path, index)
        data = check.mapping(item, where, "a mapping with id, xsb and optionally optimal_len")
        if data is None:
            ok = False
            continue
        check.known_keys(data, ("id", "xsb", "optimal_len"), where)
        level_id = check.string(data, "id", where, max_len=100)
        stated = check.integer(data, "optimal_len", where, minimum=1, required=False)
        if level_id is None or not check.required(data, "xsb", where):
            ok = False
            continue
        if not _LEVEL_ID.fullmatch(level_id):
            check.problem(
                (*where, "id"),
                f"level id {level_id[:100]!r}: expected 1 to 100 of A-Z, a-z, 0-9, '.', '_' and '-' "
                "(it is a path segment of the play API)",
            )
            ok = False
            continue
        if level_id in seen:
            check.problem((*where, "id"), f"duplicate level id {level_id!r}")
            ok = False
            continue
        seen.add(level_id)
        optimal = _solve_level(data["xsb"], level_id, check, (*where, "xsb"), search)
        if optimal is None:
            ok = False
            continue
        if stated is not None and stated != optimal:
            check.problem(
                (*where, "optimal_len"),
                f"level {level_id!r}: optimal_len is {stated}, but BFS finds a shortest solution of {optimal} moves",
            )
            ok = False
            continue
        levels.append(EpisodeLevel(level_id, optimal, data["xsb"].strip("\n")))
    return levels if ok else None


class _SetSearch:
    """The search states a hidden set's sync has left (SET_SEARCH_MAX_NODES), and the levels it
    already solved by their XSB text (a level listed twice under two ids is searched once)."""

    def __init__(self) -> None:
        self.left = SET_SEARCH_MAX_NODES
        self.solved: dict[str, Any] = {}


def _solve_level(text: Any, level_id: str, check: Checker, where: tuple[Any, ...], search: _SetSearch) -> int | None:
    if not isinstance(text, str) or len(text) > MAX_LEVEL_CHARS:
        check.problem(where, f"level {level_id!r}: expected XSB text of at most {MAX_LEVEL_CHARS} characters")
        return None
    try:
        level = parse_xsb(text)
    except LevelError as exc:
        check.problem(where, f"level {level_id!r}: malformed XSB: {exc}")
        return None
    solution = search.solved.get(text)
    if solution is None:
        if search.left <= 0:
            check.problem(
                where,
                f"level {level_id!r}: not searched: the set's levels used the whole sync search budget of "
                f"{SET_SEARCH_MAX_NODES} states before it; expected fewer or smaller levels",
            )
            return None
        solution = solve(level, max_nodes=min(LEVEL_SEARCH_MAX_NODES, search.left))
        search.left -= solution.nodes
        search.solved[text] = solution
    if solution.status == UNSOLVABLE:
        check.problem(where, f"level {level_id!r}: has no solution (BFS searched every reachable state)")
        return None
    if solution.status == OVER_BUDGET:
        check.problem(
            where,
            f"level {level_id!r}: not solved within the search budget of {solution.nodes} states"
            + ("" if solution.nodes >= LEVEL_SEARCH_MAX_NODES else " (what the set's sync budget had left)")
            + "; expected a smaller level",
        )
        return None
    return solution.length
