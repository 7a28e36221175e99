"""Real-browser checks of the task ranking, run comparison and history pages at desktop
(1366x900) and phone (390x844) sizes: no sideways page scroll, the chart draws, no console
errors; screenshots under test-output/screenshots/ for a person to look at."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pytest
from django.utils import timezone

from leaderboard.models import Agent, AgentVersion, Benchmark, Race, Release, Standing
from leaderboard.models.races import OverallStanding
from tests.browser import shoot
from tests.website.conftest import make_release, make_run

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": (1366, 900), "phone": (390, 844)}


def _world(benchmark: Any) -> tuple[Any, Any]:
    release = make_release(benchmark)
    runs = []
    for i, (name, score) in enumerate((("Alpha", 1.12), ("Bravo", 0.83), ("Charlie", 0.97), ("Delta", 0.61))):
        run = make_run(release, agent_name=name, score=score, pass_rate=0.99 - i * 0.1, ci=0.08)
        runs.append(run)
    # Each better run arrives later, so the lead changes four times.
    for days, run in enumerate(sorted(runs, key=lambda r: r.overall, reverse=True)):
        Standing.objects.filter(run=run).update(verified_at=timezone.now() - dt.timedelta(days=2 + days * 7))
    return release, runs


def _races() -> None:
    benchmark = Benchmark.objects.create(slug="shop-race", name="Shop race", scheme=Benchmark.Scheme.RACE)
    # Public once one of its releases is (a draft-only race benchmark is a 404 to visitors).
    Release.objects.create(
        benchmark=benchmark, version="q1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64, published=True
    )
    versions = []
    for name in ("Alpha", "Bravo", "Charlie"):
        agent, _ = Agent.objects.get_or_create(slug=f"race-{name.lower()}", defaults={"name": f"Racer {name}"})
        versions.append(AgentVersion.objects.create(agent=agent, version="1"))
    overall = {1: (0.12, -0.05, 0.0), 2: (0.08, 0.02, -0.04), 3: (0.1, 0.06, -0.02), 4: (0.2, 0.3, 0.4)}
    for number, values in overall.items():
        status = Race.Status.RUNNING if number == 4 else Race.Status.RELEASED
        race = Race.objects.create(benchmark=benchmark, number=number, status=status, is_launch=number == 1)
        for rank, (version, value) in enumerate(sorted(zip(versions, values, strict=True), key=lambda p: -p[1]), 1):
            OverallStanding.objects.create(
                race=race, agent_version=version, overall=value, rank=rank, races_counted=min(number, 3), window=3
            )


def _page(browser: Any, size: str) -> Any:
    width, height = SIZES[size]
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.console_errors = []  # type: ignore[attr-defined]
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))  # type: ignore[attr-defined]
    return page


def _no_sideways_scroll(page: Any) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), page.url


@pytest.mark.parametrize("size", list(SIZES))
def test_the_task_ranking_compare_and_history_pages_at_desktop_and_phone_size(
    live_server: Any, browser: Any, benchmark: Any, size: str
) -> None:
    _, runs = _world(benchmark)
    _races()
    base = live_server.url
    page = _page(browser, size)

    page.goto(f"{base}/benchmarks/ale-robotics/v0.5/tasks/walk/")
    rows = page.locator("table.task-ranking tbody tr")
    assert rows.count() == 4
    assert "Alpha" in rows.first.inner_text()
    _no_sideways_scroll(page)
    shoot(page, f"task-ranking-{size}")

    page.goto(f"{base}/runs/{runs[0].pk}/")
    page.get_by_label("Compare with run #").fill(str(runs[1].pk))
    page.get_by_role("button", name="Compare", exact=True).click()
    page.wait_for_url("**/runs/compare/?a=*")
    assert "no overlap" in page.locator("table.compare-table").first.inner_text()
    _no_sideways_scroll(page)
    shoot(page, f"compare-{size}")

    page.goto(f"{base}/benchmarks/ale-robotics/v0.5/history/")
    page.wait_for_selector("#history-chart[data-drawn='3']")
    leaders = page.locator("table").first.locator("tbody tr")
    assert leaders.count() == 4
    assert "Alpha" in leaders.last.inner_text()
    _no_sideways_scroll(page)
    shoot(page, f"history-{size}")

    page.goto(f"{base}/races/shop-race/history/")
    page.wait_for_selector("#history-chart[data-drawn='3']")
    header = page.locator("table.race-history thead").inner_text().casefold()
    assert "race 3" in header and "race 4" not in header  # race 4 is running: never charted
    _no_sideways_scroll(page)
    shoot(page, f"race-history-{size}")
    assert page.console_errors == []  # type: ignore[attr-defined]
