"""Shared fixtures.

Tests that need a live service are marked `services`. They run whenever the
services are configured (DATABASE_URL / CELERY_BROKER_URL); without them they
skip with a reason, unless REQUIRE_SERVICES is set, in which case a missing
service is a failure, never a silent skip (CI sets it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings

REQUIRE_SERVICES = bool(os.environ.get("REQUIRE_SERVICES"))


def services_missing() -> str | None:
    """Why the live services are not available, or None when they are."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return "DATABASE_URL does not point at PostgreSQL"
    if not os.environ.get("CELERY_BROKER_URL", "").startswith("redis"):
        return "CELERY_BROKER_URL does not point at Redis"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = services_missing()
    if reason is None:
        return
    for item in items:
        # Under REQUIRE_SERVICES the test is left to _services_required, which fails it: an
        # xfail marker would have reported the missing service as an (expected) pass.
        if "services" in item.keywords and not REQUIRE_SERVICES:
            item.add_marker(pytest.mark.skip(reason=f"needs live services: {reason}"))


def s3_missing() -> str | None:
    """Why S3 storage is not configured for this run, or None when it is."""
    if not getattr(settings, "PODIUM_S3_BUCKET", ""):
        return "PODIUM_S3_BUCKET is not set (no S3-compatible storage; .ci/run starts SeaweedFS)"
    return None


@pytest.fixture(autouse=True)
def _services_required(request: pytest.FixtureRequest) -> None:
    """Tests marked `services` or `s3` fail under REQUIRE_SERVICES when their service is
    missing; without it, `s3` tests skip with the reason (`services` ones skip at collection)."""
    if request.node.get_closest_marker("services") is not None and REQUIRE_SERVICES:
        reason = services_missing()
        if reason is not None:
            pytest.fail(f"REQUIRE_SERVICES is set but {reason}")
    if request.node.get_closest_marker("s3") is None:
        return
    reason = s3_missing()
    if reason is None:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"REQUIRE_SERVICES is set but {reason}")
    pytest.skip(f"needs S3 storage: {reason}")


# ------------------------------------------------------------------ Celery

# One queue per test session, so a worker started by these tests never takes
# tasks of another suite (or another engineer's run) sharing the same Redis.
TEST_QUEUE = f"podium-test-{uuid.uuid4().hex[:12]}"
TEST_FOLLOWUP_QUEUE = f"{TEST_QUEUE}-followups"  # what settings derive from CELERY_QUEUE in a worker
WORKER_READY_TIMEOUT_SECONDS = 60
REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _celery_runs_tasks_in_process(request: pytest.FixtureRequest):
    """Ordinary tests run Celery tasks eagerly, so they need no worker; tests that
    use the real worker (the `celery_worker` fixtures) send to its queue instead."""
    from leaderboard.site.celery import app

    uses_worker = bool({"celery_worker", "celery_worker_factory"} & set(request.fixturenames))
    saved = (app.conf.task_always_eager, app.conf.task_default_queue, settings.PODIUM_FOLLOWUP_QUEUE)
    app.conf.task_always_eager = not uses_worker
    if uses_worker:
        app.conf.task_default_queue = TEST_QUEUE
        settings.PODIUM_FOLLOWUP_QUEUE = TEST_FOLLOWUP_QUEUE
    yield
    app.conf.task_always_eager, app.conf.task_default_queue, settings.PODIUM_FOLLOWUP_QUEUE = saved


def _test_database_url() -> str:
    """DATABASE_URL of the database pytest-django created (test_<name>), for a subprocess."""
    from django.db import connection

    params = connection.settings_dict
    user = quote(params.get("USER") or "")
    password = f":{quote(params['PASSWORD'])}" if params.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    port = f":{params['PORT']}" if params.get("PORT") else ""
    return f"postgres://{auth}{params.get('HOST') or '127.0.0.1'}{port}/{params['NAME']}"


class CeleryWorker:
    """A real `celery -A leaderboard.site worker --pool=solo` subprocess on the test database."""

    def __init__(self, log_dir: Path, extra_env: dict[str, str]) -> None:
        self.log_dir = log_dir
        self.extra_env = extra_env
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self.starts = 0

    def start(self, *, beat: bool = False, **extra_env: str) -> CeleryWorker:
        """Start the worker (``beat=True``: start `celery beat` instead, the sweeper's clock)."""
        from django.conf import settings

        self.starts += 1
        self.log_path = self.log_dir / f"{'beat' if beat else 'worker'}-{self.starts}.log"
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "leaderboard.site.settings",
            "DATABASE_URL": _test_database_url(),
            "DB_CONN_MAX_AGE": "0",
            "CELERY_BROKER_URL": os.environ["CELERY_BROKER_URL"],
            "CELERY_QUEUE": TEST_QUEUE,
            "MEDIA_ROOT": str(settings.MEDIA_ROOT),
            "PODIUM_SITE_KEYS": settings.PODIUM_SITE_KEYS,
            "PODIUM_MAX_ATTEMPTS": str(settings.PODIUM_MAX_ATTEMPTS),
            "PODIUM_STUCK_AFTER_SECONDS": str(settings.PODIUM_STUCK_AFTER_SECONDS),
            "PODIUM_LEASE_SECONDS": str(settings.PODIUM_LEASE_SECONDS),
            "PODIUM_SWEEP_EVERY_SECONDS": str(settings.PODIUM_SWEEP_EVERY_SECONDS),
            **self.extra_env,
            **extra_env,
        }
        celery = str(Path(sys.executable).parent / "celery")
        command = [
            celery, "-A", "leaderboard.site", "worker", "--pool=solo", "-Q", f"{TEST_QUEUE},{TEST_FOLLOWUP_QUEUE}",
            "-n", f"{TEST_QUEUE}-{self.starts}@%h", "--without-heartbeat", "--without-gossip",
            "--without-mingle", "--loglevel=INFO",
        ]  # fmt: skip
        ready = " ready."
        if beat:
            schedule = self.log_dir / f"celerybeat-schedule-{self.starts}"
            command = [celery, "-A", "leaderboard.site", "beat", "-s", str(schedule), "--loglevel=INFO"]
            ready = "beat: Starting..."
        log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            command, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + WORKER_READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited with {self.process.returncode}:\n{self.log()}")
            if ready in self.log():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"celery worker not ready after {WORKER_READY_TIMEOUT_SECONDS}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def kill9(self) -> None:
        """SIGKILL, as the OOM killer would: no cleanup, no ack."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            self.process = None
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill9()
        self.process = None


@pytest.fixture(scope="session")
def _test_queue_cleanup():
    """At the end of the session, drop this session's queue and its bindings from Redis.

    Only then: kombu caches "binding declared" per process, so deleting the binding
    between tests would make the next publish (before a worker redeclares it) vanish.
    """
    yield
    import redis

    from tests.broker_leftovers import clean

    broker = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    for queue in (TEST_QUEUE, TEST_FOLLOWUP_QUEUE):
        broker.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    # And the messages killed workers never acknowledged (they would be redelivered into a
    # later run's queue): every queue of this session starts with TEST_QUEUE.
    clean(os.environ["CELERY_BROKER_URL"], TEST_QUEUE)


@pytest.fixture
def celery_worker_factory(tmp_path_factory: pytest.TempPathFactory, transactional_db, _test_queue_cleanup):
    """Make real worker processes (`.start(**env)`, `.kill9()`, `.stop()`); all are stopped after the test.

    Tests using it need `@pytest.mark.django_db(transaction=True)` (the worker must see
    committed rows) and `@pytest.mark.services`.
    """
    workers: list[CeleryWorker] = []

    def make(**extra_env: str) -> CeleryWorker:
        worker = CeleryWorker(tmp_path_factory.mktemp("celery-worker"), extra_env)
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.stop()


@pytest.fixture
def celery_worker(celery_worker_factory) -> CeleryWorker:
    """One started real worker on this session's queue."""
    return celery_worker_factory().start()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright; a missing browser fails, never skips."""
    from tests.browser import CHROMIUM, CHROMIUM_ARGS

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh desktop-sized page that records console errors and uncaught exceptions."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    new_page = context.new_page()
    errors: list[str] = []
    new_page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    new_page.on("pageerror", lambda error: errors.append(str(error)))
    new_page.console_errors = errors
    yield new_page
    context.close()


@pytest.fixture
def fresh_daily_counters(settings: Any) -> None:
    """Daily-limit counters live in the cache: a key prefix of its own gives a test a full
    allowance (never cache.clear(): on Redis that would flush what the broker shares)."""
    import uuid

    settings.CACHES = {
        name: {**config, "KEY_PREFIX": f"test-{uuid.uuid4().hex}"} for name, config in settings.CACHES.items()
    }


@pytest.fixture
def site_identity(settings: Any) -> Any:
    """A fresh site age key, given to the process (and any worker) through PODIUM_SITE_KEYS."""
    import pyrage

    identity = pyrage.x25519.Identity.generate()
    settings.PODIUM_SITE_KEYS = str(identity)
    return identity


@pytest.fixture
def media_root(settings: Any, tmp_path: Path) -> Path:
    """Stored bundles go to a folder of this test's own."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def make_user(db: Any) -> Any:
    """make_user(username) -> a user with a known password."""
    from django.contrib.auth import get_user_model

    def make(username: str) -> Any:
        return get_user_model().objects.create_user(username=username, password="a-long-test-password-123")

    return make


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> None:
    """The test database is built from the models (``--no-migrations``), so SQL that a
    migration runs and no model declares is run here too: the unique index on
    lower(auth_user.username) (leaderboard/migrations/0004; tests/leaderboard/test_migrations.py
    proves the migration itself)."""
    import importlib  # the migration's module name starts with a digit: no import statement names it

    from django.db import connection

    migration = importlib.import_module("leaderboard.migrations.0004_username_lower_unique")
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(migration.CREATE_INDEX_SQL)
