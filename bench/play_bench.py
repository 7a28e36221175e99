"""Benchmark the scorecard play loop: one action round trip against the trivial view.

Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/podium_h1 .venv/bin/python bench/play_bench.py
     [--requests 2000] [--workers 2] [--clients 4] [--rounds 3]

1. Creates a throwaway PostgreSQL database next to DATABASE_URL's (dropped at
   the end; SQLite in a temporary directory without DATABASE_URL), migrates it,
   syncs the demo scorecard release (100 hidden levels) and opens one card per
   client with its own account and API key.
2. Serves the site with gunicorn on 127.0.0.1 (a free port; DEBUG off).
3. From --clients client processes, in alternating rounds: GET /healthz, and
   POST .../levels/<level>/actions with a real move (a bump into a wall, a
   step the server counts, records and checks for solved / deadlock / budget)
   with the client's API key; an episode that ends is reset onto the card's
   next level outside the timed requests. Each request opens a new connection
   (gunicorn's sync workers close it anyway). Each keeps its best round.
   Prints actions/s, actions/s per web process, p50/p99 of one action round
   trip, the same for /healthz, and the ratio (target >= 0.5, p99 < 20 ms).
4. Where the machine's time went in each kept round (Linux /proc): CPU per request
   of the web workers, the PostgreSQL server's processes and the client processes,
   and how much of the machine stood idle. The ratio is a ratio of whole-machine
   costs (the clients share the cores), so this shows which part a change moved.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.leaderboard_bench import bench_environment, drop_postgres, free_port, pct  # noqa: E402


def setup(clients: int) -> list[dict]:
    """Migrate, sync the demo release, open one card per client; return each client's plan."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from leaderboard.services.release_sync import release_sync
    from scoring.sokoban import ACTIONS, apply, parse_xsb
    from submissions.api_keys import api_key_create
    from submissions.demo_loaders.scorecard import BENCHMARK_SLUG, EXAMPLE_DIR
    from submissions.services.cards import card_episode_reset, card_open

    call_command("migrate", verbosity=0)
    release = release_sync(manifest=EXAMPLE_DIR).release
    release.benchmark.daily_submission_limit = 10_000
    release.benchmark.save()
    bumps = []
    for level_id, xsb in release.scorecard_levels.order_by("level_id").values_list("level_id", "xsb"):
        level = parse_xsb(xsb)
        action = next((a for a in ACTIONS if apply(level, level.start, a).outcome == "blocked"), None)
        if action is not None:
            bumps.append((level_id, action))
    plans = []
    for index in range(clients):
        user = get_user_model().objects.create_user(username=f"bench-{index}")
        key = api_key_create(user=user, name="bench").plaintext
        card = card_open(
            user=user, api_key=None, benchmark_slug=BENCHMARK_SLUG, agent_name=f"Bench {index}", agent_version="1"
        )
        card_episode_reset(card_id=card.pk, user=user, level_id=bumps[0][0])
        plans.append({"key": key, "card": card.pk, "levels": bumps, "position": 0})
    return plans


def _post(port: int, path: str, key: str, body: dict | None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    payload = json.dumps(body) if body is not None else ""
    conn.request("POST", path, payload, {"Authorization": f"Api-Key {key}", "Content-Type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else {}


def _actions(args: tuple[int, dict, int]) -> tuple[list[float], int]:
    """Send ``count`` timed actions on this client's card; returns latencies and its level position."""
    port, plan, count = args
    latencies = []
    position = plan["position"]
    card, key, levels = plan["card"], plan["key"], plan["levels"]
    for _ in range(count):
        level_id, action = levels[position]
        path = f"/api/v1/scorecards/{card}/levels/{level_id}/actions"
        started = time.perf_counter()
        status, body = _post(port, path, key, {"action": action})
        latencies.append(time.perf_counter() - started)
        if status != 200:
            raise RuntimeError(f"POST {path}: HTTP {status} {body}")
        if body["done"]:  # out of steps: move to the next level, untimed
            position += 1
            if position >= len(levels):
                raise RuntimeError("the card ran out of levels; lower --requests")
            status, body = _post(port, f"/api/v1/scorecards/{card}/levels/{levels[position][0]}/reset", key, None)
            if status != 200:
                raise RuntimeError(f"reset: HTTP {status} {body}")
    return latencies, position


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_by_role(server_pid: int) -> tuple[dict[str, float], float, float] | None:
    """CPU seconds used so far by role -- web (gunicorn's workers), database (every PostgreSQL
    server process), clients (this process's other children) -- and the machine's busy and
    idle seconds from /proc/stat; None where /proc is not Linux's."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    ticks = [int(value) for value in fields]
    idle = (ticks[3] + ticks[4]) / _TICKS
    busy = sum(ticks) / _TICKS - idle
    used = {"web": 0.0, "database": 0.0, "clients": 0.0}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:  # the process ended meanwhile
            continue
        rest = stat[stat.rindex(")") + 2 :].split()
        parent, cpu = int(rest[1]), (int(rest[11]) + int(rest[12])) / _TICKS
        if parent == server_pid:
            used["web"] += cpu
        elif command.startswith(b"postgres"):
            used["database"] += cpu
        elif parent == os.getpid() and int(entry.name) != server_pid:
            used["clients"] += cpu
    return used, busy, idle


def _accounting(before: tuple | None, after: tuple | None, requests: int) -> str:
    if before is None or after is None or not requests:
        return ""
    roles = "  ".join(f"{role} {(after[0][role] - before[0][role]) / requests * 1e3:.3f}" for role in after[0])
    busy, idle = after[1] - before[1], after[2] - before[2]
    return f"CPU ms per request: {roles}; machine idle {idle / (busy + idle):.0%}" if busy + idle else ""


def _healthz(args: tuple[int, int]) -> list[float]:
    port, count = args
    latencies = []
    for _ in range(count):
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        conn.close()
        latencies.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"/healthz: HTTP {response.status}")
    return latencies


# A bench's main is one linear script of rounds and reports; split, it would read worse (C901 waived).
def main() -> None:  # noqa: C901
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="requests per endpoint per round (bounded)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating measurement rounds (best kept)")
    parser.add_argument("--workers", type=int, default=max(2, os.cpu_count() or 2), help="gunicorn workers")
    parser.add_argument("--clients", type=int, default=4, help="concurrent client processes")
    args = parser.parse_args()

    env, database_url, admin_url = bench_environment("podium-play-bench-")

    server = None
    try:
        plans = setup(args.clients)
        from django.db import connection

        backend = connection.vendor
        connection.close()
        port = free_port()
        server = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "gunicorn"), "leaderboard.site.wsgi:application",
             "--bind", f"127.0.0.1:{port}",
             "--workers", str(args.workers), "--log-level", "warning"],
            cwd=ROOT, env=env,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                _healthz((port, 1))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not answer within 30 s") from None
                time.sleep(0.2)
        print(f"gunicorn: {args.workers} workers on 127.0.0.1:{port} ({backend}); {args.clients} client processes")
        per_client = args.requests // args.clients
        best: dict[str, tuple[float, list[float], str]] = {}
        with multiprocessing.Pool(args.clients) as pool:
            pool.map(_healthz, [(port, 20)] * args.clients)  # warm-up
            for _ in range(args.rounds):
                cpu, started = _cpu_by_role(server.pid), time.perf_counter()
                parts = pool.map(_healthz, [(port, per_client)] * args.clients)
                elapsed = time.perf_counter() - started
                lat = sorted(x for part in parts for x in part)
                if "healthz" not in best or len(lat) / elapsed > best["healthz"][0]:
                    best["healthz"] = (len(lat) / elapsed, lat, _accounting(cpu, _cpu_by_role(server.pid), len(lat)))
                cpu, started = _cpu_by_role(server.pid), time.perf_counter()
                results = pool.map(_actions, [(port, plan, per_client) for plan in plans])
                elapsed = time.perf_counter() - started
                for plan, (_, position) in zip(plans, results, strict=True):
                    plan["position"] = position
                lat = sorted(x for part, _ in results for x in part)
                if "action" not in best or len(lat) / elapsed > best["action"][0]:
                    best["action"] = (len(lat) / elapsed, lat, _accounting(cpu, _cpu_by_role(server.pid), len(lat)))
        health_rps, action_rps, action_lat = best["healthz"][0], best["action"][0], best["action"][1]
        for label, key in (("/healthz", "healthz"), ("action", "action")):
            rps, lat, where = best[key]
            print(
                f"{label:<10} {rps:8.1f} req/s  {rps / args.workers:7.1f} /s per web process  "
                f"p50 {pct(lat, 0.5):6.1f} ms  p99 {pct(lat, 0.99):6.1f} ms"
            )
            if where:
                print(f"{'':<10} {where}")
        ratio = action_rps / health_rps
        p99 = pct(action_lat, 0.99)
        print(f"ratio action/healthz = {ratio:.2f} (target >= 0.5): {'OK' if ratio >= 0.5 else 'MISSED'}")
        print(f"action p99 = {p99:.1f} ms (target < 20 ms): {'OK' if p99 < 20 else 'MISSED'}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if admin_url:
            from django.db import connections

            connections.close_all()
            drop_postgres(admin_url, database_url)


if __name__ == "__main__":
    main()
