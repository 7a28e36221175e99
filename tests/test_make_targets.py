"""`make worker` runs a worker only; `make beat` runs the one beat, keeping its schedule under var/."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def dry_run(target: str) -> str:
    # The bootstrap prerequisite is up to date in this checkout (or printed, harmlessly).
    # Under `make test` the parent make's MAKEFLAGS/MAKELEVEL reach this child, which would then
    # print "Entering/Leaving directory" lines: run it as a top-level make.
    env = {key: value for key, value in os.environ.items() if key not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", target], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if not line.startswith("make")][-1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_worker_starts_a_worker_without_an_embedded_beat():
    command = dry_run("worker")
    assert "celery -A leaderboard.site worker" in command
    assert " -B" not in command and "--beat" not in command


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_beat_starts_beat_whose_schedule_file_lands_under_var_and_not_the_repository_root(tmp_path):
    assert "celery -A leaderboard.site beat" in dry_run("beat")
    before = set(REPO_ROOT.glob("celerybeat-schedule*"))
    env = {**os.environ, "PODIUM_VAR_DIR": str(tmp_path), "CELERY_BROKER_URL": "memory://", "DATABASE_URL": ""}
    beat = subprocess.Popen(
        [str(REPO_ROOT / ".venv" / "bin" / "celery"), "-A", "leaderboard.site", "beat", "--loglevel=INFO"],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("celerybeat-schedule*")):
            assert beat.poll() is None, "beat exited"
            assert time.monotonic() < deadline, "beat wrote no schedule file under PODIUM_VAR_DIR"
            time.sleep(0.1)
    finally:
        os.killpg(beat.pid, signal.SIGTERM)
        beat.wait(timeout=15)
    assert set(REPO_ROOT.glob("celerybeat-schedule*")) == before
