"""Issue 13's visual rough edges in a real browser, at a laptop (1366x900) and a phone
(390x844) size: the board's first row above the fold, its verification badge on screen, the
chart's separate panels, paper line, tooltip and permalinked mode, and the copy buttons.
Screenshots: test-output/screenshots/rough-edges/."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.browser import DESKTOP, PHONE, shoot, sideways_overflow
from tests.website.conftest import make_release, make_run, make_user

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

BOARD = "/benchmarks/ale-robotics/v0.5/"


@pytest.fixture
def ten_runs(benchmark: Any) -> Any:
    """Ten ranked runs (the chart's default N): the best pass rate belongs to a mid-table run,
    and one run is partial (it ranks last on the Overall tab although its score is higher)."""
    release = make_release(benchmark)
    for i in range(9):
        make_run(release, agent_name=f"OpenHands Robotics {i}", score=1.12 - i * 0.09, pass_rate=0.80 + i * 0.01)
    make_run(release, agent_name="Careful Walker", score=0.69, pass_rate=0.995, covered=2)
    return release


def open_board(browser: Any, base: str, size: dict[str, int], query: str = "") -> tuple[Any, Any]:
    context = browser.new_context(viewport=size)
    page = context.new_page()
    page.goto(f"{base}{BOARD}{query}")
    page.wait_for_selector("#board-chart[data-metric]")
    return context, page


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_board_fits_its_width_and_shows_the_verification_badge(
    live_server: Any, browser: Any, ten_runs: Any, size: dict[str, int]
) -> None:
    context, page = open_board(browser, live_server.url, size)
    label = "desktop" if size == DESKTOP else "phone"
    assert sideways_overflow(page) is None
    first = page.locator("table.board tbody tr").first
    visible_badges = [b for b in first.locator(".badge").all() if b.is_visible()]
    assert len(visible_badges) == 1
    box = visible_badges[0].bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"], "the verification badge is off-screen"
    if size == DESKTOP:
        # A table row is visible before scrolling.
        row = first.bounding_box()
        assert row["y"] + row["height"] <= size["height"]
        assert not page.locator(".jump-link").is_visible()  # the table is on screen already
    else:
        # The table fits the phone's width: nothing of a row hides to the right.
        assert page.evaluate("document.querySelector('.table-scroll').scrollWidth") <= size["width"]
        # The chart fills about two screens above the table: one tap, above the tabs, skips it.
        jump = page.locator(".jump-link")
        box = jump.bounding_box()
        assert box["y"] + box["height"] <= size["height"] and box["height"] >= 43.5
        jump.click()
        page.wait_for_function("window.scrollY > 0")
        row = first.bounding_box()
        assert row["y"] >= 0 and row["y"] + row["height"] <= size["height"], "the first row is not on screen"
    shoot(page, f"rough-edges/board-{label}", full_page=False)
    shoot(page, f"rough-edges/board-{label}-full")
    context.close()


def test_both_mode_draws_two_panels_with_their_own_scales(live_server: Any, browser: Any, ten_runs: Any) -> None:
    context, page = open_board(browser, live_server.url, DESKTOP)
    canvas = page.locator("#board-chart")
    score_left, score_right = map(int, canvas.get_attribute("data-x-score-panel").split(","))
    pass_left, _pass_right = map(int, canvas.get_attribute("data-x-pass-panel").split(","))
    assert score_right <= pass_left, "the score and pass-rate scales overlap: one set of bars on two axes"
    # The dashed "matched the paper" line sits at score 1.00, inside the score panel.
    x_one = page.evaluate("Chart.getChart(document.getElementById('board-chart')).scales.xScore.getPixelForValue(1)")
    assert score_left < x_one < score_right
    shoot(page, "rough-edges/chart-both", full_page=False)
    context.close()


def test_the_tooltip_gives_the_interval_and_the_coverage(live_server: Any, browser: Any, ten_runs: Any) -> None:
    context, page = open_board(browser, live_server.url, DESKTOP)
    bar = page.evaluate(
        """() => { const c = Chart.getChart(document.getElementById('board-chart'));
                   const b = c.getDatasetMeta(0).data[0]; const r = c.canvas.getBoundingClientRect();
                   return {x: r.left + b.x - 5, y: r.top + b.y}; }"""
    )
    page.mouse.move(bar["x"], bar["y"])
    page.wait_for_function("Chart.getChart(document.getElementById('board-chart')).tooltip.opacity > 0")
    lines = page.evaluate(
        """() => { const t = Chart.getChart(document.getElementById('board-chart')).tooltip;
                   return t.body.flatMap(b => [...b.lines, ...b.after]); }"""
    )
    text = " ".join(lines)
    assert "Score 1.12 (95% CI 1.07\u20131.17)" in text
    assert "Coverage 4/4 tasks" in text
    shoot(page, "rough-edges/chart-tooltip", full_page=False)
    context.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_pass_rate_mode_picks_the_top_n_by_pass_rate_and_stays_in_the_address(
    live_server: Any, browser: Any, ten_runs: Any, size: dict[str, int]
) -> None:
    context, page = open_board(browser, live_server.url, size)
    page.locator(".segmented label", has_text="Pass rate").click()
    page.wait_for_selector("#board-chart[data-by=pass_rate][data-metric=pass_rate]")
    assert "metric=pass_rate" in page.url
    first = page.locator("[data-chart-rows] tr").first.locator("th").text_content()
    assert first == "Careful Walker 1.0"  # the best pass rate, although it ranks last
    assert page.locator("#chart-heading").inner_text().startswith("Top 10 agents by pass rate")
    # The key describes the bars on screen: it spoke of score bars and a dashed line there were not.
    keys = [key.inner_text() for key in page.locator("[data-chart-key]").all() if key.is_visible()]
    assert len(keys) == 1 and keys[0].startswith("Hatched: pass rate, the share of episodes that succeeded")
    assert "metric=pass_rate" in page.locator("nav.tabs a", has_text="Reproduction").get_attribute("href")
    label = "desktop" if size == DESKTOP else "phone"
    shoot(page, f"rough-edges/chart-pass-rate-{label}", full_page=False)
    # The address is a permalink: opening it again draws the same mode.
    page.goto(page.url)
    page.wait_for_selector("#board-chart[data-by=pass_rate][data-metric=pass_rate]")
    assert page.locator("#chart-metric-pass_rate").is_checked()
    assert sideways_overflow(page) is None
    context.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_badge_snippet_has_a_copy_button(
    live_server: Any, browser: Any, ten_runs: Any, size: dict[str, int]
) -> None:
    context = browser.new_context(viewport=size, permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.goto(f"{live_server.url}/agents/careful-walker/")
    button = page.locator("button[data-copy]").first
    assert button.is_visible()
    snippet = page.locator(f"#{button.get_attribute('data-copy')}").inner_text()
    button.click()
    page.wait_for_selector("button[data-copy][data-copied]")
    assert page.evaluate("navigator.clipboard.readText()") == snippet
    assert sideways_overflow(page) is None
    shoot(page, f"rough-edges/agent-copy-{'desktop' if size == DESKTOP else 'phone'}", full_page=False)
    context.close()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_live_diff_rounds_float_noise_and_the_refused_step_is_red(
    live_server: Any, browser: Any, benchmark: Any, size: dict[str, int]
) -> None:
    """The upload page's script renders a mismatch: the server's answer is stubbed with
    Playwright so the values are known (0.48835533749999993 must read 0.488355)."""
    import json

    make_user("noisy")
    context = browser.new_context(viewport=size)
    page = context.new_page()
    base = live_server.url
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill("noisy")
    page.get_by_label("Password").fill("a-long-test-password-1")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")
    answer = {
        "id": "00000000-0000-0000-0000-000000000001",
        "status": "done",
        "status_label": "Done",
        "verdict": "mismatch",
        "done": True,
        "created": True,
        "error_code": "score_mismatch",
        "error_message": "1 claimed value differs from the recomputation",
        "diff": [{"path": "tasks.walk.final", "claimed": 0.48835533749999993, "recomputed": 0.5, "status": "diff"}],
        "run_url": None,
        "detail_url": "/submissions/",
        "status_url": "/submissions/",
    }

    def fulfil(route: Any) -> None:
        if route.request.method == "POST":
            route.fulfill(status=201, content_type="application/json", body=json.dumps(answer))
        else:
            route.continue_()

    page.route("**/submit/", fulfil)
    page.goto(f"{base}/submit/")
    page.set_input_files(
        "#id_bundle", files=[{"name": "x.age", "mimeType": "application/octet-stream", "buffer": b"x"}]
    )
    page.get_by_role("button", name="Upload and verify").click()
    page.wait_for_selector(".status-panel[data-verdict=mismatch]")
    cells = page.locator("[data-field=diff-rows] td.num").all_inner_texts()
    assert cells == ["0.488355", "0.5"]
    done = page.locator(".status-panel [data-step=done]").get_attribute("class")
    assert "is-failed" in done and "is-done" not in done
    assert sideways_overflow(page) is None
    shoot(page, f"rough-edges/upload-mismatch-{'desktop' if size == DESKTOP else 'phone'}")
    context.close()
