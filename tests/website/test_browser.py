"""Real-browser tests: Playwright (sync API) driving Debian's Chromium against
pytest-django's live_server. Each test saves screenshots under
test-output/screenshots/ (gitignored) for a human to look at."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.browser import shoot
from tests.website.conftest import make_release, make_run, make_user

# Playwright's sync API runs an event loop in this thread; the ORM calls the
# tests make between page actions are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("a-long-test-password-1")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")


def test_a_visitor_switches_tabs_toggles_the_chart_and_opens_a_run(live_server: Any, page: Any, benchmark: Any) -> None:
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha", score=1.12, pass_rate=0.99)
    make_run(release, agent_name="Bravo", score=0.83, pass_rate=0.9, ci=0.3)
    make_run(release, agent_name="Open Only", score=0.7, pass_rate=0.8, covered=2, tabs=("overall", "open"))
    for i in range(6):
        make_run(release, agent_name=f"Delta {i}", score=0.6 - i * 0.05, pass_rate=0.7 + i * 0.03)
    base = live_server.url

    page.goto(f"{base}/")
    shoot(page, "home")
    page.get_by_role("link", name="v0.5").click()
    page.wait_for_selector("#board-chart[data-metric=both]")
    shoot(page, "board-overall")
    assert page.locator("table.board tbody tr").count() == 9

    for label, value in (("Score", "score"), ("Pass rate", "pass_rate"), ("Both", "both")):
        page.locator(".segmented label", has_text=label).click()
        page.wait_for_selector(f"#board-chart[data-metric={value}]")
        shoot(page, f"chart-{value}", full_page=False)

    # The tabs are links: reachable and followed with the keyboard alone.
    page.locator("nav.tabs a", has_text="Reproduction").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**tab=reproduction**")
    assert page.locator("nav.tabs a[aria-current=page]").inner_text() == "Reproduction"
    assert page.locator("table.board").get_by_text("Open Only").count() == 0
    page.get_by_role("link", name="Open-ended").click()
    page.wait_for_url("**tab=open**")
    assert page.locator("table.board").get_by_text("Open Only").count() == 1

    page.get_by_role("link", name="Overall").click()
    page.locator("table.board").get_by_role("link", name="Bravo").click()
    page.wait_for_selector("h1")
    assert "Not published" in page.locator("table.data").first.inner_text()
    shoot(page, "run")
    assert page.console_errors == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [1280, 360])
def test_the_chart_marks_a_partial_run_ranked_below_a_lower_score(
    live_server: Any, browser: Any, benchmark: Any, width: int
) -> None:
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha", score=0.5)
    make_run(release, agent_name="Bravo", score=0.9, covered=2)  # partial: ranks after Alpha
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    page.goto(f"{live_server.url}/benchmarks/ale-robotics/v0.5/")
    page.wait_for_selector("#board-chart[data-metric=both]")
    labels = page.evaluate("Chart.getChart(document.getElementById('board-chart')).data.labels")
    assert labels == ["1. Alpha 1.0", "2. \u25d0 Bravo 1.0"]
    # The board table's caption explains the mark, right below the chart.
    assert "Partial runs rank after every complete run" in page.locator("#board-caption").inner_text()
    page.get_by_text("Chart data as a table", exact=True).click()
    assert page.locator("[data-chart-rows] tr").nth(1).locator("td").first.inner_text() == "2 \u25d0"
    shoot(page, f"chart-partial-{width}", full_page=False)
    context.close()


def test_the_chart_marks_no_run_when_every_plotted_run_is_complete(live_server: Any, page: Any, benchmark: Any) -> None:
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha", score=0.5)
    make_run(release, agent_name="Bravo", score=0.9)
    page.goto(f"{live_server.url}/benchmarks/ale-robotics/v0.5/")
    page.wait_for_selector("#board-chart[data-metric=both]")
    assert page.evaluate("Chart.getChart(document.getElementById('board-chart')).data.labels") == [
        "1. Bravo 1.0",
        "2. Alpha 1.0",
    ]
    assert "\u25d0" not in page.locator("[data-chart-rows]").inner_text()


def test_the_board_is_readable_at_phone_width(live_server: Any, browser: Any, benchmark: Any) -> None:
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha", score=1.12, pass_rate=0.99)
    make_run(release, agent_name="Bravo", score=0.83, pass_rate=0.9, covered=2)
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    page.goto(f"{live_server.url}/benchmarks/ale-robotics/v0.5/")
    page.wait_for_selector("#board-chart[data-metric=both]")
    # The page never scrolls sideways, and on a phone the board keeps the columns that fit
    # (runtime, tokens, effort and date stay in the exports): its verification badge is on screen.
    assert page.evaluate("document.documentElement.scrollWidth") <= 360
    assert page.evaluate("document.querySelector('.table-scroll').scrollWidth") <= 360
    assert not page.locator("table.board td.col-runtime").first.is_visible()
    badge = page.locator("table.board tbody tr").first.locator(".badge.phone-only")
    assert badge.is_visible() and badge.bounding_box()["x"] + badge.bounding_box()["width"] <= 360
    shoot(page, "board-phone")
    context.close()


def test_the_task_and_release_pages_render_markdown_and_withhold_anchors(
    live_server: Any, page: Any, benchmark: Any
) -> None:
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha")
    page.goto(f"{live_server.url}/benchmarks/ale-robotics/v0.5/release/")
    shoot(page, "release")
    assert page.get_by_text("Not published").count() == 3
    page.get_by_role("link", name="Task grasp").click()
    page.wait_for_selector("#paper-heading")
    assert page.locator(".prose strong", has_text="Table 2").count() == 1
    shoot(page, "task")


def test_a_submitter_signs_in_and_sees_only_their_submissions(live_server: Any, page: Any, benchmark: Any) -> None:
    release = make_release(benchmark)
    owner = make_user("owner")
    make_run(release, agent_name="Mine", submitter=owner, is_private=True)
    make_run(release, agent_name="Theirs")
    sign_in(page, live_server.url, "owner")
    page.get_by_role("link", name="My submissions").click()
    assert page.locator("table.data tbody tr").count() == 1
    shoot(page, "my-submissions")
    page.get_by_role("link", name="Submit", exact=True).click()
    shoot(page, "upload")


@pytest.fixture
def demo_site(settings: Any, tmp_path: Path) -> dict[str, Any]:
    """The demo release synced and published, and a fresh site age key (no file on disk)."""
    import pyrage

    from leaderboard.manifest import load_manifest
    from leaderboard.services.release_gates import release_sign_off_all
    from leaderboard.services.release_sync import release_sync

    identity = pyrage.x25519.Identity.generate()
    settings.PODIUM_SITE_KEYS = str(identity)
    settings.MEDIA_ROOT = tmp_path / "media"
    path = Path(settings.BASE_DIR) / "examples" / "demo-release"
    # Calibrated with the demo judge's rubric, as load_demo does (a judge counts only for that rubric).
    from submissions.management.commands.load_demo import DEMO_RUBRIC

    release = release_sign_off_all(
        release=release_sync(manifest=path, user=None).release, user=None, rubric_version=DEMO_RUBRIC
    )
    assert release.published
    manifest = load_manifest(path)
    return {
        "manifest": manifest,
        "release": release,
        "recipient": str(identity.to_public()),
        "evaluator_keys": _register_evaluator_keys(manifest),
    }


def _register_evaluator_keys(manifest: Any) -> dict[str, Any]:
    """One registered evaluator key per simulator of the release (a key signs only its simulator's
    tasks): withheld-anchor tasks are scored only from signed results."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from leaderboard.models import Evaluator
    from submissions.bundle.signatures import public_key_b64
    from submissions.services.signing_keys import signing_key_register

    keys = {}
    for simulator in sorted({task.simulator for task in manifest.tasks}):
        keys[simulator] = Ed25519PrivateKey.generate()
        signing_key_register(
            evaluator=Evaluator.objects.get(simulator=simulator),
            public_key_b64=public_key_b64(keys[simulator]),
            user=None,
        )
    return keys


def test_a_submitter_gets_a_challenge_uploads_a_sealed_bundle_and_watches_it_attest(
    live_server: Any, page: Any, demo_site: dict[str, Any], tmp_path: Path
) -> None:
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir

    manifest, release = demo_site["manifest"], demo_site["release"]
    # Open tasks whose anchor is published, so the run page has nothing withheld to show; the
    # results are signed in scope and bound to the challenge all the same (attested).
    open_slugs = sorted(task.slug for task in manifest.tasks if task.genre == "open" and task.anchor_published)
    make_user("submitter")
    base = live_server.url

    sign_in(page, base, "submitter")
    page.get_by_role("link", name="Submit", exact=True).click()
    assert demo_site["recipient"] in page.locator("[data-site-key]").inner_text()
    # The challenge for this run, asked for on the upload page, goes into the bundle.
    page.get_by_label("Release").fill(release.version)
    page.get_by_label("Agent name").fill("Browser Bot")
    page.get_by_label("Agent version").fill("1.0")
    page.get_by_role("button", name="Get a challenge").click()
    token = page.locator("[data-challenge-token]").inner_text().strip()
    shoot(page, "upload-challenge")
    directory = write_paper_gap_bundle_dir(
        tmp_path / "browser-bot",
        release_manifest=manifest,
        agent_name="Browser Bot",
        agent_version="1.0",
        skill=0.95,
        seed=77,
        tasks=open_slugs,
        challenge=token,
        sign_with=demo_site["evaluator_keys"],
    )
    sealed = seal_dir(directory, demo_site["recipient"])
    page.set_input_files("#id_bundle", str(sealed))
    shoot(page, "upload-chosen")
    page.get_by_role("button", name="Upload and verify").click()
    # Open tasks only (no faithfulness gate), every result signed in scope, bound to the challenge.
    page.wait_for_selector(".status-panel[data-verdict=attested]", timeout=60_000)
    assert page.locator("[data-progress-bar]").get_attribute("value") == "100"
    assert "attested" in page.locator(".status-panel .status-line").inner_text()
    shoot(page, "upload-attested")

    page.locator("[data-field=run-href]").click()
    page.wait_for_selector("h1")
    assert "Browser Bot" in page.locator("h1").inner_text()
    # Both tasks publish their anchors: nothing on the run page is withheld.
    assert page.get_by_text("Not published").count() == 0
    assert page.locator(".withheld").count() == 0
    shoot(page, "run-uploaded")

    board = f"{base}/benchmarks/{release.benchmark.slug}/{release.version}/"
    page.goto(board)
    assert page.locator("table.board").get_by_text("Browser Bot").count() == 1
    page.get_by_role("link", name="Reproduction").click()
    page.wait_for_url("**tab=reproduction**")
    assert page.locator("table.board").get_by_text("Browser Bot").count() == 0
    page.get_by_role("link", name="Open-ended").click()
    page.wait_for_url("**tab=open**")
    assert page.locator("table.board").get_by_text("Browser Bot").count() == 1
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_a_mismatching_bundle_shows_its_error_and_diff_live(
    live_server: Any, page: Any, demo_site: dict[str, Any], tmp_path: Path
) -> None:
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir

    directory = write_paper_gap_bundle_dir(
        tmp_path / "tampered",
        release_manifest=demo_site["manifest"],
        agent_name="Fibber",
        agent_version="0.1",
        seed=78,
        tamper="claimed_score",
        sign_with=demo_site["evaluator_keys"],
    )
    sealed = seal_dir(directory, demo_site["recipient"])
    make_user("fibber")
    sign_in(page, live_server.url, "fibber")
    page.goto(f"{live_server.url}/submit/")
    page.set_input_files("#id_bundle", str(sealed))
    page.get_by_role("button", name="Upload and verify").click()
    page.wait_for_selector(".status-panel[data-verdict=mismatch]", timeout=60_000)
    assert page.locator(".status-panel [data-field=error]").is_visible()
    assert page.locator(".status-panel tr.row--diff").count() >= 1
    # Steps coloured by outcome: the verdict step of a mismatch is red, not a green tick.
    assert "is-failed" in page.locator(".status-panel [data-step=done]").get_attribute("class")
    assert "is-done" not in page.locator(".status-panel [data-step=done]").get_attribute("class")
    shoot(page, "upload-mismatch")
    # The same file again: the page says it is the earlier submission, not a new one.
    page.goto(f"{live_server.url}/submit/")
    page.set_input_files("#id_bundle", str(sealed))
    page.get_by_role("button", name="Upload and verify").click()
    page.wait_for_selector(".status-panel [data-field=duplicate]:not([hidden])")
    assert "You uploaded this exact file before" in page.locator("[data-field=duplicate]").inner_text()
    shoot(page, "upload-duplicate")


def test_the_demo_site_in_a_browser(live_server: Any, page: Any, demo_site: dict[str, Any]) -> None:
    """The demo data loaded through the real upload/verify path, page by page (screenshots for review)."""
    import io

    from django.core.management import call_command

    call_command("load_demo", stdout=io.StringIO())
    base = live_server.url
    page.goto(f"{base}/")
    shoot(page, "demo-home")
    page.get_by_role("link", name="ALE Robotics").first.click()
    page.wait_for_selector("#board-chart[data-metric=both]")
    assert page.locator("table.board .badge--attested").count() >= 1
    shoot(page, "demo-board")
    page.locator("#chart-n").select_option("5")
    from playwright.sync_api import expect

    expect(page.locator("[data-chart-rows] tr")).to_have_count(5)
    page.get_by_role("link", name="Reproduction").click()
    page.wait_for_selector("#board-chart[data-metric=both]")
    shoot(page, "demo-board-reproduction")
    page.get_by_role("link", name="Overall").click()
    page.locator("table.board tbody tr").first.get_by_role("link").first.click()
    page.wait_for_selector("#provenance-heading")
    shoot(page, "demo-run-top", full_page=False)
    page.locator("summary", has_text="Every compared field").click()
    shoot(page, "demo-run")
    page.locator("h1 a").click()
    shoot(page, "demo-agent")
    page.goto(page.url.split("/agents/")[0] + "/")
    page.get_by_role("link", name="ALE Robotics").first.click()
    page.get_by_role("link", name="Tasks & changes").click()
    shoot(page, "demo-release")
    page.locator("table.data tbody th a").first.click()
    shoot(page, "demo-task")
    page.goto(f"{base}/accounts/login/")
    shoot(page, "login")
    page.goto(f"{base}/accounts/signup/")
    shoot(page, "signup")
    assert page.console_errors == []  # type: ignore[attr-defined]
