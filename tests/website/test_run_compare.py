"""Comparing two runs side by side (a shareable URL), and a run's per-task downloads,
through the run page's visibility and leaderboard.disclosure."""

from __future__ import annotations

import csv
import html
import io

import pytest
from django.urls import reverse

from tests.website.conftest import WITHHELD_ANCHORS, make_benchmark, make_release, make_run, make_user


def _compare(client, a: int, b: int, kind: str = "json"):
    name = "run_compare_json" if kind == "json" else "run_compare"
    return client.get(reverse(name), {"a": a, "b": b})


def test_the_comparison_gives_each_tasks_difference_and_whether_the_aggregate_intervals_overlap(client, release):
    a = make_run(release, agent_name="Alpha", score=0.8, ci=0.05)
    b = make_run(release, agent_name="Bravo", score=1.1, ci=0.05)
    client.force_login(make_user(is_staff=True))  # who sees withheld tasks' scores: the tests below
    b.task_results.filter(release_task__task__slug="walk").update(final=0.5)
    data = _compare(client, a.pk, b.pk).json()
    assert (data["a"]["id"], data["b"]["id"], data["same_release"]) == (a.pk, b.pk, True)
    overall = next(row for row in data["aggregates"] if row["key"] == "overall")
    assert overall["difference"] == pytest.approx(0.3)
    assert overall["intervals_overlap"] is False
    tasks = {row["key"]: row for row in data["tasks"]}
    assert list(tasks) == ["grasp", "plan", "fly", "walk"]
    assert tasks["walk"]["difference"] == pytest.approx(0.5 - 0.8)
    assert tasks["grasp"]["difference"] == pytest.approx(0.3)
    # Same pass rate over the same episodes: the Wilson intervals coincide.
    assert tasks["walk"]["pass_rate_intervals_overlap"] is True


def test_overlapping_bootstrap_intervals_are_reported_as_overlapping(client, release):
    a = make_run(release, score=0.8, ci=0.3)
    b = make_run(release, score=0.9, ci=0.3)
    overall = next(row for row in _compare(client, a.pk, b.pk).json()["aggregates"] if row["key"] == "overall")
    assert overall["intervals_overlap"] is True


def test_the_comparison_page_is_the_shareable_url_and_shows_both_runs(client, release):
    a = make_run(release, agent_name="Alpha", score=0.8)
    b = make_run(release, agent_name="Bravo", score=1.1)
    response = _compare(client, a.pk, b.pk, kind="page")
    body = response.content.decode()
    assert response.status_code == 200
    assert "Alpha" in body and "Bravo" in body
    assert "+0.30" in body  # Overall B - A
    assert f"a={b.pk}&amp;b={a.pk}" in body  # the swap link
    for anchor in WITHHELD_ANCHORS:
        assert str(anchor) not in body


@pytest.mark.parametrize("viewer", ["anonymous", "another", "submitter", "staff"])
def test_a_private_run_is_compared_only_for_its_submitter_and_staff(client, release, viewer):
    owner = make_user()
    public = make_run(release, agent_name="Public")
    private = make_run(release, agent_name="Private", submitter=owner, is_private=True)
    if viewer == "another":
        client.force_login(make_user())
    elif viewer == "submitter":
        client.force_login(owner)
    elif viewer == "staff":
        client.force_login(make_user(is_staff=True))
    expected = 200 if viewer in ("submitter", "staff") else 404
    assert _compare(client, public.pk, private.pk).status_code == expected
    assert _compare(client, private.pk, public.pk, kind="page").status_code == expected
    # A run that does not exist answers the same as one you may not see.
    assert _compare(client, public.pk, 999_999).status_code == 404


def test_a_withheld_score_has_no_difference_and_no_overlap(client, release):
    a = make_run(release, agent_name="Signed")
    b = make_run(release, agent_name="Chosen", signature="unsigned", with_standings=False)
    data = _compare(client, a.pk, b.pk).json()
    grasp = next(row for row in data["tasks"] if row["key"] == "grasp")
    assert grasp["b"] == {"value": None, "withheld": True, "present": True, "interval": None}
    assert grasp["difference"] is None
    overall = next(row for row in data["aggregates"] if row["key"] == "overall")
    assert (overall["b"]["value"], overall["difference"], overall["intervals_overlap"]) == (None, None, None)
    walk = next(row for row in data["tasks"] if row["key"] == "walk")  # published anchor: shown
    assert walk["difference"] == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        ({"a": "1"}, "b: missing"),
        ({"a": "x", "b": "2"}, "a='x'"),
        ({"a": "3", "b": "3"}, "same run"),
        ({"a": "-1", "b": "2"}, "a='-1'"),
        ({"a": "1", "b": "99999999999999999999999"}, "b="),
    ],
)
def test_a_bad_comparison_query_is_a_400_naming_the_parameter(client, db, query, fragment):
    page = client.get(reverse("run_compare"), query)
    assert page.status_code == 400
    assert fragment in html.unescape(page.content.decode())
    data = client.get(reverse("run_compare_json"), query)
    assert data.status_code == 400
    assert data.json()["error"]["code"] == "invalid_query"
    assert fragment in data.json()["error"]["message"]


def test_runs_of_two_benchmarks_are_not_compared(client, release):
    other = make_release(make_benchmark(slug="other", name="Other"), "v1")
    a = make_run(release)
    b = make_run(other)
    response = _compare(client, a.pk, b.pk)
    assert response.status_code == 400
    assert "different benchmarks" in response.json()["error"]["message"]


def test_the_empty_comparison_page_offers_the_form(client, db):
    response = client.get(reverse("run_compare"))
    assert response.status_code == 200
    assert 'name="a"' in response.content.decode()


# --- a run's per-task downloads ---------------------------------------------------------------


@pytest.mark.parametrize("viewer", ["anonymous", "another", "submitter", "staff"])
def test_a_runs_per_task_json_hides_what_the_run_page_hides(client, release, viewer):
    owner = make_user()
    run = make_run(release, submitter=owner)
    if viewer == "another":
        client.force_login(make_user())
    elif viewer == "submitter":
        client.force_login(owner)
    elif viewer == "staff":
        client.force_login(make_user(is_staff=True))
    data = client.get(reverse("run_results_json", args=[run.pk])).json()
    tasks = {t["task"]: t for t in data["tasks"]}
    sees = viewer in ("submitter", "staff")
    assert tasks["grasp"]["measured"] == (0.5 if sees else None)
    assert tasks["grasp"]["final"] == (0.8 if sees else None)
    assert (tasks["walk"]["measured"], tasks["walk"]["final"]) == (0.5, 0.8)
    assert tasks["grasp"]["anchor"] is None and tasks["walk"]["anchor"] == 0.62
    assert data["aggregates"]["overall"]["score"] == 0.8
    for anchor in WITHHELD_ANCHORS:
        assert str(anchor) not in str(data)


def test_a_runs_per_task_csv_has_one_line_per_task(client, release):
    run = make_run(release)
    response = client.get(reverse("run_results_csv", args=[run.pk]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["task"] for r in rows] == ["grasp", "plan", "fly", "walk"]
    assert rows[0]["measured"] == "" and rows[0]["withheld"] == "final;gap;measured;score"
    assert rows[0]["penalty_factors"] == "collision_rate=1.0"
    assert rows[3]["measured"] == "0.5"


def test_an_unsigned_withheld_results_scores_are_empty_in_the_download_for_its_submitter(client, release):
    owner = make_user()
    run = make_run(release, submitter=owner, signature="unsigned", with_standings=False)
    client.force_login(owner)
    data = client.get(reverse("run_results_json", args=[run.pk])).json()
    grasp = next(t for t in data["tasks"] if t["task"] == "grasp")
    assert (grasp["measured"], grasp["gap"], grasp["final"]) == (0.5, None, None)
    assert grasp["withheld"] == ["final", "gap", "score"]
    assert data["aggregates"]["overall"] == {"score": None, "interval": None, "withheld": True}


@pytest.mark.parametrize("viewer", ["anonymous", "another"])
def test_a_private_runs_downloads_are_a_404_for_others(client, release, viewer):
    run = make_run(release, is_private=True)
    if viewer == "another":
        client.force_login(make_user())
    assert client.get(reverse("run_results_json", args=[run.pk])).status_code == 404
    assert client.get(reverse("run_results_csv", args=[run.pk])).status_code == 404


def test_the_comparison_names_the_pass_rate_as_every_other_page_does(client, release):
    a = make_run(release, agent_name="Alpha")
    b = make_run(release, agent_name="Bravo")
    body = _compare(client, a.pk, b.pk, kind="page").content.decode()
    assert "Pass rate intervals" in body
    assert "Pass-rate" not in body


def test_a_runs_downloads_name_each_task_as_its_release_did_not_as_a_newer_one_renamed_it(client, release):
    from leaderboard.models import ReleaseTask, Task

    run = make_run(release, agent_name="Alpha")
    first = ReleaseTask.objects.filter(release=release).order_by("position").first()
    snapshot = (first.title, first.metric_name)
    # What syncing a newer release does to the shared row: its text is now the newer release's.
    Task.objects.filter(pk=first.task_id).update(title="Renamed later", metric_name="renamed_metric")
    rows = client.get(reverse("run_results_json", args=[run.pk])).json()["tasks"]
    row = next(r for r in rows if r["task"] == first.task.slug)
    assert (row["title"], row["metric"]) == snapshot
    other = make_run(release, agent_name="Bravo")
    compared = client.get(reverse("run_compare") + f"?a={run.pk}&b={other.pk}").content.decode()
    assert "Renamed later" not in compared and html.escape(snapshot[0]) in compared
