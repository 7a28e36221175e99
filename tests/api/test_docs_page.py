"""The API docs page works under the site's strict CSP (no inline script or style)."""

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
