"""Several hosts, one site: a web process and two worker processes whose local media
directories differ share only PostgreSQL, Redis and the S3 bucket, and every upload
reaches its verdict (marked services and s3: CI runs it against SeaweedFS)."""

from __future__ import annotations

import json
import time

import pytest
from django.conf import settings

from leaderboard.models import Run
from leaderboard.site.celery import app
from submissions.models import Submission
from tests.servers import WebServer, multipart, request, site_env

UPLOADS = 6


def queued(queue: str) -> int:
    """Messages waiting in this session's queues (verifications and their follow-ups)."""
    import os

    import redis

    broker = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    try:
        return sum(broker.llen(name) for name in broker.scan_iter(match=f"{queue}*") if broker.type(name) == b"list")
    finally:
        broker.close()


VERDICT_TIMEOUT_SECONDS = 120


@pytest.mark.services
@pytest.mark.s3
@pytest.mark.django_db(transaction=True)
def test_uploads_to_the_web_host_are_verified_by_two_worker_hosts_that_share_only_database_redis_and_bucket(
    owner, demo_release, seal, celery_worker_factory, tmp_path
):
    from submissions.api_keys import api_key_create
    from submissions.bundle.demo import DEMO_BENCHMARK

    # Generous: daily counters may outlive the test database (they are per key id and day).
    demo_release.benchmark.daily_submission_limit = 1000
    demo_release.benchmark.save(update_fields=["daily_submission_limit"])
    key = api_key_create(user=owner, name="multi-host").plaintext
    hosts = {name: tmp_path / name for name in ("web", "worker-a", "worker-b")}
    # A second's pause after each claim, so both workers are seen taking uploads.
    workers = [
        celery_worker_factory(
            MEDIA_ROOT=str(hosts[name] / "media"), PODIUM_VAR_DIR=str(hosts[name]), PODIUM_VERIFY_DELAY_SECONDS="1"
        ).start()
        for name in ("worker-a", "worker-b")
    ]
    web = WebServer(tmp_path, site_env(hosts["web"]), workers=2).start()
    try:
        ids = []
        for n in range(UPLOADS):
            content_type, body = multipart({"benchmark": DEMO_BENCHMARK}, {"bundle": (f"run-{n}.age", seal())})
            status, _, answer = request(
                "POST",
                f"{web.base}/api/v1/submissions/",
                headers={"Authorization": f"Api-Key {key}", "Content-Type": content_type},
                body=body,
            )
            assert status == 201, answer
            ids.append(json.loads(answer)["id"])

        deadline = time.monotonic() + VERDICT_TIMEOUT_SECONDS
        while Submission.objects.filter(pk__in=ids, status="done").count() < UPLOADS:
            assert time.monotonic() < deadline, [w.log()[-2000:] for w in workers]
            time.sleep(0.2)
        # Let the workers drain the runs' follow-up tasks too, so none is left in this
        # session's queue for the next test (a stopped worker finishes its current task).
        while queued(app.conf.task_default_queue):
            assert time.monotonic() < deadline, "follow-up tasks were not consumed"
            time.sleep(0.2)
    finally:
        web.stop()

    assert sorted(Submission.objects.filter(pk__in=ids).values_list("verdict", flat=True)) == ["validated"] * UPLOADS
    assert Run.objects.filter(submission__in=ids).count() == UPLOADS
    for worker in workers:
        assert "submissions.tasks.verify_submission" in worker.log() and "succeeded" in worker.log()
    # No host kept a bundle of its own: each one lives only in the bucket.
    for host in hosts.values():
        assert not list((host / "media").rglob("*.age"))
    from django.core.files.storage import default_storage

    names = Submission.objects.filter(pk__in=ids).values_list("file", flat=True)
    assert all(default_storage.exists(name) for name in names)
    assert settings.STORAGES["default"]["BACKEND"] == "storages.backends.s3.S3Storage"
