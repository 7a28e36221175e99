"""Withdraw / hide on the run page and the verdict-webhook section of the API-keys page, in
Chromium at desktop and phone sizes (no sideways scroll at 390 px; screenshots to look at)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from leaderboard.models import Agent, AgentVersion, Run
from leaderboard.services.paper_gap_standings import standings_refresh
from submissions.models import Submission, WebhookEndpoint
from tests.browser import shoot
from tests.staff import staff_grant

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
PASSWORD = "a-long-test-password-123"
SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}


def sign_in(page: Any, base: str, username: str, next_path: str) -> None:
    page.goto(f"{base}/accounts/login/?next={next_path}")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}{next_path}")


def no_sideways_scroll(page: Any) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.fixture
def run(owner, make_release):
    release = make_release(["pick:reproduction", "place:open"])
    submission = Submission.objects.create(
        submitter=owner, sha256="b" * 64, size=1, file="bundles/b.age", status="done", verdict="validated"
    )
    agent = Agent.objects.create(slug="robo", name="Robo", owner=owner)
    version = AgentVersion.objects.create(agent=agent, version="1")
    run = Run.objects.create(
        release=release, agent_version=version, level="validated", overall=0.5,
        reproduction=0.5, open=0.5, pass_rate=0.9, covered=2, required=2, complete=True,
    )  # fmt: skip
    submission.run = run
    submission.save(update_fields=["run"])
    standings_refresh(release=release)
    return run


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("size", SIZES)
def test_the_owner_withdraws_and_staff_hide_from_the_run_page(live_server, browser, run, make_user, size):
    staff = make_user("staffer")
    staff.is_staff = True
    staff.save()
    staff = staff_grant(staff)  # hiding needs leaderboard.change_run
    path = f"/runs/{run.pk}/"
    context = browser.new_context(viewport=SIZES[size])
    page = context.new_page()
    try:
        sign_in(page, live_server.url, "owner", path)
        page.get_by_role("button", name="Withdraw from the public boards").click()
        page.wait_for_selector("[data-field=run-withdrawn]")
        assert no_sideways_scroll(page)
        shoot(page, f"run-withdrawn-{size}")
        assert Run.objects.get(pk=run.pk).withdrawn_at is not None
        page.get_by_role("button", name="Restore to the public boards").click()
        page.wait_for_selector("text=Run restored")
        context.clear_cookies()

        sign_in(page, live_server.url, "staffer", path)
        page.get_by_label("Public reason").fill("evaluator misconfigured")
        page.get_by_role("button", name="Hide run").click()
        page.wait_for_selector("[data-field=run-hidden]")
        assert no_sideways_scroll(page)
        shoot(page, f"run-hidden-staff-{size}")
        context.clear_cookies()

        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 410
        assert "evaluator misconfigured" in page.content()
        assert no_sideways_scroll(page)
        shoot(page, f"run-hidden-public-{size}")
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("size", SIZES)
def test_the_webhook_section_sets_a_url_and_shows_the_secret_once(live_server, browser, owner, size):
    context = browser.new_context(viewport=SIZES[size])
    page = context.new_page()
    try:
        sign_in(page, live_server.url, "owner", "/accounts/api-keys/")
        assert no_sideways_scroll(page)
        page.get_by_label("URL").fill("https://93.184.216.34/hook")
        page.get_by_role("button", name="Save URL").click()
        secret = page.locator("#webhook-secret").inner_text()
        assert secret == WebhookEndpoint.objects.get(user=owner).secret
        assert no_sideways_scroll(page)
        shoot(page, f"webhook-secret-{size}")
        page.goto(f"{live_server.url}/accounts/api-keys/")
        assert secret not in page.content()
        assert no_sideways_scroll(page)
        shoot(page, f"api-keys-webhook-{size}")
    finally:
        context.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("size", SIZES)
def test_a_refused_webhook_url_comes_back_in_the_form_with_its_error_under_the_field(live_server, browser, owner, size):
    context = browser.new_context(viewport=SIZES[size])
    page = context.new_page()
    try:
        sign_in(page, live_server.url, "owner", "/accounts/api-keys/")
        page.get_by_label("URL").fill("ftp://example.org/hook")
        page.get_by_role("button", name="Save URL").click()
        page.wait_for_load_state()
        assert page.title() == "Not saved: Verdict webhook · Podium"
        field = page.get_by_label("URL")
        assert field.input_value() == "ftp://example.org/hook"
        assert page.evaluate("document.activeElement.id") == "webhook-url"
        error = page.locator("#webhook-url-error")
        assert error.inner_text() == "Expected an http:// or https:// URL. Code webhook_url_invalid"
        gap = error.bounding_box()["y"] - (field.bounding_box()["y"] + field.bounding_box()["height"])
        assert 0 <= gap <= 12  # right under the field it is about
        assert no_sideways_scroll(page)
        shoot(page, f"webhook-refused-{size}")
    finally:
        context.close()
