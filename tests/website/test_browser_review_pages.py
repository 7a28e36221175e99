"""The visual review's page items in a real browser, at a laptop (1366x900) and a phone
(390x844) size: the board's chart heading on a board of none or one agent, the cost card on a
board whose runs have no cost, the history chart over a single day, the links to the run
comparison, and the phone's tap targets. Screenshots: test-output/screenshots/review-pages/."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pytest
from django.utils import timezone

from leaderboard.models import Standing
from tests.browser import DESKTOP, PHONE, shoot
from tests.website.conftest import make_release, make_run

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BOARD = "/benchmarks/ale-robotics/v0.5/"
SIZES = [DESKTOP, PHONE]
SIZE_IDS = ["desktop", "phone"]


def label(size: dict[str, int]) -> str:
    return "desktop" if size == DESKTOP else "phone"


def open_page(browser: Any, url: str, size: dict[str, int]) -> tuple[Any, Any]:
    context = browser.new_context(viewport=size)
    page = context.new_page()
    page.goto(url)
    return context, page


def chart_heading_once_loaded(page: Any) -> str:
    # The chart script rewrites the heading once its data is in: read it after that.
    page.wait_for_selector("#board-chart[data-loaded-n], [data-chart-empty]", state="attached")
    return page.locator("#chart-heading").inner_text()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_board_with_one_agent_heads_its_chart_top_agent(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    make_run(make_release(benchmark), agent_name="Solo", score=0.9)
    context, page = open_page(browser, f"{live_server.url}{BOARD}", size)
    assert chart_heading_once_loaded(page) == "Top agent by score — Overall"
    shoot(page, f"review-pages/board-one-agent-{label(size)}", full_page=False)
    context.close()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_board_with_no_agent_heads_its_chart_no_agents_yet(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    make_release(benchmark)
    context, page = open_page(browser, f"{live_server.url}{BOARD}", size)
    assert chart_heading_once_loaded(page) == "No agents yet — Overall"
    shoot(page, f"review-pages/board-no-agent-{label(size)}", full_page=False)
    context.close()


def test_a_filter_matching_no_agent_heads_the_chart_with_that(live_server: Any, browser: Any, benchmark: Any) -> None:
    make_run(make_release(benchmark), agent_name="Solo", score=0.9)
    context, page = open_page(browser, f"{live_server.url}{BOARD}?q=nobody", DESKTOP)
    assert chart_heading_once_loaded(page) == "No agents match these filters — Overall"
    context.close()


def test_a_board_of_several_agents_still_counts_them_in_its_chart_heading(
    live_server: Any, browser: Any, benchmark: Any
) -> None:
    release = make_release(benchmark)
    for name in ("Alpha", "Bravo", "Charlie"):
        make_run(release, agent_name=name)
    context, page = open_page(browser, f"{live_server.url}{BOARD}", DESKTOP)
    assert chart_heading_once_loaded(page) == "Top 3 agents by score — Overall"
    context.close()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_board_whose_runs_have_no_cost_says_so_in_place_of_the_cost_chart(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    release = make_release(benchmark)
    for name in ("Alpha", "Bravo"):
        make_run(release, agent_name=name)  # no price table and no declared cost: no run has a cost
    context, page = open_page(browser, f"{live_server.url}{BOARD}", size)
    card = page.locator(".cost-card")
    card.locator("[data-chart-empty]").wait_for()
    assert "No ranked run on this view has a cost yet" in card.inner_text()
    assert card.locator("canvas").count() == 0
    # Neither the key to the points nor the table of points shows when there are none.
    assert not card.locator(".chart-key").is_visible()
    assert not card.locator(".chart-table").is_visible()
    card.scroll_into_view_if_needed()
    shoot(page, f"review-pages/board-no-cost-{label(size)}", full_page=False)
    context.close()


def history_axis(page: Any) -> dict[str, Any]:
    page.wait_for_selector("#history-chart[data-drawn]")
    return page.evaluate(
        """() => { const x = Chart.getChart(document.getElementById('history-chart')).scales.x;
                   return {min: x.min, max: x.max, labels: x.ticks.map(t => t.label)}; }"""
    )


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_history_of_one_day_labels_its_time_axis_with_distinct_ticks(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    release = make_release(benchmark)
    first = make_run(release, agent_name="Alpha", score=0.7)
    make_run(release, agent_name="Bravo", score=0.9)
    # Verified two hours and one hour ago: the whole history fits in a few hours.
    Standing.objects.filter(run=first).update(verified_at=timezone.now() - dt.timedelta(hours=2))
    Standing.objects.exclude(run=first).update(verified_at=timezone.now() - dt.timedelta(hours=1))
    context, page = open_page(browser, f"{live_server.url}{BOARD}history/", size)
    axis = history_axis(page)
    labels = [label for label in axis["labels"] if label]
    assert len(labels) >= 2
    assert len(set(labels)) == len(labels), f"ticks repeat a label: {labels}"
    shoot(page, f"review-pages/history-one-day-{label(size)}", full_page=False)
    context.close()


def test_a_history_of_one_point_draws_an_axis_of_an_hour_around_it(
    live_server: Any, browser: Any, benchmark: Any
) -> None:
    run = make_run(make_release(benchmark), agent_name="Solo", score=0.8)
    context, page = open_page(browser, f"{live_server.url}{BOARD}history/", DESKTOP)
    axis = history_axis(page)
    verified = Standing.objects.filter(run=run).first().verified_at.timestamp() * 1000
    assert axis["max"] - axis["min"] >= 3_600_000
    assert axis["min"] < verified < axis["max"]
    labels = [label for label in axis["labels"] if label]
    assert len(set(labels)) == len(labels) >= 2
    shoot(page, "review-pages/history-one-point-desktop", full_page=False)
    context.close()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_a_run_page_links_the_comparison_with_the_leader(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    release = make_release(benchmark)
    leader = make_run(release, agent_name="Alpha", score=1.1)
    other = make_run(release, agent_name="Bravo", score=0.7)
    context, page = open_page(browser, f"{live_server.url}/runs/{other.pk}/", size)
    link = page.locator("a[data-compare-leader]")
    assert f"Alpha 1.0 (run #{leader.pk})" in link.inner_text()
    link.scroll_into_view_if_needed()
    shoot(page, f"review-pages/run-compare-leader-{label(size)}", full_page=False)
    link.click()
    page.wait_for_url(f"**/runs/compare/?a={other.pk}&b={leader.pk}")
    assert page.locator("table.compare-table").first.is_visible()
    context.close()


def test_the_leaders_own_run_page_offers_no_comparison_with_itself(
    live_server: Any, browser: Any, benchmark: Any
) -> None:
    release = make_release(benchmark)
    leader = make_run(release, agent_name="Alpha", score=1.1)
    make_run(release, agent_name="Bravo", score=0.7)
    context, page = open_page(browser, f"{live_server.url}/runs/{leader.pk}/", DESKTOP)
    assert page.get_by_label("Compare with run #").is_visible()
    assert page.locator("a[data-compare-leader]").count() == 0
    context.close()


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_an_agent_page_links_each_run_to_the_comparison_with_its_previous_run(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    release = make_release(benchmark)
    older = make_run(release, agent_name="Alpha", version="1.0", score=0.8)
    newer = make_run(release, agent_name="Alpha", version="1.1", score=0.9)
    context, page = open_page(browser, f"{live_server.url}/agents/alpha/", size)
    links = page.locator("a[data-compare-previous]")
    assert links.count() == 1  # the oldest run has nothing before it
    assert links.first.inner_text() == f"#{newer.pk} vs #{older.pk}"
    links.first.scroll_into_view_if_needed()
    shoot(page, f"review-pages/agent-compare-previous-{label(size)}", full_page=False)
    links.first.click()
    page.wait_for_url(f"**/runs/compare/?a={older.pk}&b={newer.pk}")
    context.close()


# The main interactive controls of each page: site and page navigation, tabs, releases,
# pagination, the chart and filter controls, downloads and form buttons.
CONTROLS = (
    ".site-nav a, .site-nav button, .subnav a, .tabs__tab, .versions a, .pagination a, .segmented label, "
    "main select, main button, .board-search input, .board-search__actions a, .exports a, label.checkbox, "
    ".board thead .sort, .table-caption .updated a, .chart-table > summary, .jump-link"
)
# Under 44 CSS px, with half a pixel for the layout's rounding.
TAP = 43.5


def small_controls(page: Any) -> list[str]:
    return page.evaluate(
        """([selector, tap]) => Array.from(document.querySelectorAll(selector))
             .filter(e => e.offsetParent !== null)
             .map(e => [e, e.getBoundingClientRect()])
             .filter(([e, r]) => r.width < tap || r.height < tap)
             .map(([e, r]) => `${e.tagName.toLowerCase()} "${e.innerText.trim().slice(0, 20)}" `
                              + `${Math.round(r.width)}x${Math.round(r.height)}`)""",
        [CONTROLS, TAP],
    )


def test_the_boards_main_controls_are_tap_sized_on_a_phone(live_server: Any, browser: Any, benchmark: Any) -> None:
    old = make_release(benchmark, "v0.4")
    make_run(old, agent_name="Old timer")
    release = make_release(benchmark)
    for i in range(51):  # a page holds 50 rows: the 51st brings the pagination
        make_run(release, agent_name=f"Agent {i}", score=1.2 - i * 0.01)
    context, page = open_page(browser, f"{live_server.url}{BOARD}", PHONE)
    page.wait_for_selector("#board-chart[data-loaded-n]", state="attached")
    assert page.locator(".pagination a").count() == 1
    assert small_controls(page) == []
    shoot(page, "review-pages/board-tap-targets-phone")
    context.close()


def test_the_history_and_run_pages_controls_are_tap_sized_on_a_phone(
    live_server: Any, browser: Any, benchmark: Any
) -> None:
    release = make_release(benchmark)
    run = make_run(release, agent_name="Alpha")
    context, page = open_page(browser, f"{live_server.url}{BOARD}history/", PHONE)
    assert small_controls(page) == []
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    assert small_controls(page) == []
    context.close()
