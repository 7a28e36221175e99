"""Realistic, deterministic demo bundles (tests, benches, the demo loader).

:func:`write_paper_gap_bundle_dir` writes an unsealed paper-gap bundle
directory whose ``score_breakdown.json`` is computed by :mod:`scoring`, so it
validates (or attests, with ``sign_with``) unless ``tamper`` breaks it on
purpose.  :func:`seal_dir` seals it.  Same arguments -> byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from scoring import gap
from submissions.bundle import seal as sealing
from submissions.bundle.schema import FORMAT_V1, FORMAT_V2
from submissions.bundle.sign_dir import signed_verdict
from submissions.bundle.signatures import judged_results_sha256, load_private_key, sign_object

__all__ = [
    "DEMO_BENCHMARK",
    "DEMO_RELEASE",
    "TAMPERS",
    "demo_release_spec",
    "seal_dir",
    "write_paper_gap_bundle_dir",
]

DEMO_BENCHMARK = "ale-robotics"
DEMO_RELEASE = "0.5"

# What `tamper` can do, and the verdict or error code each one produces.
TAMPERS: dict[str, str] = {
    "claimed_score": "mismatch (one task's claimed final is off by 0.05)",
    "claimed_aggregate": "mismatch (aggregates.overall off by 0.01)",
    "member_hash": "member_hash_mismatch (a results file edited after hashing)",
    "missing_faithfulness": "missing_faithfulness (a reproduction task's verdict removed)",
    "missing_safety_metric": "validated, scored fail-closed (a declared rate dropped from every episode)",
    "unknown_task": "unknown_task (results for a task not in the release)",
    "release_hash": "release_hash_mismatch (manifest claims another task set)",
    "genre": "genre_mismatch (first task's genre flipped)",
    "forged_signature": "bad_signature (a signed result altered and re-hashed)",
    "nan": "non_finite_number (NaN in a results file)",
}

# A stand-in for examples/demo-release when no manifest is given: 11 tasks,
# both genres, both directions, some safety penalties.
_DEMO_TASKS: tuple[tuple[str, str, str, float, dict[str, float]], ...] = (
    ("diffusion-policy-pusht", "reproduction", gap.HIGHER_IS_BETTER, 0.91, {"collision_rate": 0.05}),
    ("act-aloha-transfer", "reproduction", gap.HIGHER_IS_BETTER, 0.72, {}),
    ("robomimic-lift-bc", "reproduction", gap.HIGHER_IS_BETTER, 0.86, {"drop_rate": 0.1}),
    ("mppi-quadrotor-gates", "reproduction", gap.LOWER_IS_BETTER, 12.5, {"crash_rate": 0.02}),
    ("rrt-star-planning-time", "reproduction", gap.LOWER_IS_BETTER, 0.84, {}),
    ("orb-slam-ate", "reproduction", gap.LOWER_IS_BETTER, 0.031, {}),
    ("legged-gym-velocity", "reproduction", gap.HIGHER_IS_BETTER, 0.93, {"fall_rate": 0.05}),
    ("carla-route-completion", "open", gap.HIGHER_IS_BETTER, 0.78, {"collision_rate": 0.05}),
    ("nuplan-closed-loop", "open", gap.HIGHER_IS_BETTER, 0.65, {}),
    ("dexterous-inhand-reorient", "open", gap.HIGHER_IS_BETTER, 0.58, {"drop_rate": 0.2}),
    ("uav-wind-tracking-rmse", "open", gap.LOWER_IS_BETTER, 0.42, {"crash_rate": 0.05}),
)


def demo_release_spec() -> tuple[gap.ReleaseSpec, str]:
    """An 11-task release spec and its required_task_set_hash."""
    tasks = {
        slug: gap.TaskSpec(slug=slug, genre=genre, direction=direction, paper_value=value, penalties=penalties)
        for slug, genre, direction, value, penalties in _DEMO_TASKS
    }
    spec = gap.ReleaseSpec(tasks=tasks)
    return spec, spec.required_task_set_hash


def _rng(seed: int, *parts: str) -> random.Random:
    # Derived seeds keep each task's episodes independent of which other tasks are written.
    material = ":".join((str(seed), *parts)).encode()
    return random.Random(int.from_bytes(hashlib.sha256(material).digest()[:8], "big"))


def _episodes(
    spec: gap.TaskSpec, *, skill: float, seed: int, count: int, legacy_seeds: bool = False
) -> list[dict[str, Any]]:
    rng = _rng(seed, spec.slug, "episodes")
    binary = spec.direction == gap.HIGHER_IS_BETTER and spec.paper_value <= 1.0
    episodes = []
    for index in range(count):
        if binary:  # success-rate style metric: each episode succeeds or not
            metric = 1.0 if rng.random() < min(1.0, skill * spec.paper_value) else 0.0
        elif spec.direction == gap.HIGHER_IS_BETTER:
            metric = max(0.0, rng.gauss(skill * spec.paper_value, 0.1 * spec.paper_value))
        else:  # lower is better: a skilled agent is faster / more accurate
            metric = max(0.0, rng.gauss(spec.paper_value / max(skill, 0.05), 0.1 * spec.paper_value))
        rates = {
            metric_name: round(max(0.0, rng.gauss(limit * 0.3 / max(skill, 0.1), limit * 0.2)), 6)
            for metric_name, limit in sorted(spec.penalties.items())
        }
        aborted = rng.random() < max(0.0, 0.06 - 0.04 * skill)
        # No "seed": a bundle carries no hidden seed (seed 003, "Hidden reference"); an older
        # evaluator's episodes named theirs, which is still read.
        episode = {"metric": round(metric, 6), "rates": rates, "aborted": aborted}
        episodes.append({"seed": 1000 * (index + 1) + seed % 1000, **episode} if legacy_seeds else episode)
    return episodes


def _dump(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")


def _release_inputs(
    release_manifest: Any, release_spec: gap.ReleaseSpec | None, required_task_set_hash: str | None
) -> tuple[gap.ReleaseSpec, str, str, str, dict[str, str]]:
    """(spec, hash, benchmark, version, simulator per task)."""
    if release_manifest is not None:
        spec = release_manifest.to_release_spec()
        simulators = {task.slug: task.simulator for task in release_manifest.tasks}
        return (
            spec,
            release_manifest.required_task_set_hash,
            release_manifest.benchmark.slug,
            release_manifest.version,
            simulators,
        )
    if release_spec is None:
        release_spec, default_hash = demo_release_spec()
        required_task_set_hash = required_task_set_hash or default_hash
    rhash = required_task_set_hash or release_spec.required_task_set_hash
    return release_spec, rhash, DEMO_BENCHMARK, DEMO_RELEASE, {}


def write_paper_gap_bundle_dir(
    dest: str | os.PathLike[str],
    *,
    release_manifest: Any = None,
    release_spec: gap.ReleaseSpec | None = None,
    required_task_set_hash: str | None = None,
    benchmark: str | None = None,
    release_version: str | None = None,
    agent_name: str = "demo-agent",
    agent_version: str = "1.0.0",
    skill: float = 0.9,
    seed: int = 0,
    episodes_per_task: int = 100,
    tasks: Iterable[str] | None = None,
    tamper: str | None = None,
    sign_with: Any = None,
    effort_tier: str = "standard",
    artifact_bytes: int = 0,
    challenge: str | None = None,
    judge_with: Any = None,
    judge_name: str = "demo-judge/1",
    rubric_version: str = "rubric/1",
    legacy_seeds: bool = False,
) -> Path:
    """Write a paper-gap bundle directory at ``dest`` (created) and return it.

    The release comes from ``release_manifest`` (a leaderboard.manifest
    ReleaseManifest), else ``release_spec`` (+ hash, benchmark,
    release_version), else the built-in 11-task demo release.  ``skill``
    ~ measured/paper (1.0 matches the paper).  ``tasks`` selects a subset
    (partial coverage).  ``tamper`` is a key of :data:`TAMPERS`.
    ``sign_with`` (Ed25519 private key or its PEM/base64 bytes) signs every
    evaluator result.  ``challenge`` (a token from the server) makes it a
    podium-bundle/2 bundle, the challenge inside every signed document;
    without it the bundle is the retired podium-bundle/1. ``judge_with`` (a
    judge's Ed25519 key, needs ``challenge``) signs each reproduction task's
    faithfulness verdict with ``judge_name`` and ``rubric_version``.
    ``artifact_bytes`` adds a pseudo-random
    ``artifacts/trajectory.bin`` of that size (for memory benches).
    ``legacy_seeds`` names each episode's seed, as evaluators did before
    seed 003's rule that a bundle carries no hidden seed (still read).
    """
    if tamper is not None and tamper not in TAMPERS:
        raise ValueError(f"unknown tamper {tamper!r}; choose from {', '.join(TAMPERS)}")
    spec, rhash, bench_slug, version, simulators = _release_inputs(
        release_manifest, release_spec, required_task_set_hash
    )
    bench_slug = benchmark or bench_slug
    version = release_version or version
    # One key for every result, or {simulator: key}: an evaluator key signs only its simulator's tasks.
    keys_by_simulator = sign_with if isinstance(sign_with, dict) else None
    key = load_private_key(sign_with) if isinstance(sign_with, bytes | str) else sign_with
    chosen = sorted(spec.tasks) if tasks is None else sorted(set(tasks))
    for slug in chosen:
        if slug not in spec.tasks:
            raise ValueError(f"task {slug!r} is not in the release")
    root = Path(dest)
    root.mkdir(parents=True, exist_ok=True)

    results = {
        slug: _result_doc(
            spec,
            slug,
            simulator=simulators.get(slug, "demo-sim"),
            episodes=_episodes(
                spec.tasks[slug], skill=skill, seed=seed, count=episodes_per_task, legacy_seeds=legacy_seeds
            ),
            # The first task with safety metrics loses them (the other tasks stay complete).
            drop_rates=tamper == "missing_safety_metric"
            and bool(spec.tasks[slug].penalties)
            and not any(spec.tasks[s].penalties for s in chosen if s < slug),
            challenge=challenge,
        )
        for slug in chosen
    }
    faithful_rng = _rng(seed, "faithfulness")
    faithfulness: dict[str, dict[str, Any]] = {
        slug: {"faithful": faithful_rng.random() < 0.9, "judge": judge_name}
        for slug in chosen
        if spec.tasks[slug].genre == gap.REPRODUCTION
    }
    scored = {
        slug: gap.TaskResult(
            episodes=[gap.Episode(e["metric"], e["rates"], e["aborted"]) for e in results[slug]["episodes"]],
            faithful=faithfulness[slug]["faithful"] if slug in faithfulness else None,
        )
        for slug in chosen
    }
    breakdown = gap.score_run(spec, scored).to_dict()
    results = _signed_results(results, keys_by_simulator=keys_by_simulator, key=key)
    if judge_with is not None:
        faithfulness = _judged(
            faithfulness, judge_with, challenge=challenge, rubric_version=rubric_version, results=results
        )

    genres = {slug: {"genre": spec.tasks[slug].genre} for slug in chosen}
    rng = _rng(seed, "usage")
    manifest: dict[str, Any] = {
        "format": FORMAT_V2 if challenge is not None else FORMAT_V1,
        "kind": "paper_gap",
        "benchmark": bench_slug,
        "release": version,
        "required_task_set_hash": rhash,
        "agent": {"name": agent_name, "version": agent_version},
        "tasks": genres,
        "effort_tier": effort_tier,
        "runtime_seconds": round(600 * len(chosen) * (0.5 + rng.random()), 1),
        "tokens": {"input": rng.randrange(100_000, 2_000_000), "output": rng.randrange(10_000, 200_000)},
        "members": {},
    }
    if challenge is not None:
        manifest["challenge"] = challenge
    _tamper_before_hashing(
        tamper, breakdown=breakdown, faithfulness=faithfulness, results=results, manifest=manifest, chosen=chosen
    )
    if tamper == "forged_signature" and sign_with is None:
        raise ValueError("tamper='forged_signature' needs sign_with")

    for slug, doc in results.items():
        _dump(root / "results" / f"{slug}.json", doc)
    _dump(root / "score_breakdown.json", breakdown)
    if faithfulness:
        _dump(root / "faithfulness.json", faithfulness)
    if artifact_bytes:
        _write_artifact(root / "artifacts" / "trajectory.bin", artifact_bytes, seed)
    _dump(root / "manifest.json", manifest)
    sealing.write_members(root)
    _tamper_after_hashing(tamper, root / "results" / f"{chosen[0]}.json", root)
    return root


def _result_doc(
    spec: gap.ReleaseSpec,
    slug: str,
    *,
    simulator: str,
    episodes: list[dict[str, Any]],
    drop_rates: bool,
    challenge: str | None,
) -> dict[str, Any]:
    """One evaluator result document (unsigned)."""
    if drop_rates:
        for episode in episodes:
            episode["rates"] = {}
    doc: dict[str, Any] = {
        "task": slug,
        "evaluator": {"id": f"{simulator}-evaluator", "simulator": simulator, "version": "1.0"},
        "episodes": episodes,
    }
    if challenge is not None:
        doc["challenge"] = challenge
    return doc


def _signed_results(
    results: dict[str, dict[str, Any]], *, keys_by_simulator: dict[str, Any] | None, key: Any
) -> dict[str, dict[str, Any]]:
    """Each result signed by its simulator's key (``keys_by_simulator``) or by ``key``; unsigned without either."""
    if keys_by_simulator is not None:
        return {
            slug: sign_object(doc, keys_by_simulator[doc["evaluator"]["simulator"]])
            if doc["evaluator"]["simulator"] in keys_by_simulator
            else doc
            for slug, doc in results.items()
        }
    if key is not None:
        return {slug: sign_object(doc, key) for slug, doc in results.items()}
    return results


def _judged(
    faithfulness: dict[str, dict[str, Any]],
    judge_with: Any,
    *,
    challenge: str | None,
    rubric_version: str,
    results: dict[str, dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Each faithfulness verdict signed by the judge, over the task, rubric, challenge and the
    results it judged (as they will be sealed)."""
    if challenge is None:
        raise ValueError("judge_with needs a challenge: a judge's signature covers it")
    judge_key = load_private_key(judge_with) if isinstance(judge_with, bytes | str) else judge_with
    return {
        slug: signed_verdict(
            slug,
            faithful=entry["faithful"],
            judge=entry["judge"],
            rubric_version=rubric_version,
            challenge=challenge,
            results_sha256=judged_results_sha256(results[slug]),
            key=judge_key,
        )
        for slug, entry in faithfulness.items()
    }


def _tamper_before_hashing(
    tamper: str | None,
    *,
    breakdown: dict[str, Any],
    faithfulness: dict[str, dict[str, Any]],
    results: dict[str, dict[str, Any]],
    manifest: dict[str, Any],
    chosen: list[str],
) -> None:
    """Tampering that happens before hashing (the bundle stays intact), in place."""
    if tamper == "claimed_score":
        first = min(breakdown["tasks"])
        breakdown["tasks"][first]["final"] += 0.05
    elif tamper == "claimed_aggregate":
        breakdown["aggregates"]["overall"] = (breakdown["aggregates"]["overall"] or 0.0) + 0.01
    elif tamper == "missing_faithfulness":
        faithfulness.pop(min(faithfulness))
    elif tamper == "unknown_task":
        results["not-in-release"] = {**results[chosen[0]], "task": "not-in-release"}
        manifest["tasks"]["not-in-release"] = {"genre": "open"}
    elif tamper == "release_hash":
        manifest["required_task_set_hash"] = hashlib.sha256(b"another task set").hexdigest()
    elif tamper == "genre":
        task = manifest["tasks"][chosen[0]]
        task["genre"] = "open" if task["genre"] == "reproduction" else "reproduction"
    elif tamper == "forged_signature":
        first = chosen[0]
        results[first]["episodes"][0]["metric"] = results[first]["episodes"][0]["metric"] + 1.0


def _tamper_after_hashing(tamper: str | None, path: Path, root: Path) -> None:
    """Tampering after hashing (what a transit or a hand edit would do) to the result at ``path``."""
    if tamper == "member_hash":
        path.write_text(path.read_text(encoding="utf-8").replace('"aborted": false', '"aborted": true', 1))
    elif tamper == "nan":
        doc_text = path.read_text(encoding="utf-8")
        metric = json.loads(doc_text)["episodes"][0]["metric"]
        path.write_text(doc_text.replace(f'"metric": {json.dumps(metric)}', '"metric": NaN', 1), encoding="utf-8")
        sealing.write_members(root)  # NaN passes Python's json: the parser must catch it, not the hash


def _write_artifact(path: Path, size: int, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    with open(path, "wb") as f:
        remaining = size
        while remaining > 0:
            # fresh random bytes per block: incompressible, so the bundle really is `size` bytes
            block = rng.randbytes(min(remaining, 1 << 20))
            f.write(block)
            remaining -= len(block)


def seal_dir(
    directory: str | os.PathLike[str],
    recipient: str,
    dest: str | os.PathLike[str] | None = None,
    *,
    compress: bool = True,
) -> Path:
    """Seal a demo directory as is (its members map is already written).

    ``dest`` defaults to ``<directory>.age`` next to the directory.
    """
    target = Path(dest) if dest is not None else Path(str(directory).rstrip("/") + ".age")
    return sealing.seal_dir(directory, recipient, target, compress=compress, update_members=False)
