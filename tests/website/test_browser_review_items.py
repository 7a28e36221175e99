"""The second visual review's items in a real browser, at a laptop (1366x900) and a phone
(390x844) size: a wide table's caption stays put while the table scrolls, the board and its
chart fit a phone. Screenshots: test-output/screenshots/review-items/."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.browser import PHONE, shoot
from tests.website.conftest import make_release, make_run

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BOARD = "/benchmarks/ale-robotics/v0.5/"


def open_page(browser: Any, url: str, size: dict[str, int]) -> tuple[Any, Any]:
    context = browser.new_context(viewport=size)
    page = context.new_page()
    page.goto(url)
    return context, page


def test_a_wide_tables_caption_stays_put_while_the_table_scrolls_on_a_phone(
    live_server: Any, browser: Any, benchmark: Any
) -> None:
    make_run(make_release(benchmark), agent_name="Alpha")
    context, page = open_page(browser, f"{live_server.url}{BOARD}release/", PHONE)
    caption = page.locator("#tasks-caption")
    assert caption.inner_text() == "Required tasks of ALE Robotics v0.5"
    assert caption.evaluate("e => e.closest('.table-scroll') === null")
    before = caption.bounding_box()
    scrolled = page.evaluate(
        "() => { const box = document.querySelector('.table-scroll'); box.scrollLeft = 200; return box.scrollLeft; }"
    )
    assert scrolled > 0  # the table is wider than the phone and did scroll
    assert caption.bounding_box() == before
    shoot(page, "review-items/release-tasks-scrolled-phone", full_page=False)
    context.close()
