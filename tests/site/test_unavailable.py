"""A dependency down answers 503 (never a 500 or a traceback), and /readyz says which."""

from __future__ import annotations

import pytest
from django.db import OperationalError
from django.test import Client, override_settings
from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.site import urls as root_urls

DOWN = "connection to server at 127.0.0.1, port 5432 failed: Connection refused"


def page_without_database(request):
    raise OperationalError(DOWN)


class ApiWithoutDatabase(APIView):
    def get(self, request):
        raise OperationalError(DOWN)


class ApiThatWorks(APIView):
    def get(self, request):
        return Response({"ok": True})


class DatabaseDownInMiddleware:
    """Stands for a middleware that queries the database (the session's save)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path == "/middleware-down/":
            raise OperationalError(DOWN)
        return response


def download_without_database(request):
    raise OperationalError(DOWN)


def page_without_storage(request):
    from leaderboard.unavailable import StorageUnavailable

    raise StorageUnavailable()


def ok(request):
    from django.http import HttpResponse

    return HttpResponse("fine")


urlpatterns = [
    path("api/v1/down/", ApiWithoutDatabase.as_view()),
    path("api/v1/up/", ApiThatWorks.as_view()),
    path("down/", page_without_database),
    path("down/board.json", download_without_database),
    path("storage-down/", page_without_storage),
    path("middleware-down/", ok),
    *root_urls.urlpatterns,
]
handler404 = root_urls.handler404
handler500 = root_urls.handler500


@pytest.fixture
def client_here(settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.DatabaseDownInMiddleware"]
    with override_settings(ROOT_URLCONF=__name__, DEBUG=False):
        yield Client(raise_request_exception=False)


def assert_no_internals(response):
    body = response.content.decode()
    assert "Traceback" not in body and "5432" not in body and "OperationalError" not in body


@pytest.mark.django_db
def test_a_page_whose_database_is_down_answers_a_503_page_with_retry_after(client_here):
    response = client_here.get("/down/")
    assert (response.status_code, response["Retry-After"], response["Cache-Control"]) == (503, "30", "no-store")
    assert b"Podium is temporarily unavailable" in response.content
    assert_no_internals(response)


@pytest.mark.django_db
def test_an_api_view_whose_database_is_down_answers_the_json_error_database_unavailable(client_here):
    response = client_here.get("/api/v1/down/")
    assert (response.status_code, response["Retry-After"]) == (503, "30")
    assert response.json()["error"]["code"] == "database_unavailable"
    assert_no_internals(response)


@pytest.mark.django_db
def test_a_json_download_whose_database_is_down_answers_the_json_error_not_the_page(client_here):
    response = client_here.get("/down/board.json")
    assert (response.status_code, response["Content-Type"]) == (503, "application/json")
    assert response.json()["error"]["code"] == "database_unavailable"
    assert_no_internals(response)


@pytest.mark.django_db
def test_the_503_page_names_the_service_that_is_away(client_here):
    storage = client_here.get("/storage-down/").content.decode()
    assert "file storage is unavailable" in storage and "database" not in storage
    assert "database is unavailable" in client_here.get("/down/").content.decode()


@pytest.mark.django_db
def test_a_database_error_raised_by_a_middleware_still_answers_503_not_500(client_here):
    response = client_here.get("/middleware-down/")
    assert response.status_code == 503
    assert b"Podium is temporarily unavailable" in response.content


@pytest.mark.django_db
def test_an_ordinary_crash_is_still_a_500_not_a_503(client_here, settings):
    settings.ROOT_URLCONF = "tests.site.test_error_pages"
    response = Client(raise_request_exception=False).get("/boom/")
    assert response.status_code == 500


# ------------------------------------------------------------------ /readyz


@pytest.mark.django_db
def test_readyz_in_the_embedded_default_checks_the_database_and_storage_and_skips_redis(client, media_root, settings):
    settings.REDIS_URL = ""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "ready": True,
        "failed": [],
        "checks": {
            "database": "ok",
            "cache": "not configured",
            "broker": "not configured",
            "storage": "ok",
            "static": "not configured",
        },
    }
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_readyz_answers_503_in_seconds_when_a_service_stops_answering(client, monkeypatch, media_root):
    # A frozen storage server (kill -STOP) held the probe until gunicorn killed the worker: a 500
    # after 60 s, and a few probes tied up every web worker (the fault-injection review).
    import threading
    import time

    from django.core.files.storage import default_storage

    from leaderboard.views import health

    release = threading.Event()

    def frozen(path):
        release.wait(30)
        return [], []

    monkeypatch.setattr(default_storage, "listdir", frozen)
    monkeypatch.setattr(health, "READY_TIMEOUT_SECONDS", 0.5)
    try:
        began = time.monotonic()
        response = client.get("/readyz")
        elapsed = time.monotonic() - began
    finally:
        release.set()
    assert response.status_code == 503
    assert response.json()["failed"] == ["storage"]
    assert response.json()["checks"]["database"] == "ok"
    assert elapsed < 5


@pytest.mark.django_db
def test_readyz_names_the_storage_when_it_fails_and_answers_503_without_the_error_text(client, monkeypatch):
    from django.core.files.storage import default_storage

    def refused(path):
        raise PermissionError("AccessDenied for key id AKIA-SECRET")

    monkeypatch.setattr(default_storage, "listdir", refused)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["storage"]
    assert b"AKIA" not in response.content


@pytest.mark.django_db
def test_readyz_names_redis_when_the_cache_and_broker_do_not_answer(client, settings):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    settings.REDIS_URL = closed
    settings.CELERY_BROKER_URL = closed
    settings.CELERY_TASK_ALWAYS_EAGER = False
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["failed"] == ["cache", "broker"]
    assert response.json()["checks"]["database"] == "ok"


@pytest.mark.django_db
def test_the_probes_answer_a_load_balancer_that_sends_the_hosts_own_address(client, media_root, settings):
    """A probe names the web host by its address, which is not in ALLOWED_HOSTS: Django's host
    check answered it 400, so liveness restarted a healthy host (docs/deploy.md walk)."""
    settings.ALLOWED_HOSTS = ["podium.example.org"]
    settings.REDIS_URL = ""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    probe = {"HTTP_HOST": "10.0.0.5:8000"}
    assert (client.get("/healthz", **probe).status_code, client.get("/readyz", **probe).status_code) == (200, 200)
    assert client.get("/", **probe).status_code == 400  # every other path still checks the host


@pytest.mark.django_db
def test_readyz_fails_the_static_check_while_collectstatics_manifest_is_missing(client, media_root, settings, tmp_path):
    """A host restored (or started) before collectstatic answered every page 500 while /readyz said ready."""
    settings.REDIS_URL = ""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.STATIC_ROOT = str(tmp_path)
    manifest_storage = {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"}
    settings.STORAGES = {**settings.STORAGES, "staticfiles": manifest_storage}
    missing = client.get("/readyz")
    assert (missing.status_code, missing.json()["failed"]) == (503, ["static"])
    (tmp_path / "staticfiles.json").write_text(
        '{"paths": {"podium.css": "podium.0123456789ab.css"}, "version": "1.1", "hash": "0123456789ab"}'
    )
    settings.STORAGES = {**settings.STORAGES}  # a new process: the storage reads the manifest again
    ready = client.get("/readyz")
    assert (ready.status_code, ready.json()["checks"]["static"]) == (200, "ok")


@pytest.mark.django_db
def test_healthz_stays_trivial(client):
    response = client.get("/healthz")
    assert (response.status_code, response.content) == (200, b"ok")


@pytest.mark.django_db
def test_the_admins_reverify_action_with_the_broker_down_answers_503_not_500(admin_client, monkeypatch, make_user):
    from kombu.exceptions import OperationalError as BrokerError

    from submissions import tasks
    from submissions.models import Submission

    owner = make_user("owner")
    submission = Submission.objects.create(submitter=owner, sha256="a" * 64, size=1, file="bundles/aa/a.age")

    def broker_down(*args, **kwargs):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.verify_submission, "delay", broker_down)
    client = admin_client
    client.raise_request_exception = False
    response = client.post(
        "/admin/submissions/submission/", {"action": "reverify", "_selected_action": [str(submission.pk)]}
    )
    assert response.status_code == 503
    assert b"Podium is temporarily unavailable" in response.content
    assert b"6379" not in response.content


@pytest.mark.django_db(transaction=True)
def test_a_read_only_database_serves_api_key_reads_and_answers_writes_503(make_user):
    # A standby after a failover (or default_transaction_read_only): an API-key read used to be
    # a 500 (its last-use bookkeeping write), and a write an InternalError 500 too.
    from django.db import connection

    from submissions.api_keys import api_key_create

    if connection.vendor != "postgresql":
        pytest.skip("a read-only database is PostgreSQL's (default_transaction_read_only)")
    key = api_key_create(user=make_user("reader"), name="reader").plaintext
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Api-Key {key}")
    with connection.cursor() as cursor:
        cursor.execute("SET default_transaction_read_only = on")
    try:
        read = client.get("/api/v1/submissions/")
        write = client.put(
            "/api/v1/account/webhook/", {"url": "https://93.184.216.34/hook"}, content_type="application/json"
        )
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET default_transaction_read_only = off")
    assert read.status_code == 200
    assert (write.status_code, write.json()["error"]["code"]) == (503, "database_unavailable")
    assert write["Retry-After"] == "30"
