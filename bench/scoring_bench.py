"""Benchmark the scoring package (standard library only).

Run: .venv/bin/python bench/scoring_bench.py

1. Recompute one full run (11 tasks x 100 evaluator episodes) with
   ``score_run``, then its bootstrap CIs (1,000 resamples, episodes then
   tasks) with ``run_intervals``; print the median ms of each and of both.
2. Aggregate a 10,000-run leaderboard streamed from a generator
   (``rank_runs``: category scores per run, best run per entrant, ranking);
   print runs/s and seconds.
3. Print tracemalloc peak memory for 1,000 vs 10,000 streamed runs.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scoring.gap import (
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    OPEN,
    REPRODUCTION,
    Episode,
    ReleaseSpec,
    TaskResult,
    TaskSpec,
    score_run,
)
from scoring.leaderboard import RunRow, rank_runs
from scoring.scorecard import success_rate_interval
from scoring.uncertainty import run_intervals

TASKS = 11
EPISODES = 100
REPEATS = 30
ENTRANTS = 200


def build_release() -> ReleaseSpec:
    specs = {}
    for index in range(TASKS):
        slug = f"task_{index:02d}"
        specs[slug] = TaskSpec(
            slug=slug,
            genre=REPRODUCTION if index % 2 else OPEN,
            direction=HIGHER_IS_BETTER if index % 3 else LOWER_IS_BETTER,
            paper_value=0.7,
            penalties={"collision_rate": 0.05} if index % 4 == 0 else {},
        )
    return ReleaseSpec(specs)


def build_results(release: ReleaseSpec, seed: int = 0) -> dict[str, TaskResult]:
    rng = random.Random(seed)
    results = {}
    for slug, spec in release.tasks.items():
        episodes = [
            Episode(
                metric=rng.random() if rng.random() > 0.02 else None,
                rates={metric: rng.random() * 0.04 for metric in spec.penalties},
                aborted=rng.random() < 0.05,
            )
            for _ in range(EPISODES)
        ]
        results[slug] = TaskResult(episodes, faithful=rng.random() > 0.1)
    return results


def median_ms(action: object, repeats: int = REPEATS) -> tuple[float, float]:
    """Median wall-clock and CPU milliseconds of ``action()``.

    CPU time is printed too because the shared machine is often loaded: wall
    time then includes waiting for a core.
    """
    assert callable(action)
    wall = []
    cpu = []
    for _ in range(repeats):
        start_wall = time.perf_counter()
        start_cpu = time.process_time()
        action()
        cpu.append((time.process_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start_wall) * 1000)
    return statistics.median(wall), statistics.median(cpu)


def verdict(milliseconds: float, target: float) -> str:
    return "met" if milliseconds < target else "MISSED"


def stream_runs(release: ReleaseSpec, count: int) -> Iterator[RunRow]:
    rng = random.Random(1)
    slugs = sorted(release.tasks)
    variants = [{slug: rng.random() * 1.5 for slug in slugs if rng.random() > 0.1} for _ in range(64)]
    for index in range(count):
        yield RunRow(f"entrant_{index % ENTRANTS:04d}", f"run_{index:06d}", variants[index % 64], rng.random())


def main() -> None:
    release = build_release()
    results = build_results(release)
    print(f"run: {TASKS} tasks x {EPISODES} episodes, median of {REPEATS} repeats")
    core, core_cpu = median_ms(lambda: score_run(release, results))
    ci, ci_cpu = median_ms(lambda: run_intervals(release, results))
    both, both_cpu = median_ms(lambda: (score_run(release, results), run_intervals(release, results)))
    print(
        f"score_run (recompute, no CI): {core:.3f} ms median wall, {core_cpu:.3f} ms CPU  "
        f"[target < 2 ms: {verdict(core, 2)}]"
    )
    print(
        f"run_intervals (bootstrap CI, 1000 resamples, episodes then tasks): {ci:.3f} ms median wall, "
        f"{ci_cpu:.3f} ms CPU"
    )
    print(
        f"score_run + run_intervals: {both:.3f} ms median wall, {both_cpu:.3f} ms CPU  "
        f"[target < 2 ms: {verdict(both, 2)}; the CI is timed separately above]"
    )
    card_ci, card_ci_cpu = median_ms(lambda: success_rate_interval(31, 100))
    print(f"success_rate_interval (scorecard, Wilson): {card_ci:.4f} ms median wall, {card_ci_cpu:.4f} ms CPU")

    count = 10_000
    start = time.perf_counter()
    ranked = rank_runs(stream_runs(release, count), release)
    seconds = time.perf_counter() - start
    print(
        f"leaderboard: {count} runs streamed, {len(ranked)} entrants ranked in {seconds:.3f} s "
        f"= {count / seconds:,.0f} runs/s  [target < 1 s: {'met' if seconds < 1 else 'MISSED'}]"
    )
    for runs in (1_000, 10_000):
        tracemalloc.start()
        rank_runs(stream_runs(release, runs), release)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"peak memory streaming {runs} runs: {peak / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
