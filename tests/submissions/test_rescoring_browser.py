"""The rescore proposal in the admin, in Chromium: each run's before -> after, then Apply."""

from __future__ import annotations

import io
import os

import pytest

from leaderboard.models import ReleaseTask
from submissions.models import Rescore, Run
from submissions.services.rescoring import rescore_propose
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify
from tests.browser import shoot

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
