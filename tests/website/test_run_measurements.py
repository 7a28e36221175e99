"""While a task's anchor is withheld, its measured value stays with the run's
submitter and staff: measured / gap would give the anchor away."""

from __future__ import annotations

from django.urls import reverse

from leaderboard.models import TaskResult
from tests.website.conftest import make_release, make_run, make_user

MEASURED = 0.6173  # a value no other part of the page prints


def _run_with_measurements(benchmark):
    release = make_release(benchmark)
    owner = make_user()
    run = make_run(release, agent_name="Alpha", submitter=owner)
    TaskResult.objects.filter(run=run).update(measured=MEASURED)
    run.breakdown = {"tasks": {"grasp": {"measured": MEASURED, "gap": 0.8}, "walk": {"measured": MEASURED}}}
    run.save(update_fields=["breakdown"])
    return run, owner


def test_a_visitor_sees_withheld_instead_of_the_measured_value_of_a_task_with_a_withheld_anchor(client, benchmark):
    run, _ = _run_with_measurements(benchmark)
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    # Three withheld-anchor tasks hide it; the one task with a published anchor ("walk") shows it.
    assert html.count(f"{MEASURED:g}") == 2  # the walk row and its breakdown field
    assert "tasks.grasp.measured" in html
    # Three task rows, each hiding its measured value, gap and final; and in the breakdown, the claimed
    # and recomputed values of tasks.grasp's measured, gap and final.
    assert html.count(">Withheld<") == 3 * 3 + 3 * 2


def test_the_submitter_sees_every_measured_value_of_their_run(client, benchmark):
    run, owner = _run_with_measurements(benchmark)
    client.force_login(owner)
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert ">Withheld<" not in html
    assert html.count(f"{MEASURED:g}") >= 4


def test_a_stranger_who_is_signed_in_is_treated_as_a_visitor(client, benchmark):
    run, _ = _run_with_measurements(benchmark)
    client.force_login(make_user())
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert ">Withheld<" in html


def test_a_visitor_is_told_in_a_sentence_what_withheld_and_not_published_mean_only_where_the_page_shows_them(
    client, benchmark
):
    # The only explanation was a title attribute, which touch and keyboard users cannot reach.
    from leaderboard.models import ReleaseTask

    run, _ = _run_with_measurements(benchmark)
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert 'data-field="tasks-withheld"' in html
    assert "the release keeps that task's anchor (the paper's number) hidden" in html
    ReleaseTask.objects.filter(release=run.release).update(anchor_published=True)
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert ">Withheld<" not in html and "Not published" not in html
    assert 'data-field="tasks-withheld"' not in html
