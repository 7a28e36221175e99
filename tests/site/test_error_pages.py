import json

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import Client, override_settings
from django.urls import path
from django.views.decorators.http import require_safe

from leaderboard.site import urls as root_urls


def boom(request):
    raise RuntimeError("secret internals: DATABASE_URL=postgres://hidden")


@require_safe
def plain_api_view(request):
    return HttpResponse("ok")


urlpatterns = [
    path("api/v1/plain/", plain_api_view),
    path("api/v1/boom/", boom),
    path("boom/", boom),
    *root_urls.urlpatterns,
]
handler404 = root_urls.handler404
handler500 = root_urls.handler500


@pytest.fixture
def crashing_client():
    with override_settings(ROOT_URLCONF=__name__, DEBUG=False):
        yield Client(raise_request_exception=False)


@pytest.mark.django_db
def test_an_unknown_page_gets_the_site_404_page(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert b"There is nothing at <code>/no/such/page/</code>" in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/", "/api", "/api/foo", "/api/v2/benchmarks/"])
def test_an_unknown_path_under_the_api_is_the_apis_json_404_even_with_debug_on(client, path):
    # DEBUG on (make run) answered Django's HTML debug page, listing every route.
    with override_settings(DEBUG=True):
        response = client.get(path)
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": f"No API endpoint at {path}."}}


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [True, False])
def test_a_json_download_of_a_run_that_does_not_exist_is_a_json_404(client, debug):
    with override_settings(DEBUG=debug):
        response = client.get("/runs/99999/results.json")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "Nothing at /runs/99999/results.json."}}


@pytest.mark.django_db
def test_a_crash_on_a_page_answers_a_plain_500_page_without_internals(crashing_client):
    response = crashing_client.get("/boom/")
    assert response.status_code == 500
    assert b"Something went wrong on our side" in response.content
    assert b"secret internals" not in response.content
    assert b"Traceback" not in response.content


@pytest.mark.django_db
def test_a_crash_outside_drf_under_the_api_answers_json_without_internals(crashing_client):
    response = crashing_client.get("/api/v1/boom/")
    assert response.status_code == 500
    assert response.json() == {
        "error": {"code": "server_error", "message": "The server failed to handle this request; it has been logged."}
    }


# Django's 400s for a body it cannot read were a bare "Bad Request (400)" saying nothing (audit D).
MULTIPART_WITHOUT_BOUNDARY = "multipart/form-data"
PASSWORD = "a-long-test-password-1"


@pytest.mark.django_db
def test_a_multipart_form_without_a_boundary_is_a_400_page_saying_so_and_creates_no_key() -> None:
    owner = get_user_model().objects.create_user("frank", password=PASSWORD)
    client = Client()
    client.force_login(owner)
    response = client.post("/accounts/api-keys/", b"name=ci", content_type=MULTIPART_WITHOUT_BOUNDARY)
    assert response.status_code == 400
    body = response.content.decode()
    assert "not valid multipart/form-data" in body and "<title>Bad Request (400)</title>" not in body
    assert "Traceback" not in body and "settings." not in body
    assert not owner.api_keys.exists()


@pytest.mark.django_db
def test_a_form_with_too_many_fields_is_a_400_page_naming_the_limit() -> None:
    owner = get_user_model().objects.create_user("grace", password=PASSWORD)
    client = Client()
    client.force_login(owner)
    fields = "&".join(f"f{n}=1" for n in range(settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1))
    response = client.post(
        "/submit/challenge/", fields + "&benchmark=x", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    assert f"more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields" in response.content.decode()


@pytest.mark.django_db
def test_a_form_body_over_the_text_limit_is_a_400_page_saying_where_a_bundle_goes() -> None:
    response = Client().post(
        "/accounts/login/",
        "username=" + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400
    assert "a bundle goes in the upload&#x27;s file field, every other field is short" in response.content.decode()


@pytest.mark.django_db
def test_an_unknown_host_is_a_400_that_names_the_host_header_as_json_under_the_api() -> None:
    response = Client().get("/api/v1/", HTTP_HOST="not-this-site.example")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "malformed_request"
    assert "Host header" in response.json()["error"]["message"]
    page = Client().get("/", HTTP_HOST="not-this-site.example")
    assert page.status_code == 400 and "Host header" in page.content.decode()
    assert "not-this-site.example" not in page.content.decode()


def test_a_refusal_without_a_sentence_of_its_own_says_so_in_the_site_layout_and_as_json_under_the_api(rf):
    from django.core.exceptions import PermissionDenied

    from leaderboard.error_pages import FORBIDDEN_MESSAGE, permission_denied

    page = permission_denied(rf.get("/benchmarks/"), PermissionDenied())
    assert page.status_code == 403 and FORBIDDEN_MESSAGE in page.content.decode()
    api = permission_denied(rf.get("/api/v1/anything/"), PermissionDenied("Not yours."))
    assert (api.status_code, json.loads(api.content)) == (
        403,
        {"error": {"code": "permission_denied", "message": "Not yours."}},
    )


@pytest.mark.django_db
def test_a_wrong_method_on_a_page_gets_a_page_saying_what_the_address_answers(client):
    response = client.post("/")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert response["Content-Type"].startswith("text/html")
    assert b"<h1>Method not allowed</h1>" in response.content
    assert b"POST is not a method this address answers; it answers GET, HEAD." in response.content


@pytest.mark.django_db
def test_a_wrong_method_on_a_plain_django_view_under_the_api_is_the_apis_json_405(crashing_client):
    response = crashing_client.delete("/api/v1/plain/")
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"
    assert response.json() == {
        "error": {
            "code": "method_not_allowed",
            "message": "DELETE is not a method this address answers; it answers GET, HEAD.",
        }
    }


@pytest.mark.django_db
def test_a_form_refused_by_the_csrf_check_gets_the_sites_page_saying_what_to_do():
    response = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "x", "password": "y"})
    assert response.status_code == 403
    body = response.content.decode()
    assert "<h1>Not allowed</h1>" in body
    assert "its security token was missing or out of date" in body and "CsrfViewMiddleware" not in body


def _request_records(caplog):
    return [record for record in caplog.records if record.name == "django.request"]


@pytest.mark.django_db
def test_a_refused_request_is_logged_as_one_line_without_its_traceback(caplog) -> None:
    # A multipart body without a boundary (a BadRequest) was logged with its whole traceback.
    owner = get_user_model().objects.create_user("frank", password=PASSWORD)
    client = Client()
    client.force_login(owner)
    with caplog.at_level("WARNING", logger="django.request"):
        response = client.post("/accounts/api-keys/", b"name=ci", content_type=MULTIPART_WITHOUT_BOUNDARY)
    assert response.status_code == 400
    (record,) = _request_records(caplog)
    assert record.status_code == 400 and record.exc_info is None
    assert "Traceback" not in caplog.text


@pytest.mark.django_db
def test_a_server_error_is_logged_with_its_traceback(crashing_client, caplog) -> None:
    with caplog.at_level("ERROR", logger="django.request"):
        assert crashing_client.get("/boom/").status_code == 500
    (record,) = _request_records(caplog)
    assert record.status_code == 500 and record.exc_info is not None
    assert "Traceback" in caplog.text and "secret internals" in caplog.text


@pytest.mark.parametrize(("status", "mailed"), [(500, 1), (503, 0), (400, 0)])
def test_the_admins_are_mailed_for_a_server_fault_only(rf, settings, mailoutbox, status, mailed) -> None:
    # Every 503 answered during an outage, and every bad Host header, mailed the whole request
    # report to the admins (six mails in two seconds in the fault-injection review).
    import logging

    settings.ADMINS = [("ops", "ops@example.org")]
    logging.getLogger("django.request").error(
        "Status %s: /runs/7/", status, extra={"status_code": status, "request": rf.get("/runs/7/")}
    )
    assert len(mailoutbox) == mailed


@pytest.mark.django_db
def test_a_bad_host_header_is_one_line_without_a_traceback_and_no_mail(settings, mailoutbox, caplog) -> None:
    settings.ADMINS = [("ops", "ops@example.org")]
    with caplog.at_level("WARNING", logger="django.security"):
        response = Client(raise_request_exception=False).get("/", HTTP_HOST="evil.example")
    assert response.status_code == 400
    (record,) = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert record.exc_info is None and "Traceback" not in caplog.text
    assert mailoutbox == []
