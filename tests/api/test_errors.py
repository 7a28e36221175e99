from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def test_an_unknown_api_path_is_a_json_404(api: Any) -> None:
    response = api.get("/api/v1/no-such-thing/")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "No API endpoint at /api/v1/no-such-thing/."}}


def test_an_endpoints_path_without_its_trailing_slash_is_told_so(api: Any) -> None:
    response = api.get("/api/v1/benchmarks")
    assert response.status_code == 404
    assert response.json()["error"]["message"] == (
        "No API endpoint at /api/v1/benchmarks. Did you mean /api/v1/benchmarks/ (every endpoint ends with a slash)?"
    )
    # No hint where the slash would not help either.
    assert "Did you mean" not in api.get("/api/v1/no-such-thing").json()["error"]["message"]


def test_an_unknown_api_path_holding_a_newline_is_the_same_json_404_even_in_debug(api: Any) -> None:
    # The catch-all's "." did not match a newline: such a path fell through to Django's 404, an
    # HTML page listing the URL patterns under DEBUG (make run's default).
    with override_settings(DEBUG=True):
        response = api.get("/api/v1/nothing%0A/")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "No API endpoint at /api/v1/nothing\n/."}}


def test_a_missing_object_is_a_json_404(world: Any, api: Any) -> None:
    response = api.get("/api/v1/runs/999999/")
    assert response.status_code == 404
    assert response.json() == {
        "error": {
            "code": "not_found",
            "message": "Nothing at /api/v1/runs/999999/: no such object, or not one this client may see.",
        }
    }


def test_a_wrong_method_is_a_json_405(world: Any, api: Any) -> None:
    response = api.delete("/api/v1/benchmarks/")
    assert response.status_code == 405
    assert response.json() == {"error": {"code": "method_not_allowed", "message": 'Method "DELETE" not allowed.'}}


def test_malformed_json_is_a_json_400(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/", data="{not json", content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_request"


def test_an_unexpected_failure_is_a_bare_500_without_internals(world: Any, api: Any, monkeypatch: Any) -> None:
    from leaderboard.api import selectors

    def explode(user: Any) -> Any:
        raise RuntimeError(f"database password is {settings.SECRET_KEY}")

    monkeypatch.setattr(selectors, "benchmark_list", explode)
    response = api.get("/api/v1/benchmarks/")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "server_error", "message": "The server failed to handle this request; it has been logged."}
    }
    body = response.content.decode()
    assert settings.SECRET_KEY not in body and "Traceback" not in body and "RuntimeError" not in body


def _production_env(**extra: str) -> dict[str, str]:
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment never has it.
    dropped = {"DATABASE_URL", "CELERY_BROKER_URL", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update({"DJANGO_ENV": "production", "ALLOWED_HOSTS": "podium.example", **extra})
    return env


def test_production_settings_pass_check_deploy_at_warning_level() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(SECRET_KEY="x" * 20 + "K9#vQ2$mL8@pR5!tW3&zY7^bN4*cF6%hJ1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_refuses_to_start_without_a_secret_key() -> None:
    env = _production_env()
    env.pop("SECRET_KEY", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set to a random string of at least 50 characters in production" in result.stderr


def test_production_cookies_are_secure_and_hsts_is_on() -> None:
    script = (
        "from django.conf import settings as s;"
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0, s.X_FRAME_OPTIONS, s.DEBUG)"
    )
    result = subprocess.run(
        [sys.executable, "-c", f"import django;django.setup();{script}"],
        cwd=ROOT,
        env={**_production_env(SECRET_KEY="s" * 60), "DJANGO_SETTINGS_MODULE": "leaderboard.site.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.split() == ["True", "True", "True", "DENY", "False"], result.stderr


def test_a_json_body_over_djangos_memory_limit_is_a_413_not_a_500(world: Any, client_for: Any) -> None:
    big = '{"owner_kind": "judge", "owner": "' + "d" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1) + '"}'
    response = client_for(world.staff).post("/api/v1/admin/signing-keys/", data=big, content_type="application/json")
    assert response.status_code == 413
    assert response.json() == {
        "error": {
            "code": "too_large",
            "message": f"the request's form fields or JSON body hold more than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} "
            "bytes; a bundle goes in the upload's file field, every other field is short.",
        }
    }


def test_a_multipart_text_field_over_djangos_memory_limit_is_a_413_on_uploads(world: Any, client_for: Any) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.models import Submission

    before = Submission.objects.count()
    response = client_for(world.staff).post(
        "/api/v1/submissions/",
        {"benchmark": "b" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1), "bundle": SimpleUploadedFile("x.age", b"x")},
        format="multipart",
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert Submission.objects.count() == before


@pytest.mark.parametrize("debug", [False, True])
def test_too_many_query_parameters_are_a_400_naming_the_limit_on_the_api_and_pages(api: Any, debug: bool) -> None:
    query = "&".join(f"f{n}=1" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    message = (
        f"the request sent more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields (query parameters or form "
        "fields); send only those the page or endpoint takes."
    )
    with override_settings(DEBUG=debug):
        response = api.get(f"/api/v1/runs/?{query}")
        page = api.get(f"/?{query}")
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "malformed_request", "message": message}}
    assert page.status_code == 400 and message.encode() in page.content


def test_an_unknown_format_parameter_is_a_406_naming_it_not_a_404(api: Any) -> None:
    response = api.get("/api/v1/benchmarks/?format=xml")
    assert response.status_code == 406
    assert response.json() == {
        "error": {
            "code": "not_acceptable",
            "message": "format: 'xml' is not a format this endpoint answers; it answers json.",
        }
    }
    assert api.get("/api/v1/benchmarks/?format=json").status_code == 200
