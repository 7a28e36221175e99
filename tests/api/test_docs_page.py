"""The API docs page works under the site's strict CSP (no inline script or style), and it and
the schema it reads answer errors in the API's JSON shape, not in their own HTML or YAML."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.staticfiles import finders
from django.test import Client

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_the_docs_page_has_no_inline_script_or_style_and_local_assets(client: Any, db: Any) -> None:
    response = client.get("/api/v1/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "unsafe-inline" not in response["Content-Security-Policy"]
    assert "<style" not in html
    scripts = re.findall(r"<script([^>]*)>", html)
    assert scripts and all("src=" in attrs for attrs in scripts)
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert len(assets) >= 3
    for url in assets:
        assert finders.find(url.removeprefix("/static/")), f"{url} is not a local static file"
    assert "//" not in "".join(re.findall(r'(?:src|href)="([^"]+)"', html)).replace("http://", "")


def test_the_docs_init_script_is_served_as_javascript(client: Any, db: Any) -> None:
    response = client.get("/api/v1/docs/", {"script": ""})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/javascript")
    assert b"/api/v1/schema/" in response.content


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_swagger_ui_renders_the_api_without_csp_violations(live_server: Any, browser: Any) -> None:
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{live_server.url}/api/v1/docs/")
        page.wait_for_selector("text=/api/v1/submissions/", timeout=15000)
        assert page.locator(".opblock").count() >= 10
    finally:
        page.close()
    assert errors == []


PASSWORD = "a-long-test-password-1"


@pytest.mark.django_db
@pytest.mark.parametrize("accept", ["*/*", "application/json", "text/html"])
@pytest.mark.parametrize("content_type", ["application/x-www-form-urlencoded", "text/plain"])
def test_a_signed_in_post_to_the_api_docs_is_not_a_500(accept: str, content_type: str) -> None:
    # CSRF enforced as for a browser: DRF's session check then reads the form body to find a token.
    client = Client(enforce_csrf_checks=True, raise_request_exception=False)
    client.force_login(get_user_model().objects.create_user("heidi", password=PASSWORD))
    response = client.post("/api/v1/docs/", "a=1", content_type=content_type, HTTP_ACCEPT=accept)
    # Was a 500: the refusal is rendered through the docs template, whose context processors
    # authenticated the session, whose CSRF check raised again while rendering.
    assert response.status_code == (405 if accept != "application/json" else 406), response.status_code


@pytest.mark.django_db
def test_a_signed_in_post_to_the_schema_without_a_csrf_token_is_the_405_not_a_csrf_refusal() -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.create_user("heidi", password=PASSWORD))
    response = client.post("/api/v1/schema/", "a=1", content_type="application/x-www-form-urlencoded")
    assert (response.status_code, response.json()["error"]["code"]) == (405, "method_not_allowed")


# What every other endpoint answers (tests/api/test_errors.py): the API's one error shape.
NOT_ACCEPTABLE = {"error": {"code": "not_acceptable", "message": "Could not satisfy the request Accept header."}}


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/docs/", "/api/v1/docs/?script=", "/api/v1/schema/"])
def test_a_post_to_the_api_docs_or_schema_is_the_apis_json_405_with_allow(path: str) -> None:
    # Was a plain-text "405 Method Not Allowed" (docs) or the error in YAML (schema).
    response = Client().post(path, "a=1", content_type="application/x-www-form-urlencoded", HTTP_ACCEPT="*/*")
    assert response.status_code == 405
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"code": "method_not_allowed", "message": 'Method "POST" not allowed.'}}
    assert response["Allow"] == "GET, HEAD, OPTIONS"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/docs/", "/api/v1/docs/?script=", "/api/v1/schema/"])
def test_an_accept_the_api_docs_or_schema_cannot_render_is_the_apis_json_406(path: str) -> None:
    response = Client().get(path, HTTP_ACCEPT="application/xml")
    assert response.status_code == 406
    assert response["Content-Type"] == "application/json"
    assert response.json() == NOT_ACCEPTABLE


@pytest.mark.django_db
def test_an_unknown_format_of_the_schema_is_the_apis_json_406_naming_the_formats_it_answers() -> None:
    # It was a 404 "Nothing at /api/v1/schema/": the address was right, the parameter was not.
    response = Client().get("/api/v1/schema/", {"format": "xml"})
    assert response.status_code == 406
    assert response.json()["error"] == {
        "code": "not_acceptable",
        "message": "format: 'xml' is not a format this endpoint answers; it answers json, yaml.",
    }


@pytest.mark.django_db
def test_a_browser_get_of_the_api_docs_still_renders_the_swagger_page() -> None:
    accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    response = Client().get("/api/v1/docs/", HTTP_ACCEPT=accept)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b'id="swagger-ui"' in response.content
