"""Degrade, never 500: Redis stopped (a private redis-server this test kills, never the
shared one) and PostgreSQL unreachable, against the real web process (gunicorn).

Decided behaviour (docs/deploy.md, "When a service is down"):
* Redis down: pages and read APIs serve from the database (the cache is a miss), API
  keys authenticate (the failure throttle fails open), an upload is accepted and stays
  ``received`` in the database; the beat sweeper enqueues it once Redis is back.
* PostgreSQL down: 503 with Retry-After, a plain page or the API's JSON error.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from django.conf import settings

from leaderboard.models import Run
from submissions.models import Submission
from tests.servers import BIN, REPO_ROOT, PrivateRedis, WebServer, free_port, multipart, request, site_env

VERDICT_TIMEOUT_SECONDS = 90
# Daily limits counted in the cache cannot count while Redis is down (the upload is then
# refused 429 "counter unavailable"); counted in the database (DailyCount, issue 11), the
# upload goes through. Strict: this marker must go once the counters have moved.
QUOTAS_IN_CACHE = hasattr(__import__("submissions.quotas").quotas, "cache")


@pytest.fixture
def private_redis(tmp_path):
    redis = PrivateRedis(tmp_path).start()
    yield redis
    redis.kill()


@pytest.fixture
def verified_run(owner, demo_release, seal, django_capture_on_commit_callbacks):
    """One validated run on the demo release, verified in this process (nothing enqueued)."""
    import io

    from submissions.services.submissions import submission_create
    from submissions.services.verification import submission_verify

    with django_capture_on_commit_callbacks(execute=False):
        submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    submission_verify(submission_id=submission.pk)
    return Run.objects.get(submission=submission)


def redis_env(tmp_path, redis: PrivateRedis, **extra: str) -> dict[str, str]:
    return site_env(tmp_path / "web", REDIS_URL=redis.url(0), CELERY_BROKER_URL=redis.url(1), **extra)


def get(web: WebServer, path: str, **headers: str) -> tuple[int, dict[str, str], str]:
    status, answer_headers, body = request("GET", f"{web.base}{path}", headers=headers)
    return status, answer_headers, body.decode(errors="replace")


def pages_and_reads(web: WebServer, run: Run, key: str) -> dict[str, int]:
    release = run.release
    board = f"/benchmarks/{release.benchmark.slug}/{release.version}/"
    answers = {
        "home": get(web, "/"),
        "board": get(web, board),
        "run page": get(web, f"/runs/{run.pk}/"),
        "api runs": get(web, f"/api/v1/runs/{run.pk}/"),
        "api releases": get(web, "/api/v1/releases/"),
        "api-key read": get(web, "/api/v1/submissions/", Authorization=f"Api-Key {key}"),
    }
    for name, (status, _, body) in answers.items():
        assert "Traceback" not in body, name
        if status == 200 and name in {"home", "board", "run page", "api runs"}:
            assert run.agent_version.agent.name in body, name  # served from the database, not an empty shell
    return {name: status for name, (status, _, _) in answers.items()}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_with_redis_stopped_pages_read_apis_and_api_key_reads_keep_serving_and_readyz_names_redis(
    owner, verified_run, private_redis, tmp_path
):
    from submissions.api_keys import api_key_create

    key = api_key_create(user=owner, name="degraded").plaintext
    web = WebServer(tmp_path, redis_env(tmp_path, private_redis)).start()
    try:
        assert set(pages_and_reads(web, verified_run, key).values()) == {200}  # warm: boards now cached in Redis
        ready = json.loads(get(web, "/readyz")[2])
        assert ready["ready"] is True and ready["checks"]["cache"] == ready["checks"]["broker"] == "ok"

        private_redis.kill()

        assert pages_and_reads(web, verified_run, key) == dict.fromkeys(
            ("home", "board", "run page", "api runs", "api releases", "api-key read"), 200
        )
        status, _, body = get(web, "/api/v1/submissions/", Authorization="Api-Key pdm_0123456789ab_" + "x" * 43)
        assert (status, json.loads(body)["error"]["code"]) == (401, "authentication_failed")
        status, _, body = get(web, "/readyz")
        assert status == 503
        ready = json.loads(body)
        assert sorted(ready["failed"]) == ["broker", "cache"]
        assert ready["checks"]["database"] == ready["checks"]["storage"] == "ok"
        assert get(web, "/healthz")[0] == 200
    finally:
        web.stop()
    assert " 500 " not in web.log()


@pytest.mark.services
@pytest.mark.xfail(QUOTAS_IN_CACHE, strict=True, reason="daily limits are still counted in the Redis cache")
@pytest.mark.django_db(transaction=True)
def test_an_upload_while_redis_is_stopped_stays_queued_in_the_database_and_reaches_its_verdict_when_redis_returns(
    owner, demo_release, seal, private_redis, celery_worker_factory, tmp_path
):
    from submissions.api_keys import api_key_create
    from submissions.bundle.demo import DEMO_BENCHMARK

    key = api_key_create(user=owner, name="degraded").plaintext
    # The worker started below reads bundles where this process's storage keeps them: with
    # S3 that is the shared bucket; on local files, the same directory (as one host would).
    web = WebServer(tmp_path, redis_env(tmp_path, private_redis, MEDIA_ROOT=str(settings.MEDIA_ROOT))).start()
    private_redis.kill()
    try:
        content_type, body = multipart({"benchmark": DEMO_BENCHMARK}, {"bundle": ("run.age", seal())})
        status, _, answer = request(
            "POST",
            f"{web.base}/api/v1/submissions/",
            headers={"Authorization": f"Api-Key {key}", "Content-Type": content_type},
            body=body,
        )
    finally:
        web.stop()
    assert status == 201, answer
    submission = Submission.objects.get(pk=json.loads(answer)["id"])
    assert (submission.status, submission.attempts) == ("received", 0)  # stored, queued in the database
    assert "could not enqueue verification" in web.log()

    # Redis comes back empty (no persistence): the task is gone, the row is not.
    private_redis.start()
    # The sweeper runs in the worker: it uses the worker's stuck limit, shortened here.
    env = {"CELERY_BROKER_URL": private_redis.url(1), "REDIS_URL": private_redis.url(0)}
    celery_worker_factory(PODIUM_STUCK_AFTER_SECONDS="1", **env).start()
    beat_env = redis_env(tmp_path, private_redis, PODIUM_SWEEP_EVERY_SECONDS="1", PODIUM_STUCK_AFTER_SECONDS="1")
    beat_log = (tmp_path / "beat.log").open("wb")
    beat = subprocess.Popen(
        [str(BIN / "celery"), "-A", "leaderboard.site", "beat", "--loglevel=INFO"],
        cwd=REPO_ROOT, env=beat_env, stdout=beat_log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    beat_log.close()
    try:
        deadline = time.monotonic() + VERDICT_TIMEOUT_SECONDS
        while Submission.objects.get(pk=submission.pk).status != "done":
            assert time.monotonic() < deadline, (tmp_path / "beat.log").read_text()
            time.sleep(0.2)
    finally:
        beat.terminate()
        beat.wait(timeout=15)
    submission.refresh_from_db()
    assert (submission.verdict, submission.error_code) == ("validated", "")
    assert Run.objects.filter(submission=submission).count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_an_upload_while_redis_stops_answering_is_accepted_in_seconds_not_a_500_after_a_minute(
    owner, demo_release, seal, private_redis, tmp_path
):
    # A frozen Redis accepts connections and never replies: the enqueue's broker PING used to
    # block until gunicorn killed the worker (a 500 at 60 s for an upload already committed).
    from submissions.api_keys import api_key_create
    from submissions.bundle.demo import DEMO_BENCHMARK

    key = api_key_create(user=owner, name="frozen").plaintext
    web = WebServer(tmp_path, redis_env(tmp_path, private_redis)).start()
    private_redis.freeze()
    try:
        content_type, body = multipart({"benchmark": DEMO_BENCHMARK}, {"bundle": ("run.age", seal())})
        started = time.monotonic()
        status, _, answer = request(
            "POST",
            f"{web.base}/api/v1/submissions/",
            headers={"Authorization": f"Api-Key {key}", "Content-Type": content_type},
            body=body,
        )
        took = time.monotonic() - started
    finally:
        private_redis.thaw()
        web.stop()
    assert status == 201, answer
    assert took < 20, took
    assert Submission.objects.get(pk=json.loads(answer)["id"]).status == "received"  # the sweeper's now
    assert "could not enqueue verification" in web.log()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_with_postgresql_unreachable_pages_and_the_api_answer_503_without_a_traceback(tmp_path, settings):
    nowhere = f"postgres://postgres@127.0.0.1:{free_port()}/podium"
    web = WebServer(tmp_path, site_env(tmp_path / "web", DATABASE_URL=nowhere)).start()
    try:
        pages = {path: get(web, path) for path in ("/", "/benchmarks/ale-robotics/0.5/", "/runs/1/")}
        api = {
            path: get(web, path, **headers)
            for path, headers in (
                ("/api/v1/releases/", {}),
                ("/api/v1/submissions/", {"Authorization": "Api-Key pdm_0123456789ab_" + "x" * 43}),
            )
        }
        ready_status, _, ready_body = get(web, "/readyz")
        healthz = get(web, "/healthz")[0]
    finally:
        web.stop()
    for path, (status, headers, body) in pages.items():
        assert (status, headers["Retry-After"]) == (503, "30"), path
        assert "temporarily unavailable" in body, path
        assert "Traceback" not in body and "OperationalError" not in body and str(web.port) not in body
    for path, (status, headers, body) in api.items():
        assert (status, headers["Retry-After"], headers["Content-Type"]) == (503, "30", "application/json"), path
        assert json.loads(body)["error"]["code"] == "database_unavailable", path
        assert "Traceback" not in body and "5432" not in body and "OperationalError" not in body
    assert ready_status == 503 and json.loads(ready_body)["failed"] == ["database"]
    assert healthz == 200
    logged = "podium.unavailable: database_unavailable on GET /benchmarks/ale-robotics/0.5/: OperationalError"
    assert logged in web.log()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_after_postgresql_drops_every_connection_the_next_requests_are_served_not_503(tmp_path):
    # A restart or failover ends every backend; a web process keeping connections
    # (DB_CONN_MAX_AGE, as deployed) must find them dead before using them, not answer 503.
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL")
    web = WebServer(tmp_path, site_env(tmp_path / "web", DB_CONN_MAX_AGE="60"), workers=2).start()
    try:
        assert {get(web, "/api/v1/benchmarks/")[0] for _ in range(8)} == {200}  # every worker connected
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            assert cursor.fetchone()[0] >= 1
        statuses = [get(web, "/api/v1/benchmarks/")[0] for _ in range(8)]
    finally:
        web.stop()
    assert statuses == [200] * 8
