"""Real-browser tests of the scorecard and race pages (Playwright driving Debian's
Chromium against live_server). Screenshots land in test-output/screenshots/."""

from __future__ import annotations

import io
import os
from typing import Any

import pytest

from scoring.race import FAILURE_CATEGORIES
from submissions.demo_loaders.race import load_race_demo
from submissions.demo_loaders.scorecard import load_scorecard_demo
from tests.browser import shoot

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


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
    # Race 5 runs and race 4 is embargoed: visitors get the Overall after race 3 and race 5 named as live.
    assert "race 3" in page.locator(".tab-note").inner_text()
    assert "Race 5 is live" in page.locator("[data-live-race]").inner_text()
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


def _revealed_demo() -> Any:
    from leaderboard.models import Release, ScorecardRun

    load_scorecard_demo(stdout=io.StringIO())
    Release.objects.filter(benchmark__slug="sokoban-hidden").update(reveal_hidden_levels=True)
    return ScorecardRun.objects.get(agent_version__agent__name="Crate Whisperer")


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
def test_a_visitor_replays_a_solved_episode_to_its_end(live_server: Any, browser: Any, width: int, height: int) -> None:
    from submissions.models import CardEpisode

    run = _revealed_demo()
    solved = CardEpisode.objects.filter(card_id=run.card_id, solved=True).order_by("id").first()
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/scorecards/cards/{run.card_id}/")
    page.get_by_role("link", name=solved.level.level_id, exact=True).click()
    page.wait_for_url(f"**/episodes/{solved.level.level_id}/")
    board = page.locator("[data-replay-board]")
    crates = solved.level.xsb.count("$") + solved.level.xsb.count("*")
    assert board.locator(".sk-crate").count() == crates
    assert board.locator(".sk-player").count() == 1
    shoot(page, f"schemes-replay-start-{width}")
    page.get_by_role("button", name="▶ Play").click()
    # The page's CSP forbids eval, so the wait polls from here rather than with wait_for_function.
    entries = page.locator("[data-replay-moves] li").count()
    replay = page.locator("[data-replay]")
    for _ in range(300):
        if replay.get_attribute("data-position") == str(entries):
            break
        page.wait_for_timeout(100)
    assert replay.get_attribute("data-position") == str(entries)
    status = page.locator("[data-replay-status]").inner_text()
    assert f"Step {solved.steps}" in status and "solved" in status
    # At the end every crate stands on a goal: the replay reproduced the server's result.
    assert board.locator(".sk-crate--home").count() == crates
    assert page.get_by_role("button", name="▶ Play").is_visible()
    shoot(page, f"schemes-replay-end-{width}")
    assert errors == []
    context.close()


def test_a_deadlocked_episode_marks_its_deadlock_step(live_server: Any, page: Any) -> None:
    from submissions.models import CardEpisode

    run = _revealed_demo()
    wedged = CardEpisode.objects.filter(card_id=run.card_id, deadlocked=True).order_by("id").first()
    page.goto(f"{live_server.url}/scorecards/cards/{run.card_id}/episodes/{wedged.level.level_id}/")
    page.get_by_role("button", name="End »").click()
    assert "deadlocked here" in page.locator("[data-replay-status]").inner_text()
    marked = page.locator("[data-replay-moves] li.is-deadlock")
    assert marked.count() == 1 and f"step {wedged.steps}:" in marked.inner_text()
    page.get_by_role("button", name="◀ Step").click()
    assert "deadlocked here" not in page.locator("[data-replay-status]").inner_text()
    shoot(page, "schemes-replay-deadlock")
    assert page.console_errors == []


def test_without_the_reveal_setting_a_visitor_sees_steps_but_no_board_and_no_actions(
    live_server: Any, page: Any
) -> None:
    from leaderboard.models import ScorecardRun
    from submissions.models import CardEpisode

    load_scorecard_demo(stdout=io.StringIO())
    run = ScorecardRun.objects.get(agent_version__agent__name="Crate Whisperer")
    solved = CardEpisode.objects.filter(card_id=run.card_id, solved=True).order_by("id").first()
    page.goto(f"{live_server.url}/scorecards/cards/{run.card_id}/episodes/{solved.level.level_id}/")
    assert page.locator("[data-replay-board]").count() == 0
    page.get_by_role("button", name="End »").click()
    assert "solved" in page.locator("[data-replay-status]").inner_text()
    text = page.locator("[data-replay-moves]").inner_text()
    assert "action not shown" in text
    # The page promises when the server received each step: every entry says it.
    assert all(line.endswith(" UTC") for line in text.splitlines() if line.strip()), text
    assert not any(word in text for word in (" up ", " down ", " left ", " right ", "pushed"))
    shoot(page, "schemes-replay-hidden")
    assert page.console_errors == []
