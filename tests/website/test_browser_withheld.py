"""Real-browser checks of what leaderboard.disclosure withholds: the live mismatch diff (drawn
by static/js/upload.js), the run page of an unsigned withheld-anchor run, and the sign-in
lockout, at desktop and phone widths. Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.utils import timezone

from leaderboard.models import TaskResult
from submissions.models import Submission
from tests.browser import shoot, write_while_served
from tests.website.conftest import make_release, make_run, make_user
from tests.website.test_browser import sign_in

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HIDDEN = 1.3719  # a recomputed value that would reveal a withheld anchor: must never be drawn
PHONE = {"width": 390, "height": 844}


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_the_live_diff_names_a_withheld_field_without_its_values(
    live_server: Any, browser: Any, benchmark: Any, viewport: str
) -> None:
    release = make_release(benchmark)
    owner = make_user("owner")
    submission = make_run(release, submitter=owner).submission
    # Still verifying when the page opens, so upload.js polls and draws the verdict itself.
    Submission.objects.filter(pk=submission.pk).update(status="verifying", verdict="", diff=[], error_message="")
    context = browser.new_context(viewport=PHONE if viewport == "phone" else {"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    sign_in(page, live_server.url, "owner")
    page.goto(f"{live_server.url}/submissions/{submission.pk}/")
    # The page is polling: on SQLite the write may meet a poll's table lock (write_while_served).
    write_while_served(
        lambda: Submission.objects.filter(pk=submission.pk).update(
            status="done",
            verdict="mismatch",
            finished_at=timezone.now(),
            error_message=f"first: tasks.grasp.final claimed 0.5, recomputed {HIDDEN!r}",
            diff=[
                {"path": "tasks.grasp.final", "claimed": 0.5, "recomputed": HIDDEN, "status": "diff"},
                {"path": "tasks.walk.final", "claimed": 0.4, "recomputed": 0.4444, "status": "diff"},
            ],
        )
    )
    page.wait_for_selector(".status-panel [data-field=diff]:not([hidden])", timeout=15_000)
    rows = page.locator(".status-panel tbody[data-field=diff-rows] tr")
    assert rows.count() == 2
    withheld_row = rows.filter(has_text="tasks.grasp.final")
    assert withheld_row.locator(".withheld").count() == 2
    assert "0.4444" in rows.filter(has_text="tasks.walk.final").inner_text()
    panel = page.locator(".status-panel").inner_text()
    assert "1.37" not in panel
    assert "{#" not in page.locator("main").inner_text()  # no template comment leaks into the page
    assert "values withheld because they would reveal a withheld anchor" in panel
    assert errors == []
    shoot(page, f"withheld-live-diff-{viewport}")
    context.close()


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_the_run_page_of_an_unsigned_withheld_run_shows_withheld_scores(
    live_server: Any, browser: Any, benchmark: Any, viewport: str
) -> None:
    release = make_release(benchmark)
    owner = make_user("owner")
    run = make_run(release, agent_name="Chooser", submitter=owner, score=HIDDEN, signature="unsigned")
    # walk's anchor is published: its own (different) scores are shown.
    TaskResult.objects.filter(run=run, release_task__task__slug="walk").update(gap=0.4444, score=0.4444, final=0.4444)
    context = browser.new_context(viewport=PHONE if viewport == "phone" else {"width": 1280, "height": 900})
    page = context.new_page()
    sign_in(page, live_server.url, "owner")  # the submitter: the person who chose the measured values
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    assert page.locator("[data-field=scores-withheld]").is_visible()
    assert page.locator("dd[data-aggregate=overall] .withheld").inner_text() == "Withheld"
    assert "1.37" not in page.locator("main").inner_text()
    shoot(page, f"withheld-run-{viewport}")
    context.close()


def test_a_locked_sign_in_says_so_in_the_browser(live_server: Any, page: Any, db: Any) -> None:
    make_user("alice")
    for n in range(10):
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Username").fill("alice")
        page.get_by_label("Password").fill(f"wrong-{n}")
        page.get_by_role("button", name="Sign in").click()
    page.get_by_label("Password").fill("a-long-test-password-1")
    page.get_by_role("button", name="Sign in").click()
    alert = page.get_by_role("alert")
    assert "Too many failed sign-in attempts" in alert.inner_text()
    assert "Sign out" not in page.locator("header").inner_text()
    shoot(page, "login-locked")
