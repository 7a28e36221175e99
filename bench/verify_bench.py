"""Benchmark the verification worker.

Run: .venv/bin/python bench/verify_bench.py [--bundles 60] [--sizes 50,200] [--database-url postgres://...]
(--sizes "" skips the memory part)

1. Throughput: bundles verified per second by one worker process. The
   standard bundle (11 tasks x 100 episodes, sealed to the site key) is
   uploaded with submission_create, then a loop calls submission_verify -- the
   very service the Celery task runs: decrypt, read, recompute, compare,
   write the Run and refresh the standings. Then a loop calls
   run_confidence_compute for those runs -- the compute_run_confidence task
   that follows each run after commit (bootstrap CIs, PODIUM_BOOTSTRAP_RESAMPLES).
   Rounds alternate so both see the same machine load. Printed per worker
   process by CPU time (the honest figure on a shared machine) and by wall
   clock, plus the baseline "intervals inline" cost measured in the same run.
   Database: a fresh SQLite file in a temporary directory, or a scratch
   PostgreSQL database (tables built from the models). Target: >= 50 bundles/s.
   Also printed: verification plus intervals together (what one worker process
   does per run; target >= 50 runs/s by CPU).
   Also printed: the same work with no database at all (open, evaluate, intervals, the pure
   functions the services call), the ceiling of that rate on the machine at hand.
3. A full release (--preload, default 10000,100000): the same release is
   loaded with that many runs (one agent version each, bulk-inserted, the
   board rebuilt once), then bundles are verified again, both as re-runs of
   one agent version and as a new agent version each (a new board row; the
   ranks below it move as they are read, no other row is rewritten). Prints
   each rate and its ratio to the empty release (target: within 1.5x, i.e.
   ratio >= 0.67).
4. Scaling (PostgreSQL only): the same number of uploads verified (with
   their intervals) by one worker process, then by two at once sharing the
   database; prints the wall-clock ratio (target >= 1.7x). Then two worker
   processes again while a reader thread reads the board: how many reads
   showed ranks other than exactly 1..n (a phase of its own, since the
   reader's CPU in only one timed phase would bias the ratio).
5. Latency (with --broker-url, a Redis database of your own): a real Celery
   worker consuming both queues (verdicts first), uploads at 2/s through
   submission_create; prints upload->verdict p50 and p95 (targets < 1 s,
   < 2 s) and how long the intervals followed.
6. Memory: peak resident memory above the process baseline while opening
   (decrypt + read + hash every member) bundles carrying a 50 MiB and a
   200 MiB artifact, each in a fresh subprocess (VmHWM - VmRSS before), plus
   tracemalloc's peak. Target: < 64 MiB, flat in bundle size.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MiB = 1024 * 1024


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def setup_django(work: Path, database_url: str = "") -> None:
    import pyrage

    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)  # tasks would run eagerly; the loop calls the service itself
    os.environ["PODIUM_VAR_DIR"] = str(work)
    os.environ["MEDIA_ROOT"] = str(work / "media")
    os.environ["PODIUM_SITE_KEYS"] = str(pyrage.x25519.Identity.generate())
    os.environ["LOG_LEVEL"] = "WARNING"
    # As a deployed worker runs: with DEBUG on, Django keeps every query's text and timing
    # (its debug cursor), which cost about a tenth of a verification's CPU.
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.site.settings")
    import django

    django.setup()
    from django.apps import apps
    from django.db import connection

    with connection.schema_editor() as editor:
        for model in apps.get_models():
            if model._meta.managed and not model._meta.proxy:
                editor.create_model(model)
    if connection.vendor == "postgresql":
        # What migration leaderboard 0002_standing_fillfactor does (tables here come from the models).
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE leaderboard_standing SET (fillfactor = 50)")


def throughput(count: int, work: Path, database_url: str, rounds: int) -> None:
    """Verify ``count`` fresh uploads of the standard bundle, in ``rounds`` alternating rounds of
    (verification, then the runs' confidence follow-up), and print both per-process rates."""
    setup_django(work, database_url)
    from django.conf import settings
    from django.db import connection

    print(f"throughput database: {connection.vendor} ({connection.settings_dict['NAME']})")
    import io

    from django.contrib.auth import get_user_model
    from django.db import transaction

    from leaderboard.models import Run
    from leaderboard.site.celery import app
    from submissions import site_keys
    from submissions.bundle.demo import (
        DEMO_BENCHMARK,
        DEMO_RELEASE,
        demo_release_spec,
        seal_dir,
        write_paper_gap_bundle_dir,
    )
    from submissions.services.runs import run_confidence_compute
    from submissions.services.submissions import submission_create
    from submissions.services.verification import submission_verify

    # Uploads enqueue verification, and runs their confidence follow-up, on commit; keep those
    # queued (in memory) so the timed loops below do the work themselves.
    app.conf.task_always_eager = False
    spec, _ = demo_release_spec()
    _release_rows(spec, DEMO_BENCHMARK, DEMO_RELEASE)
    user = get_user_model().objects.create_user(username="bench")
    recipient = site_keys.current_public_key()[1]
    # The demo release withholds anchors, and a withheld-anchor task is scored only from results
    # signed by a registered evaluator key: the standard bundle is signed, as a real one is.
    from leaderboard.models import Evaluator
    from submissions.bundle.signatures import generate_signing_key, private_key_pem, public_key_b64
    from submissions.services.signing_keys import signing_key_register

    evaluator_key = generate_signing_key()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(evaluator_key), user=None
    )
    # The later parts (and the latency part's child process) seal more bundles: they sign with this key.
    _evaluator_key_path(work).write_bytes(private_key_pem(evaluator_key))
    verify = Timing()
    follow_up = Timing()
    verdicts: set[str] = set()
    per_round = max(1, count // rounds)
    for _ in range(rounds):
        ids = []
        for _ in range(per_round):
            # Results of their own (a fresh seed): one account's signed podium-bundle/1 results are
            # accepted once (duplicate_results), so re-sealing one directory would time rejections.
            directory = write_paper_gap_bundle_dir(
                work / "standard", episodes_per_task=100, sign_with=evaluator_key, seed=_fresh_seed()
            )
            sealed = seal_dir(directory, recipient, work / "standard.age").read_bytes()
            with transaction.atomic():
                submission, _ = submission_create(user=user, uploaded_file=io.BytesIO(sealed))
            ids.append(submission.pk)
        with verify:
            for submission_id in ids:
                verdicts.add(verify.item(lambda sid=submission_id: submission_verify(submission_id=sid).verdict))
        run_ids = list(Run.objects.filter(submission__pk__in=ids).values_list("pk", flat=True))
        with follow_up:
            for run_id in run_ids:
                follow_up.item(lambda rid=run_id: run_confidence_compute(run_id=rid))
    n = verify.count
    print(
        f"verification: {n / verify.cpu:.1f} bundles/s per worker process by CPU time "
        f"({verify.cpu / n * 1000:.1f} ms CPU per bundle; target >= 50/s); wall clock {n / verify.wall:.1f}/s "
        f"(median {verify.median_ms:.1f} ms, max {verify.max_ms:.1f} ms); {n} standard bundles "
        f"(11 tasks x 100 episodes) in {rounds} rounds, verdicts {sorted(verdicts)}"
    )
    print(f"  by CPU time, round by round: {verify.per_round()} bundles/s")
    m = follow_up.count
    print(
        f"confidence follow-up (compute_run_confidence after commit, {settings.PODIUM_BOOTSTRAP_RESAMPLES} "
        f"resamples): {follow_up.cpu / m * 1000:.1f} ms CPU per run = {m / follow_up.cpu:.1f} runs/s by CPU; "
        f"wall clock {m / follow_up.wall:.1f}/s"
    )
    combined = (verify.cpu + follow_up.cpu) / n
    print(
        f"  baseline in this run -- verification with the intervals inline (verification + follow-up, the "
        f"work before they moved off the path): {1 / combined:.1f} bundles/s by CPU; "
        f"verification alone is {combined / (verify.cpu / n):.2f}x that"
    )
    print(
        f"verification + intervals (what a worker process does per run): {1 / combined:.1f} runs/s per worker "
        f"process by CPU (target >= 50/s): {'OK' if 1 / combined >= 50 else 'MISSED'}"
    )
    print(
        "  (CPU figures are this process only: the honest per-worker rate on a shared, noisy machine; "
        "they exclude the database server's own time, which wall clock includes)"
    )
    parts = _pure_floor(ids)
    floor = sum(parts)
    print(
        f"  the same work with no database at all (the pure functions the services call, on {len(ids)} of these "
        f"bundles: open {parts[0] * 1000:.1f} + evaluate {parts[1] * 1000:.1f} + intervals {parts[2] * 1000:.1f} ms): "
        f"{floor * 1000:.1f} ms CPU per run = {1 / floor:.1f} runs/s, the "
        f"ceiling of verification + intervals on this machine; the database side (ORM, queries, commits) is "
        f"{(combined - floor) * 1000:.1f} ms per run, {(combined - floor) / combined:.0%} of the whole"
    )
    # The empty release's verification + intervals rates (by CPU, by wall clock), for part 3.
    return 1 / combined, n / (verify.wall + follow_up.wall)


def _pure_floor(submission_ids: list[Any]) -> tuple[float, ...]:
    """CPU seconds per run (open, evaluate, intervals) of what verification + intervals compute
    with no database: open the stored bundle, evaluate it, bootstrap its intervals (the very
    functions the services call, with the release's context read once, outside the timer).
    What the pipeline can never beat."""
    from django.conf import settings

    from scoring.uncertainty import run_intervals_from_columns, unpack_run_columns
    from submissions.models import Submission
    from submissions.services.runs import CONFIDENCE_SEED, paper_gap_evaluate, paper_gap_load
    from submissions.services.stored_bundles import bundle_local_path, open_stored_bundle

    submissions = list(Submission.objects.filter(pk__in=submission_ids))
    copies = []
    for submission in submissions:
        # The local scratch copy is storage I/O, made before the timer, as the context's reads are.
        with bundle_local_path(submission.file.name) as path:
            copies.append(path.read_bytes())
    with tempfile.TemporaryDirectory() as scratch:
        paths = []
        for index, data in enumerate(copies):
            paths.append(Path(scratch) / f"{index}.age")
            paths[-1].write_bytes(data)
        context = paper_gap_load(submission=submissions[0], bundle=open_stored_bundle(paths[0]))
        resamples = settings.PODIUM_BOOTSTRAP_RESAMPLES
        spent = [0.0, 0.0, 0.0]  # open, evaluate, intervals
        for path in paths:
            began = time.process_time()
            bundle = open_stored_bundle(path)
            opened = time.process_time()
            outcome = paper_gap_evaluate(bundle, context)
            evaluated = time.process_time()
            assert outcome.verdict == "validated", outcome.verdict
            columns = unpack_run_columns(outcome.episode_columns)
            assert columns is not None
            run_intervals_from_columns(context.spec, columns, resamples=resamples, seed=CONFIDENCE_SEED)
            for position, (start, end) in enumerate(
                ((began, opened), (opened, evaluated), (evaluated, time.process_time()))
            ):
                spent[position] += end - start
        return tuple(part / len(paths) for part in spent)


_seeds = itertools.count(1)


def _fresh_seed() -> int:
    """A results seed no other upload of this run used."""
    return next(_seeds)


# The latency part's child process seeds its uploads from here, far above the parent's seeds.
_PACED_SEEDS = 1_000_000


def _evaluator_key_path(work: Path) -> Path:
    """Where the throughput part leaves the registered evaluator's private key (PEM)."""
    return work / "evaluator-key.pem"


def _sealed_uploads(work: Path, count: int, *, new_versions: bool, tag: str) -> list[Any]:
    """``count`` fresh uploads of the standard bundle (committed; their tasks left queued)."""
    import io

    from django.contrib.auth import get_user_model
    from django.db import transaction

    from submissions import site_keys
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
    from submissions.services.submissions import submission_create

    user = get_user_model().objects.get(username="bench")
    recipient = site_keys.current_public_key()[1]
    sign_with = _evaluator_key_path(work).read_bytes()  # the demo release withholds anchors: results are signed
    ids = []
    for i in range(count):
        version = f"{tag}.{i}" if new_versions else "1.0.0"
        directory = write_paper_gap_bundle_dir(
            work / f"{tag}-{i}", episodes_per_task=100, agent_version=version, sign_with=sign_with, seed=_fresh_seed()
        )
        sealed = seal_dir(directory, recipient, work / f"{tag}-{i}.age").read_bytes()
        with transaction.atomic():
            submission, _ = submission_create(user=user, uploaded_file=io.BytesIO(sealed))
        ids.append(submission.pk)
    return ids


def _verify_cpu(ids: list[Any]) -> tuple[float, float]:
    """Verify the uploads as a worker does (verdict, then the intervals); runs per second of this
    process's CPU, and per second of wall clock (which includes the database server's work)."""
    from leaderboard.models import Run
    from submissions.services.runs import run_confidence_compute
    from submissions.services.verification import submission_verify

    began, wall = time.process_time(), time.perf_counter()
    for submission_id in ids:
        verdict = submission_verify(submission_id=submission_id).verdict
        assert verdict == "validated", verdict
        run_confidence_compute(run_id=Run.objects.values_list("pk", flat=True).get(submission__pk=submission_id))
    return len(ids) / (time.process_time() - began), len(ids) / (time.perf_counter() - wall)


def _preload(total: int) -> float:
    """Bulk-insert runs (one new agent version each) into the demo release up to ``total`` runs,
    then rebuild its board once; returns the seconds it took."""
    import hashlib
    import random

    from django.contrib.auth import get_user_model
    from django.db import transaction

    from bench.leaderboard_bench import analyze_after_bulk_load
    from leaderboard.models import Agent, AgentVersion, Release, Run
    from leaderboard.services.paper_gap_standings import standings_refresh
    from submissions.models import Submission

    began = time.perf_counter()
    release = Release.objects.get()
    user = get_user_model().objects.get(username="bench")
    existing = Run.objects.filter(release=release).count()
    rng = random.Random(total)
    batch = 10_000
    for start in range(existing, total, batch):
        size = min(batch, total - start)
        with transaction.atomic():
            agents = Agent.objects.bulk_create(
                [Agent(slug=f"preload-{start + i}", name=f"Preload {start + i}") for i in range(size)]
            )
            versions = AgentVersion.objects.bulk_create([AgentVersion(agent=agent, version="1") for agent in agents])
            submissions = Submission.objects.bulk_create(
                [
                    Submission(
                        submitter=user, kind="paper_gap", release=release, file=f"bundles/p{start + i}.age",
                        sha256=hashlib.sha256(f"preload-{start + i}".encode()).hexdigest(), size=1,
                        status="done", verdict="validated",
                    )
                    for i in range(size)
                ]
            )  # fmt: skip
            runs = []
            for version in versions:
                finals = [rng.uniform(0.2, 1.4) for _ in range(11)]
                runs.append(
                    Run(
                        release=release, agent_version=version, level="validated",
                        overall=sum(finals) / 11, reproduction=sum(finals[:7]) / 7, open=sum(finals[7:]) / 4,
                        pass_rate=rng.uniform(0.5, 1.0), covered=11, required=11, complete=True,
                        confidence={"overall": [0.1, 0.2]},
                    )
                )  # fmt: skip
            Run.objects.bulk_create(runs)
            for submission, run in zip(submissions, runs, strict=True):
                submission.run = run
            Submission.objects.bulk_update(submissions, ["run"])
    with transaction.atomic():
        standings_refresh(release=release)
    analyze_after_bulk_load()
    return time.perf_counter() - began


def preloaded(work: Path, sizes: list[int], empty: tuple[float, float], count: int) -> None:
    """Verification + intervals in a release already holding ``sizes`` runs, against the empty release."""
    empty_cpu, empty_wall = empty
    for total in sizes:
        seconds = _preload(total)
        rerun_cpu, rerun_wall = _verify_cpu(_sealed_uploads(work, count, new_versions=False, tag=f"rerun{total}"))
        fresh_cpu, fresh_wall = _verify_cpu(_sealed_uploads(work, count, new_versions=True, tag=f"new{total}"))
        worst = min(rerun_cpu / empty_cpu, fresh_cpu / empty_cpu)
        print(
            f"release with {total} runs (loaded and board rebuilt in {seconds:.0f} s): verification + intervals "
            f"by CPU {rerun_cpu:.1f} runs/s as re-runs of one version (ratio to the empty release "
            f"{rerun_cpu / empty_cpu:.2f}), {fresh_cpu:.1f} runs/s as a new agent version each (ratio "
            f"{fresh_cpu / empty_cpu:.2f}); target ratio >= 0.67 (within 1.5x): {'OK' if worst >= 0.67 else 'MISSED'}"
        )
        print(
            f"  by wall clock (includes the database server's work, e.g. placing the new row; noisy on a "
            f"shared machine): re-runs {rerun_wall:.1f} runs/s (ratio {rerun_wall / empty_wall:.2f}), new versions "
            f"{fresh_wall:.1f} runs/s (ratio {fresh_wall / empty_wall:.2f})"
        )


def verify_child(ids_path: str, start_at: float) -> None:
    """Child process: at ``start_at`` (epoch seconds, so that start-up is not timed and both
    children begin together), verify the listed uploads as a worker would (verdict, then
    intervals); print when it finished as JSON."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.site.settings")
    import django

    django.setup()
    from django.db import connection

    ids = Path(ids_path).read_text().split()
    connection.ensure_connection()
    time.sleep(max(0.0, start_at - time.time()))
    _verify_cpu(ids)
    print(json.dumps({"end": time.time(), "count": len(ids)}))


def scaling(work: Path, count: int) -> None:
    """One worker process, then two at once, each verifying ``count`` uploads (wall-clock scaling); then
    two again while a reader checks that every board read shows whole ranks."""
    import threading

    from django.db import connection

    from leaderboard.models import Release, Standing
    from leaderboard.selectors.standing_ranks import with_rank

    def run_children(groups: list[list[Any]]) -> float:
        paths = []
        for number, group in enumerate(groups):
            path = work / f"ids-{len(groups)}-{number}.txt"
            path.write_text("\n".join(str(submission_id) for submission_id in group))
            paths.append(path)
        connection.close()  # the children must not inherit it
        start_at = time.time() + 8  # after both children started up
        children = [
            subprocess.Popen(
                [sys.executable, __file__, "--verify-child", str(path), str(start_at)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for path in paths
        ]
        ends = []
        for child in children:
            output, _ = child.communicate(timeout=600)
            assert child.returncode == 0, output
            ends.append(json.loads(output.strip().splitlines()[-1])["end"])
        return max(ends) - start_at

    release = Release.objects.get()
    stop = threading.Event()
    found = {"reads": 0, "torn": 0}

    def reader() -> None:
        while not stop.is_set():
            # Ranks are computed when read (leaderboard.selectors.standing_ranks), as a page does.
            rows = with_rank(Standing.objects.filter(release=release, tab="overall"), whole_tab=True)
            ranks = list(rows.values_list("rank", flat=True))
            found["reads"] += 1
            found["torn"] += sorted(ranks) != list(range(1, len(ranks) + 1))
            time.sleep(0.02)
        connection.close()

    # The two timed phases run alone: a board reader in this process during only one of them
    # would take its CPU (a core of two, shared with PostgreSQL) from that phase alone and bias
    # the ratio. The reads' consistency is checked in a third phase of its own, below.
    one = run_children([_sealed_uploads(work, count, new_versions=True, tag="one")])
    two = run_children([_sealed_uploads(work, count, new_versions=True, tag=f"two{n}") for n in range(2)])
    ratio = (2 * count / two) / (count / one)
    print(
        f"scaling: one worker process {count / one:.1f} runs/s, two at once {2 * count / two:.1f} runs/s "
        f"(wall clock, verification + intervals, new agent versions into one release): {ratio:.2f}x "
        f"(target >= 1.7x): {'OK' if ratio >= 1.7 else 'MISSED'} (os.cpu_count() = {os.cpu_count()})"
    )
    groups = [_sealed_uploads(work, count, new_versions=True, tag=f"read{n}") for n in range(2)]
    thread = threading.Thread(target=reader)
    thread.start()
    run_children(groups)
    stop.set()
    thread.join()
    print(
        f"  board reads while two worker processes land runs: {found['reads']} reads, {found['torn']} showing "
        f"ranks other than exactly 1..n (target 0): {'OK' if found['reads'] and not found['torn'] else 'MISSED'}"
    )


def latency(work: Path, broker_url: str, uploads: int, rate: float) -> None:
    """A real Celery worker on a queue of its own, and an uploading child process at ``rate``/s."""
    import uuid
    from urllib.parse import urlsplit

    from django.db import connection

    queue = f"podium-bench-{uuid.uuid4().hex[:8]}"
    followups = f"{queue}-followups"
    parts = urlsplit(broker_url)
    cache_db = int((parts.path or "/0").lstrip("/") or 0) + 1  # the cache on the next Redis database
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker_url,
        "REDIS_URL": parts._replace(path=f"/{cache_db}").geturl(),
        "CELERY_QUEUE": queue,
        "DB_CONN_MAX_AGE": "60",
    }
    connection.close()
    log = (work / "worker.log").open("wb")
    worker = subprocess.Popen(
        [str(Path(sys.executable).parent / "celery"), "-A", "leaderboard.site", "worker", "--pool=solo",
         "-Q", f"{queue},{followups}", "-n", f"{queue}@%h", "--without-heartbeat", "--without-gossip",
         "--without-mingle", "--loglevel=WARNING"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        time.sleep(6)  # the worker starts
        child = subprocess.run(
            [sys.executable, __file__, "--latency-child", str(work), str(uploads), str(rate)],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if child.returncode != 0:
            raise RuntimeError(child.stdout + child.stderr)
        print(child.stdout.strip().splitlines()[-1])
    finally:
        worker.terminate()
        worker.wait(timeout=30)
        log.close()
        import redis

        broker = redis.Redis.from_url(broker_url)
        for name in (queue, followups):
            broker.delete(name, f"_kombu.binding.{name}")


def latency_child(work: Path, uploads: int, rate: float) -> None:
    """Child process (broker configured): upload at ``rate``/s, wait for every verdict, print the line."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.site.settings")
    import django

    django.setup()
    from leaderboard.models import Run
    from submissions.models import Submission

    ids = _sealed_uploads_paced(work, uploads, rate)
    deadline = time.monotonic() + 120
    while Submission.objects.filter(pk__in=ids, status="done").count() < len(ids):
        if time.monotonic() > deadline:
            raise RuntimeError("uploads did not all reach a verdict within 120 s")
        time.sleep(0.2)
    missing_at_last_verdict = Run.objects.filter(submission__pk__in=ids, confidence={}).count()
    rows = list(Submission.objects.filter(pk__in=ids).values_list("created_at", "finished_at", "verdict"))
    delays = sorted((finished - created).total_seconds() for created, finished, _ in rows)
    verdicts = sorted({verdict for _, _, verdict in rows})
    p50, p95 = delays[len(delays) // 2], delays[min(len(delays) - 1, int(0.95 * len(delays)))]
    print(
        f"latency: {len(ids)} uploads at {rate:g}/s to a live worker (one process, both queues, verdicts first): "
        f"upload->verdict p50 {p50:.2f} s (target < 1 s), p95 {p95:.2f} s (target < 2 s), max {delays[-1]:.2f} s: "
        f"{'OK' if p50 < 1 and p95 < 2 and verdicts == ['validated'] else 'MISSED'}; verdicts {verdicts}; "
        f"{len(ids) - missing_at_last_verdict} of {len(ids)} runs already had their intervals at the last verdict"
    )


def _sealed_uploads_paced(work: Path, count: int, rate: float) -> list[Any]:
    """Seal ahead, then upload at ``rate`` per second (each enqueued on commit)."""
    import io

    from django.contrib.auth import get_user_model
    from django.db import transaction

    from submissions import site_keys
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
    from submissions.services.submissions import submission_create

    user = get_user_model().objects.get(username="bench")
    recipient = site_keys.current_public_key()[1]
    sign_with = _evaluator_key_path(work).read_bytes()  # the demo release withholds anchors: results are signed
    sealed = []
    for i in range(count):
        directory = write_paper_gap_bundle_dir(
            work / f"paced-{i}",
            episodes_per_task=100,
            agent_version=f"9.{i}",
            sign_with=sign_with,
            seed=_PACED_SEEDS + i,
        )
        sealed.append(seal_dir(directory, recipient, work / f"paced-{i}.age").read_bytes())
    ids = []
    began = time.perf_counter()
    for i, data in enumerate(sealed):
        due = began + i / rate
        if time.perf_counter() < due:
            time.sleep(due - time.perf_counter())
        with transaction.atomic():
            submission, _ = submission_create(user=user, uploaded_file=io.BytesIO(data))
        ids.append(submission.pk)
    return ids


class Timing:
    """Accumulated wall-clock and process CPU time over timed blocks, with per-item wall times."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.durations: list[float] = []
        self.rounds: list[tuple[int, float]] = []

    def __enter__(self) -> Timing:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        self._items = len(self.durations)
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall += time.perf_counter() - self._wall
        cpu = time.process_time() - self._cpu
        self.cpu += cpu
        self.rounds.append((len(self.durations) - self._items, cpu))

    def per_round(self) -> str:
        """Items per CPU second in each round (the spread shows the machine's noise)."""
        return ", ".join(f"{items / cpu:.1f}" for items, cpu in self.rounds if cpu > 0)

    def item(self, work: Callable[[], Any]) -> Any:
        began = time.perf_counter()
        result = work()
        self.durations.append(time.perf_counter() - began)
        return result

    @property
    def count(self) -> int:
        return len(self.durations)

    @property
    def median_ms(self) -> float:
        return statistics.median(self.durations) * 1000

    @property
    def max_ms(self) -> float:
        return max(self.durations) * 1000


def _release_rows(spec, benchmark_slug: str, version: str) -> None:
    from leaderboard.models import Benchmark, Evaluator, Release, ReleaseTask, Task

    benchmark = Benchmark.objects.create(slug=benchmark_slug, name=benchmark_slug, scheme="paper_gap")
    evaluator = Evaluator.objects.create(simulator="demo-sim")
    release = Release.objects.create(
        benchmark=benchmark,
        version=version,
        required_task_set_hash=spec.required_task_set_hash,
        manifest_sha256="0" * 64,
        published=True,
    )
    for position, slug in enumerate(sorted(spec.tasks)):
        task_spec = spec.tasks[slug]
        task = Task.objects.create(
            benchmark=benchmark,
            slug=slug,
            title=slug,
            platform="manipulation",
            direction="learning",
            simulator=evaluator,
            genre=task_spec.genre,
            mode="batch",
            metric_name="metric",
            metric_direction=task_spec.direction,
            paper_md="-",
            brief_md="-",
        )
        ReleaseTask.objects.create(
            release=release,
            task=task,
            position=position,
            genre=task_spec.genre,
            metric_direction=task_spec.direction,
            paper_value=task_spec.paper_value,
            score_cap=task_spec.cap,
            penalties=[{"metric": m, "limit": limit} for m, limit in sorted(task_spec.penalties.items())],
        )


def open_memory(path: str, identity: str) -> None:
    """Child process: open one bundle, print JSON with the peaks above the baseline."""
    from submissions.bundle import open_bundle

    baseline_kib = _status_kib("VmRSS")
    tracemalloc.start()
    began = time.perf_counter()
    bundle = open_bundle(path, [identity])
    elapsed = time.perf_counter() - began
    _, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    peak_kib = _status_kib("VmHWM")
    print(
        json.dumps(
            {
                "members": len(bundle.member_sizes),
                "rss_above_baseline_mib": (peak_kib - baseline_kib) / 1024,
                "tracemalloc_peak_mib": traced_peak / MiB,
                "seconds": elapsed,
            }
        )
    )


def memory(sizes_mib: list[int], work: Path) -> None:
    import pyrage

    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir

    identity = pyrage.x25519.Identity.generate()
    results = {}
    for size in sizes_mib:
        directory = write_paper_gap_bundle_dir(work / f"big-{size}", artifact_bytes=size * MiB)
        sealed = seal_dir(directory, str(identity.to_public()), work / f"big-{size}.age")
        output = subprocess.run(
            [sys.executable, __file__, "--open-child", str(sealed), str(identity)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        results[size] = json.loads(output.strip().splitlines()[-1])
        figures = results[size]
        print(
            f"memory: {sealed.stat().st_size / MiB:.0f} MiB sealed bundle opened in {figures['seconds']:.2f} s: "
            f"peak RSS +{figures['rss_above_baseline_mib']:.1f} MiB above baseline, "
            f"tracemalloc peak {figures['tracemalloc_peak_mib']:.1f} MiB (target < 64 MiB)"
        )
    if len(results) >= 2:
        small, large = min(results), max(results)
        ratio = results[large]["rss_above_baseline_mib"] / max(results[small]["rss_above_baseline_mib"], 0.1)
        print(f"  flatness: peak RSS at {large} MiB / at {small} MiB = {ratio:.2f} (1.0 = flat in bundle size)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundles", type=int, default=60, help="bundles in the throughput loop")
    parser.add_argument("--sizes", default="50,200", help="artifact sizes in MiB for the memory part")
    parser.add_argument(
        "--database-url",
        default="",
        help="a scratch PostgreSQL database for the throughput part (its tables are created; default: temp SQLite)",
    )
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds of verification and follow-up")
    parser.add_argument("--preload", default="10000,100000", help="runs already in the release (part 3); '' skips")
    parser.add_argument("--per-size", type=int, default=20, help="bundles verified per preloaded size and kind")
    parser.add_argument("--scaling", type=int, default=30, help="uploads per worker process in part 4 (0 skips)")
    parser.add_argument(
        "--broker-url", default="", help="a Redis database of your own for part 5 (latency); '' skips it"
    )
    parser.add_argument("--uploads", type=int, default=40, help="uploads in part 5, at --upload-rate per second")
    parser.add_argument("--upload-rate", type=float, default=2.0)
    parser.add_argument("--open-child", nargs=2, metavar=("BUNDLE", "IDENTITY"), help=argparse.SUPPRESS)
    parser.add_argument("--verify-child", nargs=2, metavar=("IDS", "START_AT"), help=argparse.SUPPRESS)
    parser.add_argument("--latency-child", nargs=3, metavar=("WORK", "UPLOADS", "RATE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.open_child:
        open_memory(*args.open_child)
        return
    if args.verify_child:
        verify_child(args.verify_child[0], float(args.verify_child[1]))
        return
    if args.latency_child:
        latency_child(Path(args.latency_child[0]), int(args.latency_child[1]), float(args.latency_child[2]))
        return
    with tempfile.TemporaryDirectory(prefix="podium-verify-bench-") as tmp:
        work = Path(tmp)
        if args.sizes:
            memory([int(size) for size in args.sizes.split(",")], work)
        empty = throughput(args.bundles, work, args.database_url, args.rounds)
        from django.db import connection

        postgres = connection.vendor == "postgresql"
        if args.broker_url:
            latency(work, args.broker_url, args.uploads, args.upload_rate)
        if args.scaling and postgres:
            scaling(work, args.scaling)
        if args.preload:
            preloaded(work, [int(size) for size in args.preload.split(",")], empty, args.per_size)


if __name__ == "__main__":
    main()
