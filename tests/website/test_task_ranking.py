"""The per-task view: every public agent version on one task, ranked, through
leaderboard.disclosure (anonymous / another account / submitter / staff)."""

from __future__ import annotations

import csv
import io
import re

import pytest
from django.urls import reverse

from tests.website.conftest import PUBLISHED_ANCHOR, WITHHELD_ANCHORS, make_run, make_user

MEASURED = "0.5"  # every factory result's measured value


def _task_url(task: str, suffix: str = "") -> str:
    if suffix:
        return reverse(f"task_results_{suffix}", args=["ale-robotics", "v0.5", task])
    return reverse("task_detail", args=["ale-robotics", "v0.5", task])


def _set_final(run, task: str, final: float) -> None:
    run.task_results.filter(release_task__task__slug=task).update(final=final, score=final, gap=final)


def test_the_task_page_ranks_agent_versions_by_their_final_score_on_that_task(client, release):
    low = make_run(release, agent_name="Low", score=0.4)
    high = make_run(release, agent_name="High", score=0.3)
    _set_final(high, "walk", 1.21)
    _set_final(low, "walk", 0.77)
    rows = client.get(_task_url("walk", "json")).json()["rows"]
    assert [(r["rank"], r["agent"], r["final"]) for r in rows] == [(1, "High", 1.21), (2, "Low", 0.77)]
    body = client.get(_task_url("walk")).content.decode()
    assert body.index("High") < body.index("Low")
    assert "1.21" in body


def test_an_agent_version_appears_once_with_its_best_run_on_the_task(client, release):
    first = make_run(release, agent_name="Same", version="2", score=0.5, with_standings=False)
    second = make_run(release, agent_name="Same", version="2", score=0.6, with_standings=False)
    _set_final(first, "walk", 1.3)
    _set_final(second, "walk", 0.2)
    rows = client.get(_task_url("walk", "json")).json()["rows"]
    assert [(r["agent"], r["version"], r["run_id"], r["final"]) for r in rows] == [("Same", "2", first.pk, 1.3)]


def test_private_runs_are_not_on_the_task_ranking_even_for_their_submitter(client, release):
    owner = make_user()
    make_run(release, agent_name="Hidden", submitter=owner, is_private=True)
    make_run(release, agent_name="Shown")
    client.force_login(owner)
    rows = client.get(_task_url("walk", "json")).json()["rows"]
    assert [r["agent"] for r in rows] == ["Shown"]


@pytest.mark.parametrize("viewer", ["anonymous", "another", "submitter", "staff"])
def test_a_withheld_anchors_measured_value_and_scores_are_shown_to_the_submitter_and_staff_only(
    client, release, viewer
):
    owner = make_user()
    make_run(release, agent_name="Alpha", submitter=owner)
    if viewer == "another":
        client.force_login(make_user())
    elif viewer == "submitter":
        client.force_login(owner)
    elif viewer == "staff":
        client.force_login(make_user(is_staff=True))
    row = client.get(_task_url("grasp", "json")).json()["rows"][0]
    sees = viewer in ("submitter", "staff")
    assert row["measured"] == (0.5 if sees else None)
    assert row["withheld"] == ([] if sees else ["final", "gap", "measured", "score"])
    # Evaluator-signed, yet a visitor gets no score: a guessable measured value (k / N) and the gap
    # would give the anchor (docs/security-model.md); a hidden score takes no rank.
    assert (row["final"], row["rank"]) == ((0.8, 1) if sees else (None, None))
    page = client.get(_task_url("grasp")).content.decode()
    assert ("Withheld" in page) is not sees
    for anchor in WITHHELD_ANCHORS:
        assert str(anchor) not in page


@pytest.mark.parametrize("viewer", ["anonymous", "submitter", "staff"])
def test_an_unsigned_result_on_a_withheld_anchor_is_not_ranked_and_its_score_shown_to_staff_only(
    client, release, viewer
):
    owner = make_user()
    # Both the submitter's: their signed run's score is theirs to see, the chosen one's is not.
    make_run(release, agent_name="Signed", submitter=owner, score=0.3)
    make_run(release, agent_name="Chosen", submitter=owner, score=0.9, signature="unsigned", with_standings=False)
    if viewer == "submitter":
        client.force_login(owner)
    elif viewer == "staff":
        client.force_login(make_user(is_staff=True))
    rows = {r["agent"]: r for r in client.get(_task_url("grasp", "json")).json()["rows"]}
    chosen = rows["Chosen"]
    if viewer == "staff":
        assert (chosen["rank"], chosen["final"], chosen["withheld"]) == (1, 0.9, [])
        assert rows["Signed"]["rank"] == 2
    else:
        assert (chosen["rank"], chosen["final"], chosen["gap"]) == (None, None, None)
        assert "final" in chosen["withheld"]
        # The signed run's score is its submitter's (and staff's) to see; the hidden one places nobody.
        assert rows["Signed"]["rank"] == (1 if viewer == "submitter" else None)


def test_the_task_csv_has_a_header_and_one_line_per_agent_version_with_wilson_bounds(client, release):
    make_run(release, agent_name="Alpha", pass_rate=0.95)
    response = client.get(_task_url("walk", "csv"))
    assert response["Content-Disposition"] == 'attachment; filename="ale-robotics-v0.5-walk.csv"'
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 1
    assert rows[0]["agent"] == "Alpha" and rows[0]["measured"] == MEASURED
    low, high = float(rows[0]["pass_rate_ci_low"]), float(rows[0]["pass_rate_ci_high"])
    assert low < 0.95 < high <= 1.0


def test_the_task_json_carries_the_anchor_only_where_it_is_published(client, release):
    make_run(release, agent_name="Alpha")
    assert client.get(_task_url("walk", "json")).json()["anchor"] == PUBLISHED_ANCHOR
    assert client.get(_task_url("grasp", "json")).json()["anchor"] is None


def test_a_task_not_in_the_release_is_a_404(client, release):
    assert client.get(_task_url("nope", "json")).status_code == 404
    assert client.get(_task_url("nope", "csv")).status_code == 404


def test_a_draft_releases_task_ranking_is_a_404_for_visitors(client, release):
    release.published = False
    release.save()
    make_run(release, agent_name="Alpha")
    assert client.get(_task_url("walk", "json")).status_code == 404
    client.force_login(make_user(is_staff=True))
    assert client.get(_task_url("walk", "json")).status_code == 200


def _ranking_words(body: str) -> tuple[str, str]:
    """The task page's sentence about its ranking and its table's caption, as a person reads them."""
    note = re.search(r"<p class=\"muted\" data-ranking-note>(.*?)</p>", body, re.DOTALL).group(1)
    caption = re.search(r'<p class="table-caption" id="ranking-caption">(.*?)</p>', body, re.DOTALL).group(1)
    return " ".join(re.sub(r"<[^>]+>", "", note).split()), caption


def test_a_task_whose_every_score_is_withheld_says_none_is_ranked(client, release):
    make_run(release, agent_name="Alpha")
    make_run(release, agent_name="Bravo")
    assert _ranking_words(client.get(_task_url("grasp")).content.decode()) == (
        "Each public agent version's best run on grasp. None is ranked: every score on this task is withheld"
        " (the task's anchor is not published, and a score would reveal it), so they are listed by pass rate,"
        " whose range is its 95% Wilson interval over the task's episodes.",
        "Agents on grasp, not ranked (scores withheld), ALE Robotics v0.5",
    )


def test_a_task_with_shown_scores_says_its_runs_are_ranked(client, release):
    make_run(release, agent_name="Alpha")
    assert _ranking_words(client.get(_task_url("walk")).content.decode()) == (
        "Each public agent version's best run on walk, ranked by its final score on this task (a ratio to the"
        " paper's result). The pass rate's range is its 95% Wilson interval over the task's episodes.",
        "Agents ranked on walk, ALE Robotics v0.5",
    )


def test_a_submitter_sees_their_ranked_run_and_the_withheld_ones_after_it_unranked(client, release):
    owner = make_user()
    make_run(release, agent_name="Mine", submitter=owner)
    make_run(release, agent_name="Theirs")
    client.force_login(owner)
    note, caption = _ranking_words(client.get(_task_url("grasp")).content.decode())
    assert note == (
        "Each public agent version's best run on grasp, ranked by its final score on this task (a ratio to the"
        " paper's result); the runs whose score is withheld follow, unranked. The pass rate's range is its 95%"
        " Wilson interval over the task's episodes."
    )
    assert caption == "Agents ranked on grasp, ALE Robotics v0.5"


def test_a_task_without_runs_does_not_call_anything_ranked_yet(client, release):
    note, caption = _ranking_words(client.get(_task_url("walk")).content.decode())
    assert note == (
        "Each public agent version's best run on walk, once there is one, ranked by its final score on this task"
        " (a ratio to the paper's result)."
    )
    assert caption == "Agents on walk, ALE Robotics v0.5"
