"""Real-browser checks of the pages issue 11 items 5-9 changed, at desktop (1366x900) and
phone (390x844) sizes: the embargoed race pages, the run page with an official re-run and a
revocation, the task page of a release snapshot, and the daily limits on the upload and
API-keys pages. Screenshots go to test-output/screenshots/trust-*.png."""

from __future__ import annotations

import io
import os
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from submissions.demo_loaders.race import load_race_demo
from submissions.quotas import quota_consume, quota_scope
from submissions.services.reruns import run_level_change, run_rerun_record_results
from tests.browser import shoot
from tests.website.conftest import make_release, make_run, make_user

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


def sign_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("a-long-test-password-1")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/")


def visit_at_both_sizes(page: Any, url: str, name: str) -> str:
    """Open ``url`` at each size, screenshot it, check the page never scrolls sideways; its text."""
    text = ""
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        page.goto(url)
        shoot(page, f"trust-{name}-{size}")
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"], (name, size)
        text = page.locator("main").inner_text()
    return text


def test_the_embargoed_race_pages_show_no_raw_values_to_a_visitor(
    live_server: Any, page: Any, site_identity: Any, media_root: Any
) -> None:
    load_race_demo(stdout=io.StringIO())
    base = f"{live_server.url}/races/shopping-race"
    overall = visit_at_both_sizes(page, f"{base}/overall/", "race-overall")
    assert "Race 5 is live" in overall and "validator run" in overall
    race = visit_at_both_sizes(page, f"{base}/race/5/", "race-5-page")
    assert "Under embargo until the race is released" in race and "embargoed" in race
    results = visit_at_both_sizes(page, f"{base}/leaderboard/4/", "race-4-results")
    assert "Under embargo until the race is released" in results
    page.goto(f"{base}/race/5/")
    page.locator(".race-runs tbody tr").first.locator("a").click()
    page.wait_for_url("**/races/runs/*/")
    run = visit_at_both_sizes(page, page.url, "race-5-run")
    assert "neither the run score nor the paid rewards are shown" in run
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_staff_see_the_live_race_values_marked_as_a_staff_view(
    live_server: Any, page: Any, site_identity: Any, media_root: Any
) -> None:
    load_race_demo(stdout=io.StringIO())
    make_user("race-staff", is_staff=True)
    sign_in(page, live_server.url, "race-staff")
    text = visit_at_both_sizes(page, f"{live_server.url}/races/shopping-race/race/5/", "race-5-page-staff")
    assert "Staff view" in text
    assert page.locator(".race-field tbody tr td.rank").count() >= 1


def test_the_run_page_shows_the_official_re_run_and_the_public_log(live_server: Any, page: Any, benchmark: Any) -> None:
    release = make_release(benchmark)
    run = make_run(release, agent_name="Alpha", score=0.9, pass_rate=0.97)
    maintainer = make_user("maintainer", is_staff=True)
    results = {
        result.release_task.task.slug: {
            "measured": result.measured,
            "rates": {p["metric"]: 0.0 for p in result.release_task.penalties or []},
            "faithful": True if result.release_task.genre == "reproduction" else None,
        }
        for result in run.task_results.select_related("release_task__task")
    }
    run_rerun_record_results(run=run, actor=maintainer, results=results, note="official re-run on hidden seeds")
    run_level_change(run=run, actor=maintainer, level="revoked", reason="the evaluator image was not the official one")
    text = visit_at_both_sizes(page, f"{live_server.url}/runs/{run.pk}/", "run-rerun")
    assert "official re-runs" in text.lower() and "re-run final" in text.lower()
    assert "the evaluator image was not the official one" in text and "revoked" in text
    # The anchors of this release are withheld: a visitor sees no measured value of the re-run.
    assert page.locator(".rerun-table .withheld").count() >= 1
    task = visit_at_both_sizes(page, f"{live_server.url}/benchmarks/ale-robotics/v0.5/tasks/grasp/", "task")
    assert "Task grasp" in task
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_the_upload_and_api_keys_pages_show_the_daily_limits(live_server: Any, page: Any, benchmark: Any) -> None:
    make_release(benchmark)
    user = make_user("limited")
    quota_consume(user=user, api_key=None, scope=quota_scope(benchmark), limit=benchmark.daily_submission_limit)
    sign_in(page, live_server.url, "limited")
    for path, name in (("/submit/", "upload-limits"), ("/accounts/api-keys/", "api-keys-limits")):
        text = visit_at_both_sizes(page, f"{live_server.url}{path}", name)
        assert "Your daily limits" in text and "00:00 UTC" in text
        row = page.locator('tr[data-limit="ale-robotics"]').inner_text()
        assert f"{benchmark.daily_submission_limit - 1}" in row
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_staff_sign_off_one_tasks_anchor_with_its_evidence_in_the_admin(
    live_server: Any, page: Any, benchmark: Any
) -> None:
    from leaderboard.models import ReleaseTask

    release = make_release(benchmark)
    row = ReleaseTask.objects.get(release=release, task__slug="grasp")
    ReleaseTask.objects.filter(pk=row.pk).update(anchor_provenance="Table 2 of the paper, 200 demonstrations")
    get_user_model().objects.create_superuser("root", password="a-long-test-password-1")
    page.goto(f"{live_server.url}/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "a-long-test-password-1")
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")
    form = visit_at_both_sizes(page, f"{live_server.url}/admin/leaderboard/releasetask/{row.pk}/sign-off/", "gate-form")
    assert "Table 2 of the paper, 200 demonstrations" in form
    page.set_viewport_size(SIZES["desktop"])
    page.fill("#id_cited_source", "Table 2, BC-RNN row")
    page.fill("#id_reproduced_value", str(row.paper_value))
    page.fill("#id_tolerance", "0.05")
    page.click("input[type=submit]")
    page.wait_for_url(f"**/admin/leaderboard/releasetask/{row.pk}/change/")
    shoot(page, "trust-gate-evidence-desktop")
    text = page.locator("#content").inner_text()
    assert "Table 2, BC-RNN row" in text and "Table 2 of the paper, 200 demonstrations" in text
    row.refresh_from_db()
    assert row.anchor_cited_source == "Table 2, BC-RNN row"


def test_a_race_run_excluded_after_a_key_compromise_is_marked_with_its_reason_on_the_race_and_run_pages(
    live_server: Any, page: Any, site_identity: Any, media_root: Any
) -> None:
    from leaderboard.models import RaceRun
    from leaderboard.services.race_exclusions import race_runs_exclude
    from submissions.services.signing_keys import signing_key_revoke

    load_race_demo(stdout=io.StringIO())
    run = RaceRun.objects.filter(race__number=1, signing_key__isnull=False).order_by("pk").first()
    reason = "Validator key compromised on 2026-12-01; its runs no longer count."
    # Found out, the key is revoked first: only a revoked key's runs are excluded by key.
    signing_key_revoke(signing_key=run.signing_key, user=None)
    excluded = race_runs_exclude(user=None, reason=reason, signed_by=run.signing_key.key_id)
    assert run.pk in excluded
    base = f"{live_server.url}/races/shopping-race"
    race = visit_at_both_sizes(page, f"{base}/race/1/", "race-1-excluded")
    assert "excluded by staff" in race
    page.locator(".race-runs a", has_text="excluded by staff").first.click()
    page.wait_for_url("**/races/runs/*/")
    text = visit_at_both_sizes(page, page.url, "race-1-excluded-run")
    assert "excluded by staff" in text and reason in text
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_staff_exclude_one_race_run_from_its_page_on_a_phone_and_count_it_again(
    live_server: Any, page: Any, site_identity: Any, media_root: Any
) -> None:
    from leaderboard.models import RaceRun
    from leaderboard.permissions import CHANGE_RUN
    from tests.staff import staff_with

    load_race_demo(stdout=io.StringIO())
    run = RaceRun.objects.filter(race__number=1, excluded_at__isnull=True).order_by("pk").first()
    staff_with("maintainer", CHANGE_RUN)
    sign_in(page, live_server.url, "maintainer")
    url = f"{live_server.url}/races/runs/{run.public_id}/"
    form = visit_at_both_sizes(page, url, "race-run-exclusion-form")
    assert "Exclude from every score" in form
    page.get_by_label("Public reason").fill("Its validator reported a sandbox misconfiguration for this run.")
    page.get_by_role("button", name="Exclude from every score").click()
    page.wait_for_url(url)
    shoot(page, "trust-race-run-excluded-phone")
    text = page.locator("main").inner_text()
    assert "Run excluded from every score" in text and "sandbox misconfiguration" in text
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES["phone"]["width"]
    run.refresh_from_db()
    assert run.excluded_at is not None and run.excluded_by.username == "maintainer"
    page.get_by_role("button", name="Count this run again").click()
    page.wait_for_url(url)
    assert "Run reinstated" in page.locator("main").inner_text()
    run.refresh_from_db()
    assert run.excluded_at is None
    assert page.console_errors == []  # type: ignore[attr-defined]


def test_the_race_entries_page_wraps_a_long_agent_name_on_a_phone(
    live_server: Any, page: Any, site_identity: Any, media_root: Any
) -> None:
    # An agent name is one word of up to 100 characters: the list of entries scrolled sideways.
    from submissions.services.races import race_entry_create

    load_race_demo(stdout=io.StringIO())
    user = make_user("entrant-long")
    name = "Z" * 100
    race_entry_create(user=user, benchmark_slug="shopping-race", race_number=None, agent_name=name, agent_version="1")
    sign_in(page, live_server.url, "entrant-long")
    text = visit_at_both_sizes(page, f"{live_server.url}/submit/race-entries/", "race-entries-long-name")
    assert name in text.replace("\n", "")
