"""Real-browser tests of the scorecard and race pages (Playwright driving Debian's
Chromium against live_server). Screenshots land in test-output/screenshots/."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from scoring.race import FAILURE_CATEGORIES
from submissions.demo_loaders.race import load_race_demo
from submissions.demo_loaders.scorecard import load_scorecard_demo

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(settings.BASE_DIR) / "test-output" / "screenshots"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install it with `apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.console_errors = errors  # type: ignore[attr-defined]
    yield page
    context.close()


def shoot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_a_visitor_reads_the_scorecard_board_and_the_seed_example_card(live_server: Any, page: Any) -> None:
    load_scorecard_demo(stdout=io.StringIO())
    page.goto(f"{live_server.url}/scorecards/sokoban-hidden/")
    board = page.get_by_role("table", name="Best scorecard per agent")
    rows = board.locator("tbody tr")
    assert rows.count() == 4
    assert rows.nth(0).locator("th").inner_text().startswith("Deep Planner")
    assert "1.1" in rows.nth(0).inner_text()
    shoot(page, "schemes-scorecard-board")
    page.get_by_role("link", name="Crate Whisperer").click()
    page.wait_for_url("**/scorecards/cards/*/")
    reading = page.locator(".scorecard-reading").inner_text()
    assert reading == (
        "This agent solved 31 of 100. When it solved a level it took about 1.14× the optimal path (1 ÷ 0.874), "  # noqa: RUF001
        "and it wedged a crate unrecoverably in at least 8% of episodes."
    )
    assert page.get_by_text("The deadlock rate is a lower bound").is_visible()
    shoot(page, "schemes-scorecard-detail")
    assert page.console_errors == []


def test_a_visitor_follows_the_race_overall_to_a_build_up_and_a_race(live_server: Any, page: Any) -> None:
    load_race_demo(stdout=io.StringIO())
    page.goto(f"{live_server.url}/races/shopping-race/")
    assert "race 5" in page.locator(".tab-note").inner_text()
    assert page.locator(".race-overall tbody tr").count() >= 4
    assert page.locator(".race-overall .tag--top").count() == 1
    shoot(page, "schemes-race-overall")
    page.locator(".race-overall tbody tr").first.locator("a").click()
    page.wait_for_url("**/agents/**")
    buildup = page.get_by_role("table", name="Three-race build-up")
    assert buildup.locator("tbody tr").count() == 3
    shoot(page, "schemes-race-agent-version")
    page.get_by_role("link", name="Race 3", exact=True).first.click()
    page.wait_for_url("**/leaderboard/3/")
    assert page.locator(".race-results tbody tr").count() == 5
    shoot(page, "schemes-race-leaderboard")
    page.get_by_role("link", name="Race page").click()
    page.wait_for_url("**/race/3/")
    assert "field baseline" in page.locator(".facts").inner_text().lower()
    shoot(page, "schemes-race-page")
    page.locator(".race-runs tbody tr").first.locator("a").click()
    page.wait_for_url("**/races/runs/*/")
    shoot(page, "schemes-race-run-released")
    assert page.console_errors == []


def test_a_visitor_sees_no_failure_category_of_the_live_race(live_server: Any, page: Any) -> None:
    load_race_demo(stdout=io.StringIO())
    page.goto(f"{live_server.url}/races/shopping-race/race/5/")
    page.locator(".race-runs tbody tr").first.locator("a").click()
    page.wait_for_url("**/races/runs/*/")
    text = page.locator("main").inner_text()
    assert "under embargo until the race result is released" in text
    assert [c.code for c in FAILURE_CATEGORIES if c.code in text or c.message in text] == []
    shoot(page, "schemes-race-run-embargoed")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{live_server.url}/races/shopping-race/overall/")
    shoot(page, "schemes-race-overall-mobile")
    assert page.console_errors == []
