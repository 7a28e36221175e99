"""Benchmark the verification worker.

Run: .venv/bin/python bench/verify_bench.py [--bundles 60] [--sizes 50,200]

1. Throughput: bundles verified per second by one worker process. The
   standard bundle (11 tasks x 100 episodes, sealed to the site key) is
   uploaded with submission_create, then a loop calls submission_verify -- the
   very service the Celery task runs: decrypt, read, recompute, compare,
   bootstrap CIs, write the Run and refresh the standings. Database: a fresh
   SQLite file in a temporary directory (tables built from the models).
   Target: >= 50 bundles/s.
2. Memory: peak resident memory above the process baseline while opening
   (decrypt + read + hash every member) bundles carrying a 50 MiB and a
   200 MiB artifact, each in a fresh subprocess (VmHWM - VmRSS before), plus
   tracemalloc's peak. Target: < 64 MiB, flat in bundle size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

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
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "leaderboard.settings")
    import django

    django.setup()
    from django.apps import apps
    from django.db import connection

    with connection.schema_editor() as editor:
        for model in apps.get_models():
            if model._meta.managed and not model._meta.proxy:
                editor.create_model(model)


def throughput(count: int, work: Path, database_url: str, resamples: list[int]) -> None:
    setup_django(work, database_url)
    from django.conf import settings
    from django.db import connection

    print(f"throughput database: {connection.vendor} ({connection.settings_dict['NAME']})")
    import io

    from django.contrib.auth import get_user_model
    from django.db import transaction

    from leaderboard.celery import app
    from submissions import site_keys
    from submissions.bundle.demo import (
        DEMO_BENCHMARK,
        DEMO_RELEASE,
        demo_release_spec,
        seal_dir,
        write_paper_gap_bundle_dir,
    )
    from submissions.services.submissions import submission_create
    from submissions.services.verification import submission_verify

    # Uploads enqueue verification on commit; keep it queued (in memory) so the timed loop does the work.
    app.conf.task_always_eager = False
    spec, _ = demo_release_spec()
    _release_rows(spec, DEMO_BENCHMARK, DEMO_RELEASE)
    user = get_user_model().objects.create_user(username="bench")
    recipient = site_keys.current_public_key()[1]
    directory = write_paper_gap_bundle_dir(work / "standard", episodes_per_task=100)
    for bootstrap in resamples:
        settings.PODIUM_BOOTSTRAP_RESAMPLES = bootstrap
        ids = []
        for _ in range(count):
            # age sealing is randomised: every sealing of the same run is a distinct upload
            sealed = seal_dir(directory, recipient, work / "standard.age").read_bytes()
            with transaction.atomic():
                submission, _ = submission_create(user=user, uploaded_file=io.BytesIO(sealed))
            ids.append(submission.pk)
        durations = []
        verdicts = set()
        cpu_start = time.process_time()
        start = time.perf_counter()
        for submission_id in ids:
            began = time.perf_counter()
            verdicts.add(submission_verify(submission_id=submission_id).verdict)
            durations.append(time.perf_counter() - began)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        label = f"with {bootstrap}-resample bootstrap CIs" if bootstrap else "without CIs"
        print(
            f"throughput {label}: {count / elapsed:.1f} bundles/s per worker process (target >= 50); "
            f"{count} standard bundles (11 tasks x 100 episodes) in {elapsed:.2f} s, "
            f"median {statistics.median(durations) * 1000:.1f} ms, max {max(durations) * 1000:.1f} ms, "
            f"verdicts {sorted(verdicts)}"
        )
        print(
            f"  worker CPU: {cpu / count * 1000:.1f} ms per bundle = {count / cpu:.1f} bundles/s per fully used core "
            "(excludes the database server's time; wall-clock figures suffer on a loaded machine)"
        )


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
    parser.add_argument("--resamples", default="1000,200,0", help="bootstrap resamples to compare (0 = no CIs)")
    parser.add_argument("--open-child", nargs=2, metavar=("BUNDLE", "IDENTITY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.open_child:
        open_memory(*args.open_child)
        return
    with tempfile.TemporaryDirectory(prefix="podium-verify-bench-") as tmp:
        work = Path(tmp)
        memory([int(size) for size in args.sizes.split(",")], work)
        throughput(args.bundles, work, args.database_url, [int(n) for n in args.resamples.split(",")])


if __name__ == "__main__":
    main()
