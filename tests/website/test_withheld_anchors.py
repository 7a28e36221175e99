"""Withheld anchors never leave the server: every page and export of a board
with withheld anchors is rendered and searched for each value's textual forms."""

from __future__ import annotations

import re

from django.urls import reverse

from leaderboard.models import ReleaseTask
from tests.website.conftest import PUBLISHED_ANCHOR, WITHHELD_ANCHORS, make_release, make_run, make_user


def textual_forms(value: float) -> set[str]:
    forms = {repr(value), f"{value:g}", f"{value:.4g}", f"{value:.3g}", f"{value:.2f}", f"{value:.3f}", f"{value:e}"}
    forms |= {f"{value * 100:.2f}%", f"{value * 100:g}%"}
    return {form for form in forms if len(form.rstrip("%")) >= 4 or "." in form}


def leaks(body: str, value: float, *, min_digits: int = 0) -> list[str]:
    """The textual forms of ``value`` found in ``body`` (forms with at least min_digits digits)."""
    found = []
    for form in textual_forms(value):
        if sum(c.isdigit() for c in form.split("e")[0]) < min_digits:
            continue
        if re.search(rf"(?<![\d.]){re.escape(form)}(?!\d)", body):
            found.append(form)
    return found


def every_url(release, runs, owner_submission) -> list[str]:
    board = ["ale-robotics", release.version]
    urls = [reverse("home"), reverse("release_detail", args=board), reverse("chart_data", args=board) + "?n=50"]
    for tab in ("overall", "reproduction", "open"):
        for name in ("release_board", "board_csv", "board_json"):
            urls.append(reverse(name, args=board) + f"?tab={tab}")
    for rt in ReleaseTask.objects.filter(release=release).select_related("task"):
        urls.append(reverse("task_detail", args=[*board, rt.task.slug]))
    for run in runs:
        urls.append(reverse("run_detail", args=[run.pk]))
        if not run.is_private:  # an agent named only by private runs is not public (404)
            urls.append(reverse("agent_detail", args=[run.agent_version.agent.slug]))
        urls.append(reverse("agent_badge", args=[*board, run.agent_version.agent.slug]))
    urls += [
        reverse("my_submissions"),
        reverse("submission_detail", args=[owner_submission.pk]),
        reverse("submission_status", args=[owner_submission.pk]),
    ]
    return urls


def test_no_page_or_export_contains_a_withheld_anchor(client, benchmark):
    previous = make_release(benchmark, "v0.4")
    previous.published_at = previous.published_at.replace(year=2025)
    previous.save()
    release = make_release(benchmark)
    ReleaseTask.objects.filter(release=previous, task__slug="grasp").update(paper_value=0.9)  # it changed
    owner = make_user()
    runs = [
        make_run(release, agent_name="Alpha", submitter=owner, score=1.12),
        make_run(release, agent_name="Bravo", score=0.83, covered=2),
        make_run(release, agent_name="Private", submitter=owner, is_private=True),
    ]
    client.force_login(owner)
    bodies = {}
    for url in every_url(release, runs, runs[0].submission):
        response = client.get(url)
        assert response.status_code == 200, url
        content = b"".join(response.streaming_content) if response.streaming else response.content
        bodies[url] = content.decode()
    for url, body in bodies.items():
        for value in WITHHELD_ANCHORS:
            assert leaks(body, value) == [], f"{url} leaks the withheld anchor {value}"
    # The check can fail: the published anchor is found where it is shown.
    task_page = bodies[reverse("task_detail", args=["ale-robotics", "v0.5", "walk"])]
    assert leaks(task_page, PUBLISHED_ANCHOR)


def test_a_draft_releases_anchors_stay_off_the_run_page_its_submitter_sees_and_staff_see_them(client, release):
    # A run carried onto a draft is visible to its submitter; the draft's anchors are not, whatever
    # its tasks' flags say (the API and the run's results.json already said so; the page did not).
    from leaderboard.models import Release
    from tests.staff import staff_grant

    owner = make_user()
    run = make_run(release, submitter=owner, score=1.3719)
    ReleaseTask.objects.filter(release=release).update(anchor_published=True)
    Release.objects.filter(pk=release.pk).update(published=False)
    client.force_login(owner)
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert not [anchor for anchor in (*WITHHELD_ANCHORS, PUBLISHED_ANCHOR) if leaks(page, anchor)]
    assert page.count('<span class="withheld">Not published</span>') == 4
    staff = make_user()
    staff.is_staff = True
    staff.save()
    client.force_login(staff_grant(staff))
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert all(leaks(page, anchor) for anchor in (*WITHHELD_ANCHORS, PUBLISHED_ANCHOR))


def test_the_task_page_drops_anchor_like_keys_from_the_contract_at_any_depth_as_the_api_does(client, release):
    from leaderboard.api.serializers import contract_without_anchor

    row = ReleaseTask.objects.filter(release=release).select_related("task").first()
    contract = {"metric": {"name": "success"}, "eval_config": {"routes": "longest6", "gate": {"target": 0.5555}}}
    ReleaseTask.objects.filter(pk=row.pk).update(contract=contract)
    page = client.get(reverse("task_detail", args=["ale-robotics", release.version, row.task.slug])).content.decode()
    assert "longest6" in page and "0.5555" not in page and "target" not in page
    assert contract_without_anchor(contract)["eval_config"] == {"routes": "longest6", "gate": {}}
