"""leaderboard.disclosure, the one rule behind every surface: what of a run (and of a mismatch
diff) each viewer may see when a task's anchor is withheld."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard.disclosure import Disclosure, published_score, release_diff_disclosure
from leaderboard.models import ReleaseTask, Standing, TaskResult
from leaderboard.selectors.declarations import board_baselines
from leaderboard.services.declarations import baseline_mark
from leaderboard.services.paper_gap_standings import _published_sql, standings_refresh, standings_update_version
from submissions.models import Submission
from tests.website.conftest import make_run, make_user

UNSIGNED_SCORE = 1.3719  # distinctive: shown as "1.37"
WALK = 0.4444


def _as(client, role: str, owner):
    if role == "owner":
        client.force_login(owner)
    elif role == "other":
        client.force_login(make_user())
    elif role == "staff":
        client.force_login(make_user(is_staff=True))
    return client


# --------------------------------------------------------------------------- the rule itself


@pytest.mark.parametrize(
    ("path", "hidden"),
    [
        ("", True),
        ("tasks", True),  # a whole missing "tasks" object carries every leaf below it
        ("tasks.grasp", True),
        ("tasks.grasp.gap", True),
        ("tasks.grasp.score", True),
        ("tasks.grasp.final", True),
        ("tasks.grasp.measured", False),  # the submitter's own, from their results
        ("tasks.grasp.penalties.collision_rate", False),
        ("tasks.grasp.factor", False),
        ("tasks.walk.gap", False),  # a published anchor
        ("aggregates", True),
        ("aggregates.overall", True),
        ("aggregates.reproduction", True),
        ("aggregates.open", False),  # no hidden open task
        ("aggregates.coverage.covered", False),
        ("aggregates.pass_rate", False),
        ("claimed_only_field", False),
    ],
)
def test_a_disclosure_hides_exactly_the_anchor_derived_paths(path, hidden):
    disclosure = Disclosure(
        scores_hidden=frozenset({"grasp"}), aggregates_hidden=frozenset({"overall", "reproduction"})
    )
    assert disclosure.hides_path(path) is hidden


@pytest.mark.parametrize(
    ("value", "published"),
    [
        (0.125, 0.13),  # a binary tie: half away from zero (Python's round gives 0.12)
        (-0.125, -0.13),
        (0.285, 0.29),  # 0.28499999999999998 in binary; its 15 digits say 0.285
        (1.3719, 1.37),
        (1.5, 1.5),
        (0.0049999, 0.0),
        (1e308, 1e308),  # any finite double fits (a claimed leaf may be anything strict JSON allows)
        (float("inf"), float("inf")),
        (None, None),
    ],
)
def test_a_published_score_has_two_decimals_rounded_half_away_from_zero(value, published):
    assert published_score(value) == published


def test_the_database_rounds_a_published_score_exactly_as_python_does(db):
    # The boards pick each version's best run by the published score in SQL
    # (paper_gap_standings._published_sql) and store published_score's: the two must agree.
    values = [0.125, -0.125, 0.285, 1.005, 2.675, 0.8350000000000001, 1.4999999999999998, 0.1 + 0.2, 1 / 3, 1.2345]
    with connection.cursor() as cursor:
        for value in values:
            parameter = "CAST(%s AS double precision)" if connection.vendor == "postgresql" else "%s"
            cursor.execute(f"SELECT {_published_sql(connection, parameter)}", [value])
            (rounded,) = cursor.fetchone()
            assert float(rounded) == published_score(value), value


def test_a_signed_runs_aggregate_that_includes_a_hidden_task_is_rounded_for_everyone_but_its_submitter_and_staff(
    client, release
):
    owner = make_user()
    run = make_run(release, submitter=owner, score=UNSIGNED_SCORE)  # signature "valid"
    run.confidence = {"overall": [1.31234, 1.41876]}
    run.save(update_fields=["confidence"])
    anonymous = client.get(f"/api/v1/runs/{run.pk}/").json()
    assert (anonymous["overall"], anonymous["confidence"]["overall"]) == (1.37, [1.31, 1.42])
    client.force_login(owner)
    own = client.get(f"/api/v1/runs/{run.pk}/").json()
    assert (own["overall"], own["confidence"]["overall"]) == (UNSIGNED_SCORE, [1.31234, 1.41876])


def test_a_diff_of_an_unknown_release_hides_every_score(db):
    disclosure = release_diff_disclosure(None, user=None)
    assert disclosure.hides_path("tasks.anything.gap")
    assert disclosure.hides_path("aggregates.open")
    assert not disclosure.hides_path("tasks.anything.measured")


def test_staff_see_everything(db, release):
    staff = make_user(is_staff=True)
    tasks = list(ReleaseTask.objects.filter(release=release).select_related("task"))
    assert not release_diff_disclosure(tasks, user=staff).anything_hidden


# --------------------------------------------------------------------------- run page and API


@pytest.fixture
def unsigned_run(release):
    owner = make_user()
    run = make_run(release, agent_name="Chooser", submitter=owner, score=UNSIGNED_SCORE, signature="unsigned")
    # walk's anchor is published: its own (different) scores are shown to everyone.
    TaskResult.objects.filter(run=run, release_task__task__slug="walk").update(gap=WALK, score=WALK, final=WALK)
    return run, owner


@pytest.mark.parametrize("role", ["anonymous", "other", "owner"])
def test_the_run_page_withholds_the_scores_of_an_unsigned_withheld_result_from_everyone(client, unsigned_run, role):
    run, owner = unsigned_run
    html = _as(client, role, owner).get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "1.37" not in html
    assert 'data-field="scores-withheld"' in html
    for key in ("overall", "reproduction", "open"):
        assert f'<dd data-aggregate="{key}"><span class="withheld"' in html
    assert "0.44" in html  # walk's own scores (a published anchor) are shown


def test_staff_see_the_scores_of_an_unsigned_withheld_result(client, unsigned_run):
    run, owner = unsigned_run
    html = _as(client, "staff", owner).get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "1.37" in html
    assert 'data-field="scores-withheld"' not in html


@pytest.mark.parametrize("role", ["anonymous", "other", "owner"])
def test_the_api_nulls_and_names_the_withheld_scores(client, unsigned_run, role):
    run, owner = unsigned_run
    body = _as(client, role, owner).get(f"/api/v1/runs/{run.pk}/").json()
    assert (body["overall"], body["reproduction"], body["open"]) == (None, None, None)
    assert body["withheld"] == ["open", "overall", "reproduction"]
    assert body["confidence"] == {}
    tasks = {task["task"]: task for task in body["tasks"]}
    assert (tasks["grasp"]["gap"], tasks["grasp"]["final"]) == (None, None)
    assert {"gap", "score", "final"} <= set(tasks["grasp"]["withheld"])
    assert tasks["walk"]["gap"] == WALK and tasks["walk"]["withheld"] == []
    listed = next(item for item in client.get("/api/v1/runs/").json()["results"] if item["id"] == run.pk)
    assert listed["overall"] is None


def test_a_signed_run_shows_its_aggregates_and_hides_a_withheld_tasks_measured_value_and_scores(client, release):
    owner = make_user()
    run = make_run(release, submitter=owner, score=UNSIGNED_SCORE)  # signature "valid"
    body = client.get(f"/api/v1/runs/{run.pk}/").json()
    # Published at two decimals: the mean includes withheld tasks whose finals are hidden.
    assert body["overall"] == 1.37 and body["withheld"] == []
    grasp = next(task for task in body["tasks"] if task["task"] == "grasp")
    assert (grasp["measured"], grasp["gap"], grasp["final"]) == (None, None, None)
    assert grasp["withheld"] == ["final", "gap", "measured", "score"]


def test_the_submitter_of_a_signed_run_sees_its_withheld_tasks_scores(client, release):
    owner = make_user()
    run = make_run(release, submitter=owner, score=UNSIGNED_SCORE)  # signature "valid"
    client.force_login(owner)
    grasp = next(task for task in client.get(f"/api/v1/runs/{run.pk}/").json()["tasks"] if task["task"] == "grasp")
    assert (grasp["gap"], grasp["withheld"]) == (UNSIGNED_SCORE, [])


def test_the_agent_page_withholds_the_aggregates_too(client, unsigned_run):
    run, _ = unsigned_run
    make_run(run.release, agent_name="Chooser", version="2.0")  # a public signed version keeps the agent public
    html = client.get(reverse("agent_detail", args=["chooser"])).content.decode()
    assert "1.37" not in html
    assert "Withheld" in html


# --------------------------------------------------------------------------- standings


def test_standings_never_rank_a_run_with_an_unsigned_withheld_result(release):
    signed = make_run(release, agent_name="Signed", with_standings=False, score=0.9)
    make_run(release, agent_name="Unsigned", with_standings=False, score=UNSIGNED_SCORE, signature="unsigned")
    standings_refresh(release=release)
    for tab in ("overall", "reproduction", "open"):
        assert list(Standing.objects.filter(release=release, tab=tab).values_list("run_id", flat=True)) == [signed.pk]


def test_an_unsigned_run_is_ranked_when_no_anchor_it_covers_is_withheld(release):
    make_run(release, agent_name="Signed", with_standings=False, score=0.9)
    make_run(release, agent_name="Unsigned", with_standings=False, score=UNSIGNED_SCORE, signature="unsigned")
    ReleaseTask.objects.filter(release=release).update(anchor_published=True)
    standings_refresh(release=release)
    ranked = list(Standing.objects.filter(release=release, tab="overall").values_list("agent_name", flat=True))
    assert ranked == ["Unsigned", "Signed"]


# --------------------------------------------------------------------------- mismatch diffs


MISMATCH_DIFF = [
    {"path": "aggregates.overall", "claimed": 0.9, "recomputed": UNSIGNED_SCORE, "status": "diff"},
    {"path": "tasks", "claimed": None, "recomputed": {"grasp": {"gap": UNSIGNED_SCORE}}, "status": "missing"},
    {"path": "tasks.grasp.final", "claimed": 0.5, "recomputed": UNSIGNED_SCORE, "status": "diff"},
    {"path": "tasks.walk.final", "claimed": 0.4, "recomputed": 0.4444, "status": "diff"},
]
STORED_MESSAGE = (
    f"score_breakdown.json: 4 claimed value(s) differ from the recomputation "
    f"(first: aggregates.overall claimed 0.9, recomputed {UNSIGNED_SCORE!r})"
)


@pytest.fixture
def mismatch(release):
    owner = make_user()
    submission = make_run(release, submitter=owner).submission
    Submission.objects.filter(pk=submission.pk).update(
        verdict="mismatch", error_code="", error_message=STORED_MESSAGE, diff=MISMATCH_DIFF
    )
    return submission, owner


def test_the_live_status_names_withheld_fields_without_their_values(client, mismatch):
    submission, owner = mismatch
    client.force_login(owner)
    data = client.get(reverse("submission_status", args=[submission.pk])).json()
    assert "1.37" not in str(data)
    rows = {row["path"]: row for row in data["diff"]}
    assert rows["tasks.grasp.final"] == {
        "path": "tasks.grasp.final", "claimed": None, "recomputed": None, "status": "diff", "withheld": True
    }  # fmt: skip
    assert rows["aggregates.overall"]["withheld"] and rows["tasks"]["withheld"]
    assert rows["tasks.walk.final"]["recomputed"] == 0.4444  # a published anchor's value is shown
    assert data["error_message"] == (
        "score_breakdown.json: 4 claimed value(s) differ from the recomputation "
        "(first: aggregates.overall, values withheld because they would reveal a withheld anchor)"
    )


def test_the_submission_page_and_the_api_show_the_same_redacted_diff(client, mismatch):
    submission, owner = mismatch
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[submission.pk])).content.decode()
    assert "1.37" not in html and "tasks.grasp.final" in html and "0.4444" in html
    body = client.get(f"/api/v1/submissions/{submission.pk}/").json()
    assert "1.37" not in str(body)
    assert body["message"].endswith("values withheld because they would reveal a withheld anchor)")


def test_the_stored_diff_is_kept_whole_and_staff_see_it(client, mismatch):
    submission, _ = mismatch
    submission.refresh_from_db()
    assert submission.diff == MISMATCH_DIFF and submission.error_message == STORED_MESSAGE
    client.force_login(make_user(is_staff=True))
    body = client.get(f"/api/v1/submissions/{submission.pk}/").json()
    assert body["diff"] == MISMATCH_DIFF and body["message"] == STORED_MESSAGE


def test_a_draft_releases_published_flags_do_not_disclose_its_anchors(client, release):
    from leaderboard.models import Release

    owner = make_user()
    run = make_run(release, submitter=owner, score=UNSIGNED_SCORE, signature="unsigned")
    ReleaseTask.objects.filter(release=release).update(anchor_published=True)
    Release.objects.filter(pk=release.pk).update(published=False)  # a draft: its anchors are not out yet
    client.force_login(owner)
    body = client.get(f"/api/v1/runs/{run.pk}/").json()
    assert body["overall"] is None
    assert all(task["gap"] is None for task in body["tasks"])


def test_the_incremental_standings_update_never_ranks_an_unsigned_withheld_result_either(release):
    signed = make_run(release, agent_name="Signed", with_standings=False, score=0.9)
    unsigned = make_run(
        release, agent_name="Unsigned", with_standings=False, score=UNSIGNED_SCORE, signature="unsigned"
    )
    for run in (signed, unsigned):
        standings_update_version(release=release, agent_version_id=run.agent_version_id)
    for tab in ("overall", "reproduction", "open"):
        assert list(Standing.objects.filter(release=release, tab=tab).values_list("run_id", flat=True)) == [signed.pk]
    ReleaseTask.objects.filter(release=release).update(anchor_published=True)  # the anchor is published
    standings_update_version(release=release, agent_version_id=unsigned.agent_version_id)
    ranked = list(Standing.objects.filter(release=release, tab="overall").values_list("agent_name", flat=True))
    assert ranked == ["Unsigned", "Signed"]


def test_a_board_with_a_withheld_anchor_ranks_by_the_published_score_then_the_pass_rate(release):
    # 1.3719 and 1.3681 both publish as 1.37: ordering them by the exact means would say which is
    # higher, which the published numbers do not; the pass rate decides, as for any tie.
    make_run(release, agent_name="Exact Higher", score=1.3719, pass_rate=0.5, with_standings=False)
    make_run(release, agent_name="Better Pass", score=1.3681, pass_rate=0.9, with_standings=False)
    standings_refresh(release=release)
    rows = list(Standing.objects.filter(release=release, tab="overall").order_by("-pass_rate"))
    assert [(row.agent_name, row.score, row.ci_low) for row in rows] == [
        ("Better Pass", 1.37, 1.32),
        ("Exact Higher", 1.37, 1.32),
    ]
    ranked = client_ranks(release)
    assert ranked == ["better-pass", "exact-higher"]


def test_each_versions_best_run_is_picked_by_the_published_score_when_an_anchor_is_withheld(release):
    first = make_run(release, agent_name="Twice", score=1.3719, pass_rate=0.5, with_standings=False)
    second = make_run(release, agent_name="Twice", score=1.3681, pass_rate=0.9, with_standings=False)
    assert first.agent_version_id == second.agent_version_id
    standings_update_version(release=release, agent_version_id=first.agent_version_id)
    incremental = sorted(Standing.objects.filter(release=release).values_list("tab", "run_id", "score"))
    standings_refresh(release=release)
    rebuilt = sorted(Standing.objects.filter(release=release).values_list("tab", "run_id", "score"))
    assert incremental == rebuilt == [(tab, second.pk, 1.37) for tab in ("open", "overall", "reproduction")]


def test_a_board_whose_anchors_are_all_published_keeps_full_precision(release):
    ReleaseTask.objects.filter(release=release).update(anchor_published=True)
    run = make_run(release, agent_name="Public", score=1.3719, with_standings=False)
    standings_refresh(release=release)
    assert set(Standing.objects.filter(run=run).values_list("score", flat=True)) == {1.3719}


def client_ranks(release) -> list[str]:
    body = APIClient().get(f"/api/v1/releases/{release.pk}/leaderboard/overall/").json()
    return [row["agent_slug"] for row in body["results"]]


def test_a_reference_baseline_on_a_tab_with_a_withheld_anchor_shows_its_published_score(release):
    run = make_run(release, agent_name="Reference", score=1.3719, with_standings=False)
    baseline_mark(actor=make_user(is_staff=True), agent_version=run.agent_version, kind="random")
    [shown] = board_baselines(release=release, tab="overall")
    assert (shown.tab_score, shown.tab_ci) == (1.37, [1.32, 1.42])
    ReleaseTask.objects.filter(release=release).update(anchor_published=True)
    [shown] = board_baselines(release=release, tab="overall")
    assert shown.tab_score == 1.3719
