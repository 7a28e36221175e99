"""The second visual review's items in a real browser, at a laptop (1366x900) and a phone
(390x844) size: a wide table's caption stays put while the table scrolls, the board and its
chart fit a phone, the admin's release page keeps its wide inline in place, the upload script
shows a refusal's sentence before its code.
Screenshots: test-output/screenshots/review-items/."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.browser import DESKTOP, PHONE, shoot
from tests.website.conftest import make_release, make_run, make_user

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BOARD = "/benchmarks/ale-robotics/v0.5/"


def label(size: dict[str, int]) -> str:
    return "desktop" if size == DESKTOP else "phone"


def sign_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("a-long-test-password-1")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")


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


NAMES = (
    "Marlin",
    "Atlas Reproducer",
    "Kestrel",
    "OpenHands Robotics",
    "Voyager RL",
    "Tinker",
    "Sparrow",
    "Heron",
    "Baseline BC",
    "Gannet",
)


@pytest.fixture
def demo_like_board(benchmark: Any) -> Any:
    """Ten runs named as the demo's (its longest word, "Reproducer", sets the agent column's
    width), overlapping intervals (≈ marks) and three partial runs (◐ marks): what a phone fits."""
    release = make_release(benchmark)
    for i, name in enumerate(NAMES):
        make_run(release, agent_name=name, score=0.95 - i * 0.03, ci=0.1, covered=2 if i >= 7 else None)
    return release


def open_board(browser: Any, base: str, size: dict[str, int]) -> tuple[Any, Any]:
    context, page = open_page(browser, f"{base}{BOARD}", size)
    page.wait_for_selector("#board-chart[data-metric=both]")
    return context, page


@pytest.mark.parametrize("width", [390, 360])
def test_the_boards_five_phone_columns_fit_with_coverage_headed_tasks(
    live_server: Any, browser: Any, demo_like_board: Any, width: int
) -> None:
    context, page = open_board(browser, live_server.url, {"width": width, "height": 844})
    assert (
        page.evaluate(
            "(() => { const b = document.querySelector('.table-scroll'); return b.scrollWidth - b.clientWidth; })()"
        )
        == 0
    )
    heading = page.locator("table.board th.col-coverage")
    assert heading.locator(".th-phone").text_content() == "Tasks" and heading.locator(".th-phone").is_visible()
    assert heading.get_by_role("link", name="Coverage").count() == 1  # its full name, for screen readers
    assert page.locator("table.board tbody tr").last.locator("td.coverage").inner_text() == "2/4"
    shoot(page, f"review-items/board-phone-{width}", full_page=False)
    context.close()


def test_the_desktop_board_heads_its_coverage_column_coverage(
    live_server: Any, browser: Any, demo_like_board: Any
) -> None:
    context, page = open_board(browser, live_server.url, DESKTOP)
    heading = page.locator("table.board th.col-coverage")
    assert heading.locator(".th-full").text_content() == "Coverage" and heading.locator(".th-full").is_visible()
    assert not heading.locator(".th-phone").is_visible()
    context.close()


def test_the_phone_chart_writes_each_agents_whole_name_above_its_bar(
    live_server: Any, browser: Any, demo_like_board: Any
) -> None:
    context, page = open_board(browser, live_server.url, PHONE)
    written = json.loads(page.get_attribute("#board-chart", "data-row-labels"))
    assert written == [f"{i + 1}. {'◐ ' if i >= 7 else ''}{name} 1.0" for i, name in enumerate(NAMES)]
    chart = "Chart.getChart(document.getElementById('board-chart'))"
    assert page.evaluate(f"{chart}.options.scales.y.ticks.display") is False
    # No column of names beside the bars: the two panels share the chart's whole width.
    assert int(page.get_attribute("#board-chart", "data-x-score-panel").split(",")[0]) <= 20
    assert page.evaluate(f"{chart}.scales.xPass.ticks.map(t => t.label)") == ["0%", "50%", "100%"]
    page.locator("#board-chart").scroll_into_view_if_needed()
    shoot(page, "review-items/board-chart-phone", full_page=False)
    context.close()


def test_the_desktop_chart_names_its_bars_beside_them(live_server: Any, browser: Any, demo_like_board: Any) -> None:
    context, page = open_board(browser, live_server.url, DESKTOP)
    chart = "Chart.getChart(document.getElementById('board-chart'))"
    assert page.evaluate(f"{chart}.options.scales.y.ticks.display") is True
    assert page.get_attribute("#board-chart", "data-row-labels") is None
    shoot(page, "review-items/board-chart-desktop", full_page=False)
    context.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_admin_release_page_scrolls_its_tasks_inline_not_the_page(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    release = make_release(benchmark)
    make_user("maintainer", is_staff=True, is_superuser=True)
    context = browser.new_context(viewport=size)
    page = context.new_page()
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "maintainer")
    page.fill("#id_password", "a-long-test-password-1")
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    page.goto(f"{live_server.url}/admin/leaderboard/release/{release.pk}/change/")
    assert page.evaluate("document.documentElement.scrollWidth") == size["width"]
    table = page.locator("#release_tasks-group table")
    assert table.locator("tbody tr.has_original").count() == 4
    assert table.evaluate("t => t.scrollWidth > t.clientWidth")  # the seventeen columns scroll in place
    assert table.evaluate("t => t.getBoundingClientRect().right") <= size["width"]
    table.scroll_into_view_if_needed()
    shoot(page, f"review-items/admin-release-{label(size)}", full_page=False)
    context.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_upload_script_shows_a_refusal_as_its_sentence_then_its_code(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    make_release(benchmark)
    make_user("uploader")
    context = browser.new_context(viewport=size)
    page = context.new_page()
    sign_in(page, live_server.url, "uploader")
    page.goto(f"{live_server.url}/submit/")
    page.set_input_files("#id_bundle", files=[{"name": "e.age", "mimeType": "application/octet-stream", "buffer": b""}])
    page.get_by_role("button", name="Upload and verify").click()
    box = page.locator("[data-upload-error]")
    box.wait_for()
    assert box.inner_text() == "The uploaded file is empty (0 bytes); expected an age-encrypted bundle. Code empty_file"
    assert box.locator("small.error-code code").inner_text() == "empty_file"
    box.scroll_into_view_if_needed()
    shoot(page, f"review-items/upload-refused-{label(size)}", full_page=False)
    context.close()
