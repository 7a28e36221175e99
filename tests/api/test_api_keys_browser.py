"""The API key page in a real browser: create a key, see it once, use it, revoke it."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from submissions.api_keys import api_key_parse
from tests.browser import shoot

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_submitter_creates_uses_and_revokes_a_key(live_server: Any, browser: Any) -> None:
    get_user_model().objects.create_user("keyholder", password="a-long-test-password-1")
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    try:
        page.goto(f"{live_server.url}/accounts/login/?next=/accounts/api-keys/")
        page.get_by_label("Username").fill("keyholder")
        page.get_by_label("Password").fill("a-long-test-password-1")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(f"{live_server.url}/accounts/api-keys/")
        page.get_by_label("Name").fill("laptop")
        page.get_by_role("button", name="Create key").click()
        plaintext = page.locator("#new-key").inner_text()
        assert api_key_parse(plaintext) is not None
        shoot(page, "api-keys-created")

        assert APIClient().get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {plaintext}").status_code == 200

        page.goto(f"{live_server.url}/accounts/api-keys/")
        assert plaintext not in page.content()
        # Two steps: the first tap only opens the confirmation.
        page.get_by_text("Revoke…").click()
        page.get_by_role("button", name="Revoke laptop for good").click()
        page.wait_for_selector("text=revoked")
        shoot(page, "api-keys-revoked")
    finally:
        page.close()
    assert APIClient().get("/api/v1/submissions/", HTTP_AUTHORIZATION=f"Api-Key {plaintext}").status_code == 401
    assert errors == []
