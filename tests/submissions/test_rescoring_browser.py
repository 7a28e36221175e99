"""The rescore proposal in the admin, in Chromium: each run's before -> after, then Apply."""

from __future__ import annotations

import io
import os

import pytest

from leaderboard.models import ReleaseTask, Run
from submissions.models import Rescore
from submissions.services.rescoring import rescore_propose
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify
from tests.browser import DESKTOP, PHONE, shoot, sideways_overflow

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_staff_review_a_proposed_rescore_and_apply_it(live_server, page, owner, demo_release, seal, make_user):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    submission_verify(submission_id=submission.pk)
    run = Run.objects.get(submission=submission)
    release_task = ReleaseTask.objects.filter(release=demo_release).order_by("position").first()
    ReleaseTask.objects.filter(pk=release_task.pk).update(paper_value=release_task.paper_value * 1.5)
    admin_user = make_user("admin")
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    rescore = rescore_propose(release=demo_release, user=admin_user, reason="anchor corrected")
    assert Rescore.objects.get(pk=rescore.pk).state == "proposed"  # in-process: computed on commit

    page.goto(f"{live_server.url}/admin/login/?next=/admin/submissions/rescore/{rescore.pk}/change/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "a-long-test-password-123")
    page.click("input[type=submit]")
    page.wait_for_selector("text=before → after")
    assert page.locator("code", has_text="overall").count() >= 1
    shoot(page, "admin-rescore-proposed")

    page.goto(f"{live_server.url}/admin/submissions/rescore/")
    page.check(f"input[name=_selected_action][value='{rescore.pk}']")
    page.select_option("select[name=action]", "apply")
    page.click("button[name=index]")
    page.wait_for_selector("text=applied")
    shoot(page, "admin-rescore-applied")
    assert Rescore.objects.get(pk=rescore.pk).state == "applied"
    assert Run.objects.get(pk=run.pk).events.filter(method__contains=f"rescore {rescore.pk}").exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_staff_carry_a_release_s_runs_onto_a_corrected_version_in_the_admin(
    live_server, browser, owner, demo_release, release_from_spec, seal, make_user, size
):
    from submissions.bundle.demo import DEMO_BENCHMARK, demo_release_spec

    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    submission_verify(submission_id=submission.pk)
    run = Run.objects.get(submission=submission)
    spec, _ = demo_release_spec()
    corrected = release_from_spec(spec, benchmark=DEMO_BENCHMARK, version="0.6")
    release_task = ReleaseTask.objects.filter(release=corrected).order_by("position").first()
    ReleaseTask.objects.filter(pk=release_task.pk).update(paper_value=release_task.paper_value * 1.5)
    admin_user = make_user("admin")
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    label = "desktop" if size == DESKTOP else "phone"
    page = browser.new_context(viewport=size).new_page()

    page.goto(f"{live_server.url}/admin/login/?next=/admin/leaderboard/release/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "a-long-test-password-123")
    page.click("input[type=submit]")
    page.check(f"input[name=_selected_action][value='{demo_release.pk}']")
    page.select_option("select[name=action]", "propose_carry")
    page.click("button[name=index]")
    page.wait_for_selector("text=Carry onto release")
    assert page.locator("#carry-target").input_value() == str(corrected.pk)
    page.fill("#carry-reason", "anchor corrected in 0.6")
    assert sideways_overflow(page) is None
    shoot(page, f"admin-carry-choose-{label}")
    page.click("input[name=confirm]")
    page.wait_for_selector("text=proposed onto release 0.6")
    rescore = Rescore.objects.get(target_release=corrected)
    assert rescore.state == "proposed"  # in-process: computed on commit

    page.goto(f"{live_server.url}/admin/submissions/rescore/{rescore.pk}/change/")
    page.wait_for_selector("text=before → after")
    assert page.locator("code", has_text="overall").count() >= 1
    shoot(page, f"admin-carry-proposed-{label}")
    page.goto(f"{live_server.url}/admin/submissions/rescore/")
    page.check(f"input[name=_selected_action][value='{rescore.pk}']")
    page.select_option("select[name=action]", "apply")
    page.click("button[name=index]")
    page.wait_for_selector("text=applied")
    carried = Run.objects.get(release=corrected)
    assert carried.carried_from_id == run.pk

    page.goto(f"{live_server.url}/benchmarks/{DEMO_BENCHMARK}/0.6/")
    assert page.locator("table.board tbody tr").count() == 1
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    shoot(page, f"board-after-carry-{label}")
    page.goto(f"{live_server.url}/runs/{carried.pk}/")
    assert page.get_by_text(f"carried over from run {run.pk}").count() >= 1
    assert page.locator("dt", has_text="Carried from").count() == 1
    assert "claims were compared there" in page.locator("section", has_text="Claimed versus recomputed").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    shoot(page, f"run-carried-{label}")
    page.context.close()
