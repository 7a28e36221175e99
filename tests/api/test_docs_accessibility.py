"""The Swagger docs page passes axe-core's serious rules (issue 13: contrast, nested
controls, missing lang): a lang attribute, the local contrast stylesheet, no deep links
inside the operations' toggle buttons."""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_the_docs_page_declares_its_language_and_loads_the_contrast_stylesheet(client: Any, db: Any) -> None:
    html = client.get("/api/v1/docs/").content.decode()
    assert '<html lang="en">' in html
    assert 'href="/static/api-docs.css"' in html
    init = client.get("/api/v1/docs/", {"script": ""}).content.decode()
    assert '"deepLinking": false' in init


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_axe_finds_no_serious_violation_on_the_docs_page(live_server: Any, browser: Any) -> None:
    from tests.browser import PHONE, axe_violations, sideways_overflow

    page = browser.new_page(viewport=PHONE)
    try:
        page.goto(f"{live_server.url}/api/v1/docs/")
        page.wait_for_selector("text=/api/v1/submissions/", timeout=15000)
        page.locator(".opblock-summary-control").first.click()  # an expanded operation too
        assert axe_violations(page) == []
        assert page.locator(".opblock-summary-control a[href]").count() == 0
        assert sideways_overflow(page) is None
    finally:
        page.close()
