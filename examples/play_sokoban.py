#!/usr/bin/env python3
"""Reference client for Podium's scorecard benchmarks (docs/api.md "Scorecards").

Standard library only. Opens a card, plays levels one at a time with a simple
agent -- breadth-first search within a small node budget, else random moves --
closes the card and prints it as JSON.

    PODIUM_API_KEY=pdm_... python examples/play_sokoban.py \\
        --server http://127.0.0.1:8000 --benchmark sokoban-hidden --agent "BFS Baseline" --version 1.0

Options: --levels N plays only the first N levels (the card still counts all of
them, unplayed ones as unsolved); --nodes sets the search budget per level;
--seed makes the random fallback repeatable.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import urllib.error
import urllib.request
from collections import deque
from typing import Any

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


class Podium:
    def __init__(self, server: str, key: str) -> None:
        # Only http(s): urllib would also open file: and custom schemes.
        if not server.startswith(("http://", "https://")):
            raise SystemExit(f"--server: expected an http:// or https:// URL, got {server!r}")
        self.base = server.rstrip("/") + "/api/v1"
        self.key = key

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)  # noqa: S310 - scheme checked
        request.add_header("Authorization", f"Api-Key {self.key}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - scheme checked
                return json.load(response)
        except urllib.error.HTTPError as exc:
            error = json.load(exc).get("error", {})
            raise SystemExit(f"{method} {path}: HTTP {exc.code} {error.get('code')}: {error.get('message')}") from None


def parse(xsb: str) -> tuple[set[tuple[int, int]], set[tuple[int, int]], frozenset[tuple[int, int]], tuple[int, int]]:
    """walls, goals, crates, player of an XSB board."""
    walls, goals, crates = set(), set(), set()
    player = (0, 0)
    for r, line in enumerate(xsb.split("\n")):
        for c, char in enumerate(line):
            if char == "#":
                walls.add((r, c))
            if char in ".+*":
                goals.add((r, c))
            if char in "$*":
                crates.add((r, c))
            if char in "@+":
                player = (r, c)
    return walls, goals, frozenset(crates), player


def bfs(xsb: str, max_nodes: int) -> list[str] | None:
    """A shortest solution within ``max_nodes`` expanded states, else None."""
    walls, goals, crates, player = parse(xsb)
    start = (player, crates)
    parent: dict[Any, Any] = {start: None}
    frontier = deque([start])
    expanded = 0
    while frontier and expanded < max_nodes:
        state = frontier.popleft()
        expanded += 1
        (r, c), boxes = state
        for name, (dr, dc) in MOVES.items():
            target = (r + dr, c + dc)
            if target in walls:
                continue
            if target in boxes:
                beyond = (r + 2 * dr, c + 2 * dc)
                if beyond in walls or beyond in boxes:
                    continue
                nxt = (target, (boxes - {target}) | {beyond})
            else:
                nxt = (target, boxes)
            if nxt in parent:
                continue
            parent[nxt] = (state, name)
            if nxt[1] <= goals:
                moves = []
                link = parent[nxt]
                while link is not None:
                    moves.append(link[1])
                    link = parent[link[0]]
                return moves[::-1]
            frontier.append(nxt)
    return None


def play(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    podium = Podium(args.server, args.key)
    card = podium.call(
        "POST", "/scorecards/", {"benchmark": args.benchmark, "agent": {"name": args.agent, "version": args.version}}
    )
    print(
        f"opened card {card['id']} on {card['benchmark']} {card['release']}: {len(card['levels'])} levels",
        file=sys.stderr,
    )
    for level in card["levels"][: args.levels]:
        episode = podium.call("POST", f"/scorecards/{card['id']}/levels/{level}/reset")
        plan = bfs(episode["state"]["xsb"], args.nodes) or []
        while not episode["done"]:
            action = plan.pop(0) if plan else rng.choice(list(MOVES))
            episode = podium.call("POST", f"/scorecards/{card['id']}/levels/{level}/actions", {"action": action})
        outcome = "solved" if episode["solved"] else "deadlocked" if episode["deadlocked"] else "out of steps"
        print(f"{level}: {outcome} in {episode['steps']} steps", file=sys.stderr)
    return podium.call("POST", f"/scorecards/{card['id']}/close")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default="http://127.0.0.1:8000")
    parser.add_argument("--key", default=os.environ.get("PODIUM_API_KEY", ""), help="default: $PODIUM_API_KEY")
    parser.add_argument("--benchmark", default="sokoban-hidden")
    parser.add_argument("--agent", default="BFS Baseline")
    parser.add_argument("--version", default="1.0")
    parser.add_argument("--levels", type=int, default=None, help="play only the first N levels")
    parser.add_argument("--nodes", type=int, default=2000, help="BFS node budget per level")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.key:
        parser.error("an API key is needed: --key or PODIUM_API_KEY")
    print(json.dumps(play(args), indent=2, default=str))


if __name__ == "__main__":
    main()
