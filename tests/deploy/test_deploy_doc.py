"""docs/deploy.md, followed literally on loopback.

The blocks marked ``<!-- deploy-step: NAME -->`` are run as written (bash, the
repository as the working directory, ``.venv/bin`` first on PATH) with the
document's own environment block filled in with loopback values: a fresh
PostgreSQL database, the configured Redis, the configured bucket (SeaweedFS in
CI) or local storage. Then the site is lost and restored from the backup the
document made, into an empty database on a new "host" without the site keys: the
stored bundles open and a new upload is verified with the restored current key.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyrage
import pytest

from tests.servers import BIN, REPO_ROOT, free_port, multipart, request

DOC = REPO_ROOT / "docs" / "deploy.md"
STEP = re.compile(r"<!-- deploy-step: (?P<name>[a-z-]+) -->\n```sh\n(?P<body>.*?)```", re.DOTALL)
ENV_BLOCK = re.compile(r"<!-- deploy-env -->\n```sh\n(?P<body>.*?)```", re.DOTALL)
READY_TIMEOUT_SECONDS = 60
VERDICT_TIMEOUT_SECONDS = 120
# The document's log format (Django's lines): UTC time, level, [pid], logger: message.
DJANGO_LOG_LINE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} INFO \[\d+\] submissions\.services\.submissions: submission \S+ "
    r"received \(",
    re.MULTILINE,
)


def doc_steps() -> dict[str, str]:
    text = DOC.read_text()
    return {match["name"]: match["body"] for match in STEP.finditer(text)}


def doc_env_names() -> list[str]:
    match = ENV_BLOCK.search(DOC.read_text())
    assert match, "docs/deploy.md lost its <!-- deploy-env --> block"
    return [line.split("=", 1)[0] for line in match["body"].splitlines() if line and not line.startswith("#")]


def test_every_variable_the_deployment_doc_sets_is_read_by_the_settings_or_the_gunicorn_config():
    sources = (REPO_ROOT / "leaderboard" / "site" / "settings.py").read_text() + (
        REPO_ROOT / "leaderboard" / "site" / "gunicorn.conf.py"
    ).read_text()
    names = doc_env_names()
    assert names, "the environment block is empty"
    assert [name for name in names if f'"{name}"' not in sources] == []


def test_the_environment_block_as_written_stops_start_up_until_its_secret_key_is_replaced():
    """A copied environment file started production with a published key (docs/deploy.md walk)."""
    match = ENV_BLOCK.search(DOC.read_text())
    assert match
    written = dict(
        line.split("=", 1) for line in match["body"].splitlines() if line and not line.startswith("#")
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in written and not k.startswith(("PODIUM_", "DJANGO_"))}
    done = subprocess.run(
        [str(BIN / "python"), "manage.py", "check"],
        cwd=REPO_ROOT, env={**env, **written}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "SECRET_KEY must be set to a random string of at least 50 characters in production" in done.stderr


def test_the_deployment_doc_has_every_step_the_restore_test_runs():
    assert set(doc_steps()) >= {
        "prepare", "web", "worker", "beat", "probe", "backup", "restore-local-media", "restore",
    }  # fmt: skip


# ------------------------------------------------------------------ the drill


class Host:
    """One machine of the site: the document's environment with this host's own directories."""

    def __init__(self, root: Path, base_env: dict[str, str], database_url: str) -> None:
        self.root = root
        self.port = free_port()
        self.processes: list[tuple[str, subprocess.Popen[bytes]]] = []
        var = root / "var"
        self.env = {
            **base_env,
            "DATABASE_URL": database_url,
            "PODIUM_VAR_DIR": str(var),
            "STATIC_ROOT": str(root / "static"),
            "MEDIA_ROOT": str(var / "media"),
            "PODIUM_SITE_KEYS_FILE": str(root / "keys" / "site-keys.txt"),
            "PODIUM_BIND": f"127.0.0.1:{self.port}",
        }

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run(self, step: str, *, body: str | None = None) -> str:
        script = body if body is not None else doc_steps()[step]
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=REPO_ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"step {step!r} failed:\n{script}\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def start(self, step: str) -> None:
        log = (self.root / f"{step}.log").open("ab")
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", f"exec {doc_steps()[step].strip()}"],
            cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        self.processes.append((step, process))

    def log(self, step: str) -> str:
        path = self.root / f"{step}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while True:
            for step, process in self.processes:
                assert process.poll() is None, f"{step} exited:\n{self.log(step)}"
            try:
                if request("GET", f"{self.base}/healthz", timeout=2)[0] == 200 and " ready." in self.log("worker"):
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, f"not ready:\n{self.log('web')}\n{self.log('worker')}"
            time.sleep(0.2)

    def stop(self) -> None:
        for _, process in reversed(self.processes):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for _, process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.processes = []

    def https(self, method: str, path: str, **kwargs: Any) -> tuple[int, dict[str, str], bytes]:
        """A request as the TLS proxy passes it on."""
        headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9", **kwargs.pop("headers", {})}
        return request(method, f"{self.base}{path}", headers=headers, **kwargs)


@pytest.fixture
def databases() -> Iterator[Any]:
    """make(suffix) -> the URL of a new, empty PostgreSQL database; all are dropped afterwards."""
    import psycopg
    from django.db import connection

    params = connection.settings_dict
    maintenance = {
        "host": params.get("HOST") or "127.0.0.1",
        "port": params.get("PORT") or 5432,
        "user": params.get("USER") or "postgres",
        "password": params.get("PASSWORD") or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    created: list[str] = []

    def make(suffix: str) -> str:
        name = f"podium_deploytest_{uuid.uuid4().hex[:8]}_{suffix}"
        with psycopg.connect(**maintenance) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        created.append(name)
        password = f":{maintenance['password']}" if maintenance["password"] else ""
        return f"postgres://{maintenance['user']}{password}@{maintenance['host']}:{maintenance['port']}/{name}"

    yield make
    with psycopg.connect(**maintenance) as conn:
        for name in created:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def count_rows(database_url: str) -> tuple[int, int]:
    import psycopg

    with psycopg.connect(database_url) as conn:
        submissions = conn.execute("SELECT count(*) FROM submissions_submission").fetchone()[0]
        runs = conn.execute("SELECT count(*) FROM leaderboard_run").fetchone()[0]
    return submissions, runs


def upload_and_wait(host: Host, key: str, *, agent: str) -> dict[str, Any]:
    """Seal a new demo run to the site key the host publishes, upload it as a script would,
    and wait for the verdict the worker writes."""
    from leaderboard.manifest import load_manifest
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir

    status, _, body = host.https("GET", "/api/v1/site-key/")
    assert status == 200, body
    site_key = json.loads(body)
    manifest = load_manifest(REPO_ROOT / "examples" / "demo-release")
    # An unsigned script upload covers the tasks whose anchors are published: an unsigned result
    # for a withheld-anchor task is refused (unsigned_withheld_task), by design.
    published = [task.slug for task in manifest.tasks if task.anchor_published]
    directory = write_paper_gap_bundle_dir(
        host.root / f"bundle-{agent}",
        release_manifest=manifest,
        agent_name=agent,
        agent_version="1.0",
        seed=7,
        tasks=published,
    )
    sealed = seal_dir(directory, site_key["public_key"]).read_bytes()
    content_type, form = multipart({"benchmark": manifest.benchmark.slug}, {"bundle": ("run.age", sealed)})
    status, _, body = host.https(
        "POST",
        "/api/v1/submissions/",
        headers={"Authorization": f"Api-Key {key}", "Content-Type": content_type},
        body=form,
    )
    assert status == 201, body
    submission_id = json.loads(body)["id"]
    deadline = time.monotonic() + VERDICT_TIMEOUT_SECONDS
    while True:
        status, _, body = host.https(
            "GET", f"/api/v1/submissions/{submission_id}/", headers={"Authorization": f"Api-Key {key}"}
        )
        assert status == 200, body
        submission = json.loads(body)
        if submission["status"] == "done":
            return {**submission, "key_id": site_key["key_id"]}
        assert time.monotonic() < deadline, host.log("worker")[-3000:]
        time.sleep(0.3)


MAKE_KEY = (
    # Generous: daily counters may outlive the drill's database (they are per key id and day).
    "from leaderboard.models import Benchmark; Benchmark.objects.update(daily_submission_limit=1000); "
    "from django.contrib.auth import get_user_model; from submissions.api_keys import api_key_create; "
    "user, _ = get_user_model().objects.get_or_create(username='drill'); "
    "print(api_key_create(user=user, name='restore drill').plaintext)"
)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_the_deployment_doc_run_backed_up_and_restored_into_an_empty_database_still_opens_and_verifies(
    databases, tmp_path
):
    from django.conf import settings

    from tests.broker_leftovers import clean

    for tool in ("pg_dump", "pg_restore", "curl"):
        assert shutil.which(tool), f"{tool} is not installed"
    queue = f"podium-test-deploy-{uuid.uuid4().hex[:8]}"
    s3 = bool(settings.PODIUM_S3_BUCKET)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("PODIUM_", "AWS_", "EMAIL_", "DJANGO_"))}
    operator = pyrage.x25519.Identity.generate()
    identity_file = tmp_path / "operator.key"
    identity_file.write_text(f"{operator}\n")
    document_env = {
        "DJANGO_ENV": "production",
        "SECRET_KEY": secrets.token_urlsafe(48),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "CSRF_TRUSTED_ORIGINS": "https://127.0.0.1",
        "SITE_URL": "https://127.0.0.1",
        "DB_CONN_MAX_AGE": "0",
        "DB_CONNECT_TIMEOUT": "5",
        "CELERY_BROKER_URL": os.environ["CELERY_BROKER_URL"],
        "REDIS_URL": settings.REDIS_URL or os.environ["CELERY_BROKER_URL"],
        "CELERY_QUEUE": queue,
        "PODIUM_S3_BUCKET": settings.PODIUM_S3_BUCKET,
        "PODIUM_S3_PREFIX": f"deploy-drill-{uuid.uuid4().hex[:8]}" if s3 else "",
        "AWS_S3_ENDPOINT_URL": settings.AWS_S3_ENDPOINT_URL,
        "AWS_S3_REGION_NAME": settings.AWS_S3_REGION_NAME,
        "AWS_ACCESS_KEY_ID": settings.AWS_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": settings.AWS_SECRET_ACCESS_KEY,
        "PODIUM_NUM_PROXIES": "1",
        "WEB_CONCURRENCY": "1",
        "FORWARDED_ALLOW_IPS": "127.0.0.1",
        "PODIUM_ADMIN_EMAILS": "ops@example.org",
        "EMAIL_HOST": "",  # mail goes to the log: nothing leaves the machine
        "EMAIL_PORT": "587",
        "EMAIL_HOST_USER": "",
        "EMAIL_HOST_PASSWORD": "",
        "DEFAULT_FROM_EMAIL": "podium@example.org",
        "LOG_LEVEL": "INFO",
        # Per host: DATABASE_URL, PODIUM_VAR_DIR, STATIC_ROOT, MEDIA_ROOT, PODIUM_SITE_KEYS_FILE, PODIUM_BIND.
    }
    per_host = {"DATABASE_URL", "PODIUM_VAR_DIR", "STATIC_ROOT", "MEDIA_ROOT", "PODIUM_SITE_KEYS_FILE", "PODIUM_BIND"}
    assert set(document_env) | per_host == set(doc_env_names())  # the drill sets exactly what the doc lists
    base_env = {
        **inherited,
        **document_env,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "BACKUP_ROOT": str(tmp_path / "backup"),
        "OPERATOR_AGE_RECIPIENT": str(operator.to_public()),
        "OPERATOR_AGE_IDENTITY": str(identity_file),
    }
    first = Host(tmp_path / "host-a", base_env, databases("a"))
    second = Host(tmp_path / "host-b", base_env, databases("b"))
    try:
        first.run("prepare")
        first.run("seed", body="python manage.py load_demo")  # content to back up (not a doc step)
        key = first.run("key", body=f'python manage.py shell -c "{MAKE_KEY}"').strip().splitlines()[-1]
        for step in ("web", "worker", "beat"):
            first.start(step)
        first.wait_ready()
        probes = first.run("probe")
        assert probes.startswith("ok") and '"ready": true' in probes

        # The TLS proxy's header decides the scheme: without it, a redirect to HTTPS (but not the probes).
        status, headers, _ = request("GET", f"{first.base}/")
        assert (status, headers["Location"]) == (301, f"https://127.0.0.1:{first.port}/")
        assert first.https("GET", "/")[0] == 200
        assert request("GET", f"{first.base}/readyz")[0] == 200

        verdict = upload_and_wait(first, key, agent="Drill Before")
        assert verdict["verdict"] == "validated"
        assert DJANGO_LOG_LINE.search(first.log("web")), first.log("web")[-2000:]
        assert re.search(r'access 203\.0\.113\.9 "POST /api/v1/submissions/ HTTP/1\.[01]" 201 ', first.log("web"))

        # Run twice, as cron would (after a key rotation, say): each run has a directory of its
        # own, readable by the service account alone (the dump holds sessions and secrets).
        backups = []
        for _ in range(2):
            said = first.run("backup")
            backups.append(Path(re.search(r"^backed up to (.+)$", said, re.MULTILINE)[1]))
            time.sleep(1.1)  # the directories are named by the second
        assert backups[0] != backups[1] and all(path.parent == tmp_path / "backup" for path in backups)
        for path in backups:
            assert oct(path.stat().st_mode & 0o777) == "0o700"
            assert {p.name: oct(p.stat().st_mode & 0o777) for p in path.iterdir()} == {
                "site-keys.age": "0o600",
                "podium.dump": "0o600",
                **({} if s3 else {"media.tar.gz": "0o600"}),
            }
        first.stop()
        before = count_rows(first.env["DATABASE_URL"])

        # The site is lost. A new host, an empty database, no site keys; the bucket survives.
        second.env["BACKUP_DIR"] = str(backups[-1])
        if not s3:
            second.run("restore-local-media")
        restored = second.run("restore")
        assert "open with the site keys" in restored
        assert count_rows(second.env["DATABASE_URL"]) == before
        for step in ("web", "worker"):
            second.start(step)
        second.wait_ready()
        old = second.https("GET", f"/api/v1/submissions/{verdict['id']}/", headers={"Authorization": f"Api-Key {key}"})
        assert (old[0], json.loads(old[2])["verdict"]) == (200, "validated")  # the restored database serves it
        assert second.https("GET", "/")[0] == 200  # pages too: collectstatic ran in the restore
        assert request("GET", f"{second.base}/readyz")[0] == 200
        after = upload_and_wait(second, key, agent="Drill After")
        assert (after["verdict"], after["key_id"]) == ("validated", verdict["key_id"])  # the same current key
    finally:
        first.stop()
        second.stop()
        clean(os.environ["CELERY_BROKER_URL"], queue)
