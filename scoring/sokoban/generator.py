"""Deterministic level generator for the demo hidden set (and the property tests).

``generate_set(seed, count)`` draws small walled rooms with a few inner walls,
goals and crates from ``random.Random(seed)``, solves each with BFS and keeps
it only when its optimal length falls in the band the difficulty ramp asks
for at that position: one crate and short solutions first, then two, then
three crates and longer ones. The same seed always gives the same levels
(the generator uses nothing but its own Random), so a committed level set can
be regenerated and checked byte for byte. So the seed is as secret as the set: the
command line draws a 128-bit one unless told otherwise (:func:`main`).

Rooms stay small (at most 8 x 7 inside) so that BFS of the whole set at
manifest sync takes about a second.
"""

from __future__ import annotations

import argparse
import random
import secrets
from dataclasses import dataclass

from scoring.sokoban.engine import CRATE, FLOOR, GOAL, PLAYER, WALL, Level, LevelError, parse_xsb
from scoring.sokoban.solver import SOLVED, solve

__all__ = ["GeneratedLevel", "generate_set", "ramp", "random_level_text"]

# A candidate needing more states than this is skipped: it would slow every sync.
GENERATOR_MAX_NODES = 20_000
MAX_TRIES_PER_LEVEL = 20_000


@dataclass(frozen=True)
class GeneratedLevel:
    level_id: str
    xsb: str
    optimal_len: int


def ramp(index: int, count: int) -> tuple[int, int, int]:
    """(crates, shortest, longest optimal length) wanted at position ``index`` of ``count``."""
    share = index / max(1, count - 1)
    crates = 1 if share < 0.3 else 2 if share < 0.8 else 3
    low = 4 + round(share * 30)
    return crates, low, low + 5


def random_level_text(rng: random.Random, *, crates: int, inner_width: int, inner_height: int) -> str:
    """One random room (not necessarily solvable): a wall border, a few inner walls,
    ``crates`` crates and goals and the player on distinct floor cells."""
    width, height = inner_width + 2, inner_height + 2
    grid = [
        [WALL if r in (0, height - 1) or c in (0, width - 1) else FLOOR for c in range(width)] for r in range(height)
    ]
    floor = [(r, c) for r in range(1, height - 1) for c in range(1, width - 1)]
    for r, c in rng.sample(floor, rng.randint(0, len(floor) // 5)):
        grid[r][c] = WALL
    free = [(r, c) for r, c in floor if grid[r][c] == FLOOR]
    picks = rng.sample(free, 2 * crates + 1)
    for r, c in picks[:crates]:
        grid[r][c] = GOAL
    for r, c in picks[crates : 2 * crates]:
        grid[r][c] = CRATE
    r, c = picks[-1]
    grid[r][c] = PLAYER
    return "\n".join("".join(row).rstrip() for row in grid)


def _candidate(rng: random.Random, crates: int) -> tuple[str, Level] | None:
    text = random_level_text(
        rng,
        crates=crates,
        inner_width=rng.randint(4 + crates, 6 + crates - (crates == 3)),
        inner_height=rng.randint(4, 5 + (crates < 3)),
    )
    try:
        return text, parse_xsb(text)
    except LevelError:  # e.g. the inner walls cut the player off from nothing: still enclosed; others refused
        return None


def generate_set(
    seed: int, count: int = 100, *, first: int | None = None, prefix: str = "level-"
) -> list[GeneratedLevel]:
    """``count`` solvable levels on the difficulty ramp, ids ``<prefix>000`` ...

    ``first`` stops after that many levels: they are exactly the first levels of
    the full set (same Random draws), so a test can check a committed set's head
    without generating all of it."""
    rng = random.Random(seed)
    levels: list[GeneratedLevel] = []
    seen: set[str] = set()
    for index in range(count if first is None else min(first, count)):
        crates, low, high = ramp(index, count)
        for _ in range(MAX_TRIES_PER_LEVEL):
            candidate = _candidate(rng, crates)
            if candidate is None or candidate[0] in seen:
                continue
            text, level = candidate
            solution = solve(level, max_nodes=GENERATOR_MAX_NODES)
            if solution.status == SOLVED and low <= len(solution.moves) <= high:
                seen.add(text)
                levels.append(GeneratedLevel(f"{prefix}{index:03d}", text, len(solution.moves)))
                break
        else:
            raise RuntimeError(f"no level with {crates} crates and optimal {low}-{high} in {MAX_TRIES_PER_LEVEL} tries")
    return levels


# Bits of the seed drawn when none is given: far beyond any search (this module is public, so a
# set is only as hidden as its seed is unguessable).
SECRET_SEED_BITS = 128
# A seed below this is refused unless --public-seed says the set need not be hidden: a date such
# as 20261130 or a small number is found by trying candidates against one level's layout (or
# against the step budgets a card shows) in seconds, and then the whole set, order included,
# is regenerated and solved offline: a perfect card without a single scouting reset.
MIN_SECRET_SEED = 2**64


def levels_yaml(levels: list[GeneratedLevel], *, seed: int) -> str:
    """The level list as a manifest ``levels_file`` (docs/manifest.md), written by hand
    so this module keeps to the standard library. Every generated row starts with a
    wall, so a plain ``|-`` block keeps each row's leading characters."""
    public = " --public-seed" if abs(seed) < MIN_SECRET_SEED else ""
    command = f"python -m scoring.sokoban.generator --seed {seed}{public} --count {len(levels)}"
    out = [
        f"# Generated by `{command}`; do not edit.",
        "# Hidden level set: XSB text per level and its BFS optimal length (re-checked at every sync).",
    ]
    for level in levels:
        out += [f"- id: {level.level_id}", f"  optimal_len: {level.optimal_len}", "  xsb: |-"]
        out += [f"    {row}" for row in level.xsb.split("\n")]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Write a generated Sokoban level set as manifest YAML to stdout.")
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"default: a secret {SECRET_SEED_BITS}-bit seed (recorded in the file's first line; keep the file "
        "as secret as the levels)",
    )
    parser.add_argument(
        "--public-seed",
        action="store_true",
        help="allow a --seed below 2**64 (guessable): only for a set that need not be hidden, such as a demo",
    )
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args(argv)
    # The top bit set: never below MIN_SECRET_SEED, with 127 bits drawn.
    seed = args.seed if args.seed is not None else secrets.randbits(SECRET_SEED_BITS - 1) | 1 << (SECRET_SEED_BITS - 1)
    if not args.public_seed and abs(seed) < MIN_SECRET_SEED:
        parser.error(
            f"--seed {seed} can be guessed: anyone with this (public) generator finds it from one level's "
            "layout and regenerates the whole hidden set; omit --seed for a secret one, or add --public-seed "
            "for a set that need not be hidden (a demo)"
        )
    print(levels_yaml(generate_set(seed, args.count), seed=seed), end="")


if __name__ == "__main__":
    main()
