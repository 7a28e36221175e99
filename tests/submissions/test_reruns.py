"""`verified` means re-run (issue 11 item 5): staff record the official re-run's own results
(a bundle of the submission format, or values entered in the admin); the server recomputes
them and compares each task with the submitted run under a documented tolerance; staff can
lower any level with a reason; the log is append-only and public on the run page and API."""

from __future__ import annotations

import io

import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from leaderboard.models import OfficialRerun, Run, Standing, VerificationEvent
from submissions.services.reruns import (
    RERUN_TOLERANCE,
    RerunError,
    run_level_change,
    run_rerun_record_bundle,
    run_rerun_record_results,
)
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify
from tests.staff import staff_grant


@pytest.fixture
def run(demo_release, seal, owner):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    submission_verify(submission_id=submission.pk)
    return Run.objects.get(submission=submission)


@pytest.fixture
def maintainer(make_user):
    user = make_user("maintainer")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return staff_grant(user)  # a maintainer: every staff-write permission


def events(run: Run) -> list[tuple[str, str]]:
    return list(VerificationEvent.objects.filter(run=run).order_by("id").values_list("level", "method"))


def entered_from(run: Run, *, shift: float = 0.0) -> dict[str, dict]:
    """The run's own measured values (optionally shifted) as staff would enter them."""
    out = {}
    for result in run.task_results.select_related("release_task__task"):
        # factor = 1 - min(1, rate / limit), so the run's own factors give back its rates.
        limits = {p["metric"]: p["limit"] for p in result.release_task.penalties or []}
        rates = {metric: (1 - (result.factors or {}).get(metric, 1.0)) * limit for metric, limit in limits.items()}
        out[result.release_task.task.slug] = {
            "measured": result.measured * (1 + shift),
            "rates": rates,
            "faithful": result.faithful if result.release_task.genre == "reproduction" else None,
        }
    return out


# ------------------------------------------------------------------ re-run bundles


@pytest.mark.django_db
def test_a_matching_re_run_bundle_makes_the_run_verified_and_records_both_results(run, seal, maintainer):
    rerun = run_rerun_record_bundle(
        run=run, actor=maintainer, bundle_file=io.BytesIO(seal()), note="official re-run, hidden seeds"
    )
    run.refresh_from_db()
    assert (run.level, rerun.outcome, rerun.source, rerun.tolerance) == ("verified", "confirmed", "bundle", 0.05)
    assert len(rerun.comparison) == run.task_results.count()
    row = rerun.comparison[0]
    assert set(row) >= {"task", "submitted_final", "rerun_final", "difference", "within", "rerun_measured"}
    assert rerun.bundle.name.startswith("reruns/") and len(rerun.evidence_sha256) == 64
    assert events(run)[-1][0] == "verified"
    assert VerificationEvent.objects.filter(run=run).last().rerun == rerun
    assert set(Standing.objects.filter(run=run).values_list("verification", flat=True)) == {"verified"}


@pytest.mark.django_db
def test_a_re_run_that_scores_differently_is_recorded_but_does_not_verify(run, seal, maintainer):
    rerun = run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal(skill=0.4)))
    run.refresh_from_db()
    assert (run.level, rerun.outcome) == ("validated", "disagrees")
    assert any(not row["within"] for row in rerun.comparison)
    level, method = events(run)[-1]
    assert level == "validated" and method.startswith("official re-run disagrees on ")


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"agent_name": "somebody-else"}, "rerun_wrong_agent"),
        ({"agent_version": "9.9.9"}, "rerun_wrong_agent"),
        ({"tamper": "claimed_score"}, "rerun_inconsistent"),
    ],
)
@pytest.mark.django_db
def test_a_re_run_bundle_of_another_run_or_inconsistent_is_refused_and_nothing_written(
    run, seal, maintainer, kwargs, code
):
    try:
        sealed = seal(**kwargs)
    except TypeError:
        pytest.skip("the demo writer has no such option")
    with pytest.raises(RerunError) as refused:
        run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(sealed))
    assert refused.value.code == code
    assert OfficialRerun.objects.count() == 0
    assert len(events(run)) == 1
    run.refresh_from_db()
    assert run.level == "validated"


@pytest.mark.django_db
def test_a_re_run_bundle_that_is_not_a_bundle_is_refused(run, maintainer):
    with pytest.raises(RerunError) as refused:
        run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(b"not an age file" * 4))
    assert refused.value.code == "not_age_file"
    with pytest.raises(RerunError) as empty:
        run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(b""))
    assert empty.value.code == "empty_file"
    assert OfficialRerun.objects.count() == 0


@pytest.mark.django_db
def test_only_staff_record_re_runs(run, seal, owner, stranger):
    for user in (owner, stranger, None):
        with pytest.raises(PermissionDenied):
            run_rerun_record_bundle(run=run, actor=user, bundle_file=io.BytesIO(seal()))
    assert OfficialRerun.objects.count() == 0


# ------------------------------------------------------------------ entered results


@pytest.mark.django_db
def test_entered_results_are_recomputed_and_compared(run, maintainer):
    rerun = run_rerun_record_results(run=run, actor=maintainer, results=entered_from(run))
    run.refresh_from_db()
    assert rerun.source == "entered"
    # The run's finals were recomputed from 100 episodes, the entered values from their means:
    # both go through scoring.gap, so the finals agree within the tolerance.
    assert rerun.outcome == "confirmed", rerun.comparison
    assert run.level == "verified"


@pytest.mark.django_db
def test_entered_results_far_from_the_run_disagree(run, maintainer):
    rerun = run_rerun_record_results(run=run, actor=maintainer, results=entered_from(run, shift=-0.5))
    assert rerun.outcome == "disagrees"
    run.refresh_from_db()
    assert run.level == "validated"


@pytest.mark.parametrize(
    ("results", "code"),
    [
        ({}, "results_invalid"),
        ({"no-such-task": {"measured": 1.0}}, "unknown_task"),
        ("not an object", "results_invalid"),
    ],
)
@pytest.mark.django_db
def test_bad_entered_results_are_refused(run, maintainer, results, code):
    with pytest.raises(RerunError) as refused:
        run_rerun_record_results(run=run, actor=maintainer, results=results)
    assert refused.value.code == code
    assert OfficialRerun.objects.count() == 0


def entered_refusal(run, maintainer, field: str, value) -> tuple[str, RerunError]:
    """The run's own values entered as a re-run with the first task's ``field`` set to ``value``:
    (that task's slug, the refusal)."""
    results = entered_from(run)
    first = next(iter(results))
    results[first][field] = value
    with pytest.raises(RerunError) as refused:
        run_rerun_record_results(run=run, actor=maintainer, results=results)
    return first, refused.value


@pytest.mark.django_db
def test_an_entered_value_that_is_not_a_finite_number_is_refused(run, maintainer):
    first, refused = entered_refusal(run, maintainer, "measured", float("inf"))
    assert refused.message == f"results[{first!r}].measured: expected a finite number"


@pytest.mark.django_db
def test_an_entered_result_holding_a_nul_is_refused_by_its_path(run, maintainer):
    first, refused = entered_refusal(run, maintainer, "rates", {"collision\x00rate": 0.1})
    assert (refused.code, refused.message) == (
        "results_invalid",
        f"results.{first}.rates (a key): holds a NUL character (U+0000), which no text can hold; leave it out",
    )
    assert OfficialRerun.objects.count() == 0


# ------------------------------------------------------------------ downgrade and revoke


@pytest.mark.django_db
def test_staff_revoke_a_run_with_a_reason_and_it_leaves_the_board(run, maintainer):
    assert Standing.objects.filter(run=run).exists()
    event = run_level_change(run=run, actor=maintainer, level="revoked", reason="evaluator image was modified")
    run.refresh_from_db()
    assert run.level == "revoked"
    assert (event.level, event.method, event.note) == ("revoked", "revoked by staff", "evaluator image was modified")
    assert not Standing.objects.filter(run=run).exists()
    assert [level for level, _ in events(run)] == ["validated", "revoked"]


@pytest.mark.django_db
def test_a_verified_run_can_be_downgraded(run, seal, maintainer):
    run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal()))
    run_level_change(run=run, actor=maintainer, level="validated", reason="re-run used the wrong seeds")
    run.refresh_from_db()
    assert run.level == "validated"
    assert [level for level, _ in events(run)] == ["validated", "verified", "validated"]


@pytest.mark.parametrize(
    ("level", "reason", "code"),
    [
        ("verified", "because", "level_not_lower"),
        ("attested", "because", "level_not_lower"),
        ("validated", "because", "level_not_lower"),
        ("revoked", "   ", "reason_missing"),
        ("gold", "because", "level_invalid"),
    ],
)
@pytest.mark.django_db
def test_a_level_change_must_lower_and_give_a_reason(run, maintainer, level, reason, code):
    with pytest.raises(RerunError) as refused:
        run_level_change(run=run, actor=maintainer, level=level, reason=reason)
    assert refused.value.code == code
    assert len(events(run)) == 1


@pytest.mark.django_db
def test_a_revoked_run_is_not_re_run(run, seal, maintainer):
    run_level_change(run=run, actor=maintainer, level="revoked", reason="fabricated")
    with pytest.raises(RerunError) as refused:
        run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal()))
    assert refused.value.code == "run_revoked"
    run.refresh_from_db()
    assert run.level == "revoked"


@pytest.mark.django_db
def test_only_staff_lower_a_level(run, owner):
    with pytest.raises(PermissionDenied):
        run_level_change(run=run, actor=owner, level="revoked", reason="mine")
    run.refresh_from_db()
    assert run.level == "validated"


@pytest.mark.django_db
def test_a_later_upload_of_a_verified_agent_version_does_not_inherit_verified(run, seal, maintainer, owner):
    run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal()))
    later, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal(seed=7)))
    submission_verify(submission_id=later.pk)
    later_run = Run.objects.get(submission=later)
    assert later_run.agent_version_id == run.agent_version_id
    assert later_run.level == "validated"
    assert Run.objects.get(pk=run.pk).level == "verified"


# ------------------------------------------------------------------ pages and API


@pytest.mark.django_db
def test_the_run_page_shows_both_results_and_the_public_log(client, run, seal, maintainer):
    run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal()), note="hidden seeds")
    run_level_change(run=run, actor=maintainer, level="attested", reason="second opinion pending")
    body = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Official re-runs" in body and "confirmed" in body
    assert "Re-run final" in body and "Submitted final" in body
    assert "downgraded by staff from verified" in body and "second opinion pending" in body
    assert f"within {RERUN_TOLERANCE}" in body


@pytest.mark.django_db
def test_the_api_shows_the_re_runs_and_the_log(run, seal, maintainer):
    rerun = run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal()))
    body = APIClient().get(f"/api/v1/runs/{run.pk}/").json()
    assert [entry["level"] for entry in body["verification"]] == ["validated", "verified"]
    assert body["verification"][-1]["rerun"] == rerun.pk
    (shown,) = body["reruns"]
    assert shown["outcome"] == "confirmed" and len(shown["comparison"]) == run.task_results.count()


@pytest.mark.django_db
def test_the_staff_api_records_a_re_run_bundle(run, seal, maintainer, owner):
    api = APIClient()
    url = f"/api/v1/admin/runs/{run.pk}/reruns/"
    assert api.post(url, {"bundle": SimpleUploadedFile("r.age", seal())}, format="multipart").status_code in (401, 403)
    api.force_authenticate(owner)
    assert api.post(url, {"bundle": SimpleUploadedFile("r.age", seal())}, format="multipart").status_code == 403
    api.force_authenticate(maintainer)
    response = api.post(url, {"bundle": SimpleUploadedFile("r.age", seal()), "note": "api"}, format="multipart")
    assert response.status_code == 201, response.json()
    assert response.json()["outcome"] == "confirmed"
    refused = api.post(url, {"bundle": SimpleUploadedFile("r.age", seal(agent_name="x"))}, format="multipart")
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "rerun_wrong_agent")
    assert OfficialRerun.objects.count() == 1


@pytest.mark.django_db
def test_the_staff_api_records_entered_results_and_lowers_levels(run, maintainer):
    api = APIClient()
    api.force_authenticate(maintainer)
    response = api.post(f"/api/v1/admin/runs/{run.pk}/reruns/", {"results": entered_from(run)}, format="json")
    assert response.status_code == 201 and response.json()["outcome"] == "confirmed"
    lowered = api.post(f"/api/v1/admin/runs/{run.pk}/level/", {"level": "revoked", "reason": "leak"}, format="json")
    assert (lowered.status_code, lowered.json()["level"]) == (200, "revoked")
    again = api.post(f"/api/v1/admin/runs/{run.pk}/level/", {"level": "validated", "reason": "x"}, format="json")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "run_revoked")
    missing = api.post(f"/api/v1/admin/runs/{run.pk + 999}/level/", {"level": "revoked", "reason": "x"}, format="json")
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"level": "attested", "reason": "  "}, 400, "reason_missing"),
        ({"level": "attested"}, 400, "reason_missing"),
        ({"level": "gold", "reason": "x"}, 400, "level_invalid"),
        ({"reason": "x"}, 400, "invalid"),
        ({"level": 5, "reason": "x"}, 400, "invalid"),
    ],
)
@pytest.mark.django_db
def test_the_level_api_refuses_with_the_documented_codes_and_records_nothing(run, maintainer, body, status, code):
    api = APIClient()
    api.force_authenticate(maintainer)
    before = len(events(run))
    response = api.post(f"/api/v1/admin/runs/{run.pk}/level/", body, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (status, code)
    if code == "invalid":
        assert "level" in response.json()["error"]["fields"]
    assert len(events(run)) == before


@pytest.fixture
def signed_withheld(release_from_spec, seal, owner):
    """signed_withheld(**bundle kwargs) -> a run of ``owner`` on a release whose anchors are
    withheld (results on withheld tasks must be signed by a registered evaluator key, so the
    bundle is signed)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from leaderboard.models import Evaluator
    from submissions.bundle.demo import DEMO_BENCHMARK, DEMO_RELEASE, demo_release_spec
    from submissions.bundle.signatures import public_key_b64
    from submissions.services.signing_keys import signing_key_register

    release_from_spec(demo_release_spec()[0], benchmark=DEMO_BENCHMARK, version=DEMO_RELEASE, anchors_published=False)
    key = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(key), user=None
    )

    def make(**kwargs) -> Run:
        submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal(sign_with=key, **kwargs)))
        submission_verify(submission_id=submission.pk)
        return Run.objects.get(submission=submission)

    return make


@pytest.fixture
def withheld_run(signed_withheld):
    return signed_withheld()


@pytest.mark.django_db
def test_a_re_runs_values_follow_the_disclosure_rule_for_withheld_anchors(withheld_run, seal, maintainer, owner):
    run_rerun_record_bundle(run=withheld_run, actor=maintainer, bundle_file=io.BytesIO(seal()))
    url = f"/api/v1/runs/{withheld_run.pk}/"
    staff_api = APIClient()
    staff_api.force_authenticate(maintainer)
    full = staff_api.get(url).json()["reruns"][0]["comparison"]
    assert all(row["rerun_measured"] is not None and row["submitted_final"] is not None for row in full)
    checked = 0
    for viewer in (None, owner):
        api = APIClient()
        if viewer is not None:
            api.force_authenticate(viewer)
        shown = api.get(url).json()
        if "reruns" not in shown:
            continue  # the run itself is not visible to this viewer
        own_final = {task["task"]: task["final"] for task in shown["tasks"]}
        own_measured = {task["task"]: task["measured"] for task in shown["tasks"]}
        for row in shown["reruns"][0]["comparison"]:
            # The re-run's measured value with its final gives the anchor: shown only to whoever
            # holds it already (the run's own measured value and final: measured / gap); the
            # submitted final (and the difference) are hidden exactly where the run's own task
            # score is.
            holds_anchor = own_final[row["task"]] is not None and own_measured[row["task"]] is not None
            assert (row["rerun_measured"] is not None) == holds_anchor
            hidden = own_final[row["task"]] is None
            assert (row["submitted_final"] is None, row["difference"] is None) == (hidden, hidden)
            checked += 1
    assert checked > 0


@pytest.mark.django_db
@pytest.mark.parametrize("body", ["[]", '"results"', "0"])
def test_a_re_run_body_that_is_not_an_object_is_rerun_input_not_a_500(run, maintainer, body):
    api = APIClient()
    api.force_authenticate(maintainer)
    response = api.post(f"/api/v1/admin/runs/{run.pk}/reruns/", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "rerun_input",
        "message": "Send a JSON object (or a form) with 'bundle' or 'results'.",
    }
    assert not OfficialRerun.objects.exists()


@pytest.mark.django_db
def test_a_nul_in_a_multipart_field_of_the_re_run_api_is_invalid_text_and_records_nothing(run, seal, maintainer):
    # The note went into a text column as it came: on PostgreSQL a DataError, a 500.
    api = APIClient()
    api.force_authenticate(maintainer)
    response = api.post(
        f"/api/v1/admin/runs/{run.pk}/reruns/",
        {"bundle": SimpleUploadedFile("r.age", seal()), "note": "re-run\x00"},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_text",
        "message": "form field 'note': contains a NUL character (U+0000), which no text can hold; leave it out.",
    }
    assert not OfficialRerun.objects.exists()


def _rerun_rows(viewer, run: Run) -> tuple[dict, list[dict]]:
    """The run's API body and its first re-run's comparison rows, as ``viewer`` reads them."""
    api = APIClient()
    if viewer is not None:
        api.force_authenticate(viewer)
    body = api.get(f"/api/v1/runs/{run.pk}/").json()
    return body, body["reruns"][0]["comparison"]


@pytest.mark.django_db
def test_an_official_re_runs_final_of_a_withheld_task_reaches_only_whom_the_runs_own_final_does(
    withheld_run, seal, owner, maintainer, make_user, client
):
    """On a withheld anchor the re-run's final is ``re-run measured / anchor``: a re-run that
    confirms the run lands within 0.05 of the run's own hidden final (here the re-run repeats
    the evaluator's values, so it *is* that final), and with a guessable measured value (k / N,
    N the public episode count) it gives the anchor. It goes with the run's own final of that task."""
    run = withheld_run
    run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal()))
    hidden_finals = dict(run.task_results.values_list("release_task__task__slug", "final"))

    _, full = _rerun_rows(maintainer, run)
    assert full and all(row["rerun_final"] is not None for row in full)  # staff: every value
    _, own = _rerun_rows(owner, run)
    # The submitter of a signed run sees its finals and can divide anyway (inherent): shown. And the
    # re-run's measured value: their own measured / gap is the anchor, times the re-run's final is it.
    assert all(row["rerun_final"] is not None and row["rerun_measured"] is not None for row in own)

    for viewer in (None, make_user("stranger")):
        body, rows = _rerun_rows(viewer, run)
        assert all(task["final"] is None for task in body["tasks"])  # the run's own: withheld
        leaked = {row["task"]: row["rerun_final"] for row in rows if row["rerun_final"] is not None}
        same = sorted(slug for slug, value in leaked.items() if value == hidden_finals[slug])
        assert not leaked, f"re-run finals of withheld tasks shown; equal to the hidden final: {same}"
        assert all(row["rerun_measured"] is None for row in rows)
        assert all(row["withheld"] for row in rows)
        if viewer is not None:
            client.force_login(viewer)
        page = client.get(f"/runs/{run.pk}/")
        assert page.status_code == 200
        assert all(row["rerun_final"] is None for item in page.context["reruns"] for row in item["rows"])


@pytest.mark.django_db
def test_a_re_runs_final_of_a_withheld_task_the_run_did_not_cover_is_staffs_only(
    signed_withheld, seal, owner, maintainer, make_user
):
    """A re-run may cover more tasks than the run (shown, not deciding); such a task's re-run
    final goes to staff only, the submitter included, who never ran that task."""
    covered = ["carla-route-completion", "robomimic-lift-bc"]
    run = signed_withheld(tasks=covered)
    run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal()))

    _, full = _rerun_rows(maintainer, run)
    extra = {row["task"] for row in full if not row["decides"]}
    assert extra and all(row["rerun_final"] is not None for row in full)
    for viewer in (None, make_user("stranger"), owner):
        _, rows = _rerun_rows(viewer, run)
        leaked = sorted(row["task"] for row in rows if row["task"] in extra and row["rerun_final"] is not None)
        assert not leaked, f"re-run finals of withheld tasks the run did not cover shown: {leaked}"
        if viewer is owner:  # the tasks the owner ran stay theirs
            assert all(row["rerun_final"] is not None for row in rows if row["task"] in covered)


@pytest.mark.django_db
def test_a_re_run_on_published_anchors_still_shows_every_final(signed_withheld, seal, maintainer):
    """The rule hides only what follows a withheld anchor: with the anchors published every
    re-run final (and measured value) is public, covered by the run or not."""
    from leaderboard.models import ReleaseTask

    run = signed_withheld(tasks=["carla-route-completion"])
    ReleaseTask.objects.filter(release=run.release).update(anchor_published=True)
    run_rerun_record_bundle(run=run, actor=maintainer, bundle_file=io.BytesIO(seal()))
    _, rows = _rerun_rows(None, run)
    assert rows and all(row["rerun_final"] is not None and row["rerun_measured"] is not None for row in rows)
    assert not any(row["withheld"] for row in rows)


@pytest.mark.django_db
def test_results_nested_past_the_json_parsers_limit_are_results_invalid_not_a_500(run, maintainer):
    api = APIClient()
    api.force_authenticate(maintainer)
    deep = "[" * 100_000 + "]" * 100_000
    response = api.post(f"/api/v1/admin/runs/{run.pk}/reruns/", {"results": deep}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "results_invalid", "message": "results: expected a JSON object."}
    assert not OfficialRerun.objects.exists()


def test_the_admin_re_run_form_reads_results_nested_past_the_json_parsers_limit_as_a_field_error():
    from submissions.admin import RerunForm

    form = RerunForm(data={"results": "[" * 100_000})
    assert not form.is_valid()
    assert form.errors["results"] == ["not valid JSON: nested too deeply to read"]


@pytest.mark.django_db
@pytest.mark.parametrize("rates", [[], 0, "", False])
def test_entered_rates_that_are_not_an_object_are_refused_not_read_as_none(run, maintainer, rates):
    first, refused = entered_refusal(run, maintainer, "rates", rates)
    assert (refused.code, refused.message) == (
        "results_invalid",
        f"results[{first!r}].rates: expected an object of metric -> finite number",
    )
    assert OfficialRerun.objects.count() == 0


@pytest.mark.django_db
def test_a_re_run_request_with_neither_bundle_nor_results_says_neither_was_given(run, maintainer):
    api = APIClient()
    api.force_authenticate(maintainer)
    response = api.post(f"/api/v1/admin/runs/{run.pk}/reruns/", {"note": "x"}, format="json")
    assert response.json()["error"] == {
        "code": "rerun_input",
        "message": "Give either a 'bundle' file or 'results' (neither was given).",
    }
    assert not OfficialRerun.objects.exists()
