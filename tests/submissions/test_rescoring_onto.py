"""Rescoring onto a newer release (issue 13 feature 9): corrected inputs published as a new
version; each stored bundle of the old release is re-verified against the new one, the proposal
shows before (old release) and after (new release) per run, and applying carries the runs over."""

from __future__ import annotations

import dataclasses
import io

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.management import CommandError, call_command

from leaderboard.models import ReleaseTask, Run, Standing, TaskResult, VerificationEvent
from submissions.bundle.demo import DEMO_BENCHMARK, demo_release_spec
from submissions.models import Rescore, RescoreItem, Submission
from submissions.services.rescoring import RescoreError, rescore_apply, rescore_propose
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify
from tests.staff import staff_grant


@pytest.fixture
def staff(make_user):
    user = make_user("staffer")
    user.is_staff = True
    user.save()
    return staff_grant(user)  # a maintainer: every staff-write permission


@pytest.fixture
def run(owner, demo_release, seal, django_capture_on_commit_callbacks):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    with django_capture_on_commit_callbacks(execute=True):
        verified = submission_verify(submission_id=submission.pk)
    assert verified.verdict == "validated"
    return Run.objects.get(submission=submission)


@pytest.fixture
def corrected(release_from_spec, demo_release):
    """Release 0.6: the demo release with one task's anchor corrected (same task set)."""
    spec, _ = demo_release_spec()
    release = release_from_spec(spec, benchmark=DEMO_BENCHMARK, version="0.6")
    release_task = ReleaseTask.objects.filter(release=release).order_by("position").first()
    release_task.paper_value = release_task.paper_value * 1.5
    release_task.save(update_fields=["paper_value"])
    return release


@pytest.fixture
def fewer_tasks(release_from_spec, demo_release):
    """Release 0.7: one task dropped, so another required task set."""
    spec, _ = demo_release_spec()
    dropped = min(spec.tasks)
    smaller = dataclasses.replace(spec, tasks={slug: task for slug, task in spec.tasks.items() if slug != dropped})
    return release_from_spec(smaller, benchmark=DEMO_BENCHMARK, version="0.7"), dropped


def propose(release, user, capture, target) -> Rescore:
    with capture(execute=True):
        rescore = rescore_propose(release=release, user=user, reason="anchor corrected in 0.6", target_release=target)
    rescore.refresh_from_db()
    return rescore


@pytest.mark.django_db
class TestCarryingOntoANewerRelease:
    def test_the_proposal_shows_the_old_and_the_new_release_score_and_creates_nothing(
        self, run, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
        assert (rescore.state, rescore.target_release_id) == ("proposed", corrected.pk)
        item = RescoreItem.objects.get(rescore=rescore)
        assert item.state == "changed"
        assert item.before["overall"] == pytest.approx(run.overall)
        assert item.after["overall"] != pytest.approx(run.overall)
        assert "overall" in [row["path"] for row in item.diff]
        assert not Run.objects.filter(release=corrected).exists()
        assert Submission.objects.count() == 1

    def test_applying_creates_one_run_on_the_new_release_with_its_provenance_and_standing(
        self, run, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
        item = RescoreItem.objects.get(rescore=rescore)
        with django_capture_on_commit_callbacks(execute=True):
            rescore_apply(rescore_id=rescore.pk, user=staff)
        carried = Run.objects.get(release=corrected)
        assert carried.carried_from_id == run.pk
        assert carried.overall == pytest.approx(item.after["overall"])
        assert (carried.level, carried.agent_version_id) == (run.level, run.agent_version_id)
        assert carried.submission.carried_from_id == run.submission.pk
        assert carried.submission.sha256 == run.submission.sha256
        assert carried.submission.file.name == run.submission.file.name
        assert carried.submission.submitter_id == run.submission.submitter_id
        assert TaskResult.objects.filter(run=carried).count() == TaskResult.objects.filter(run=run).count()
        assert set(TaskResult.objects.filter(run=carried).values_list("release_task__release", flat=True)) == {
            corrected.pk
        }
        event = VerificationEvent.objects.get(run=carried)
        assert event.actor == staff and f"carried over from run {run.pk}" in event.method
        assert RescoreItem.objects.get(pk=item.pk).carried_run_id == carried.pk
        assert Standing.objects.get(run=carried, tab="overall").score == pytest.approx(item.after["overall"])
        run.refresh_from_db()
        assert run.overall == pytest.approx(item.before["overall"])  # the old release's run is untouched
        assert Standing.objects.get(run=run, tab="overall").release_id == demo_release.pk

    def test_applying_twice_or_carrying_again_creates_no_second_run(
        self, run, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
        rescore_apply(rescore_id=rescore.pk, user=staff)
        rescore_apply(rescore_id=rescore.pk, user=staff)
        assert Run.objects.filter(release=corrected).count() == 1
        again = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
        item = RescoreItem.objects.get(rescore=again)
        assert item.state == "failed" and item.error.startswith("already_carried:")
        rescore_apply(rescore_id=again.pk, user=staff)
        assert Run.objects.filter(release=corrected).count() == 1
        assert Submission.objects.filter(carried_from=run.submission).count() == 1

    def test_a_run_made_against_another_task_set_is_not_carried_and_says_why(
        self, run, staff, demo_release, fewer_tasks, django_capture_on_commit_callbacks
    ):
        target, dropped = fewer_tasks
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, target)
        item = RescoreItem.objects.get(rescore=rescore)
        assert item.state == "failed"
        assert item.error.startswith("tasks_missing:") and dropped in item.error
        rescore_apply(rescore_id=rescore.pk, user=staff)
        assert not Run.objects.filter(release=target).exists()

    def test_a_different_required_task_set_hash_is_refused_per_run(
        self, run, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        type(corrected).objects.filter(pk=corrected.pk).update(required_task_set_hash="f" * 64)
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
        item = RescoreItem.objects.get(rescore=rescore)
        assert item.state == "failed" and item.error.startswith("task_set_mismatch:")
        assert "ffffffffffff" in item.error

    def test_a_withdrawn_run_is_not_carried(
        self, run, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        from django.utils import timezone

        Run.objects.filter(pk=run.pk).update(withdrawn_at=timezone.now(), is_private=True)
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
        assert RescoreItem.objects.get(rescore=rescore).error.startswith("withdrawn:")

    @pytest.mark.parametrize("how", ["hidden", "withdrawn"])
    def test_a_run_hidden_or_withdrawn_between_proposal_and_apply_is_not_carried(
        self, run, staff, demo_release, corrected, django_capture_on_commit_callbacks, how
    ):
        # Checked at the proposal only, it was carried: a private copy with no withdrawn or hidden
        # mark, which its owner's withdraw-then-restore put on the new board past the staff hide.
        from submissions.services.visibility import run_hide, run_withdraw

        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
        assert RescoreItem.objects.get(rescore=rescore).state == "changed"
        if how == "hidden":
            run_hide(run_id=run.pk, user=staff, reason="evaluator image was modified")
        else:
            run_withdraw(run_id=run.pk, user=run.submission.submitter)
        with django_capture_on_commit_callbacks(execute=True):
            rescore_apply(rescore_id=rescore.pk, user=staff)
        item = RescoreItem.objects.get(rescore=rescore)
        assert item.state == "failed"
        assert item.error.startswith(f"stale: {how}:")
        assert not Run.objects.filter(release=corrected).exists()
        assert not Standing.objects.filter(release=corrected).exists()

    def test_only_a_newer_release_of_the_same_benchmark_is_a_target(
        self, run, staff, demo_release, corrected, make_release
    ):
        with pytest.raises(RescoreError) as refused:
            rescore_propose(release=corrected, user=staff, target_release=demo_release)
        assert refused.value.code == "target_not_newer"
        other = make_release(["pick:reproduction"], version="9.0", slug="another-benchmark")
        with pytest.raises(RescoreError) as refused:
            rescore_propose(release=demo_release, user=staff, target_release=other)
        assert refused.value.code == "other_benchmark"
        assert not Rescore.objects.exists()

    @pytest.mark.parametrize("who", ["owner", "stranger", "anonymous"])
    def test_only_staff_carry_runs(
        self, run, who, request, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        user = AnonymousUser() if who == "anonymous" else request.getfixturevalue(who)
        with pytest.raises(RescoreError) as refused:
            rescore_propose(release=demo_release, user=user, target_release=corrected)
        assert refused.value.code == "staff_only"
        assert not Rescore.objects.exists()
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
        with pytest.raises(RescoreError) as refused:
            rescore_apply(rescore_id=rescore.pk, user=user)
        assert refused.value.code == "staff_only"
        assert Rescore.objects.get(pk=rescore.pk).state == "proposed"
        assert not Run.objects.filter(release=corrected).exists()


@pytest.mark.django_db
class TestCarryingFromTheCommandAndTheAdmin:
    def test_the_command_carries_onto_the_named_release(
        self, run, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        out = io.StringIO()
        with django_capture_on_commit_callbacks(execute=True):
            call_command(
                "rescore",
                "--as",
                staff.username,
                "propose",
                DEMO_BENCHMARK,
                demo_release.version,
                "--onto",
                "0.6",
                stdout=out,
            )
        rescore = Rescore.objects.get()
        assert rescore.target_release_id == corrected.pk
        out = io.StringIO()
        call_command("rescore", "--as", staff.username, "show", str(rescore.pk), stdout=out)
        assert "onto release 0.6" in out.getvalue() and f"run {run.pk}: changed" in out.getvalue()
        out = io.StringIO()
        call_command("rescore", "--as", staff.username, "apply", str(rescore.pk), stdout=out)
        assert "1 run(s) carried" in out.getvalue()
        assert Run.objects.filter(release=corrected, carried_from=run).count() == 1

    def test_the_command_names_an_unknown_target(self, run, staff, demo_release):
        with pytest.raises(CommandError, match=r"--onto: no release '0\.9'"):
            call_command(
                "rescore", "--as", staff.username, "propose", DEMO_BENCHMARK, demo_release.version, "--onto", "0.9"
            )
        assert not Rescore.objects.exists()

    def test_the_admin_asks_for_the_target_then_proposes_and_applies(
        self, run, staff, demo_release, corrected, client, django_capture_on_commit_callbacks
    ):
        staff.is_superuser = True
        staff.save()
        client.force_login(staff)
        form = client.post(
            "/admin/leaderboard/release/", {"action": "propose_carry", "_selected_action": [demo_release.pk]}
        )
        assert form.status_code == 200
        assert f'<option value="{corrected.pk}" selected>0.6</option>' in form.content.decode()
        assert not Rescore.objects.exists()
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/admin/leaderboard/release/",
                {
                    "action": "propose_carry",
                    "_selected_action": [demo_release.pk],
                    "target": corrected.pk,
                    "reason": "anchor corrected",
                    "confirm": "Propose",
                },
            )
        assert response.status_code == 302
        rescore = Rescore.objects.get()
        assert (rescore.state, rescore.target_release_id, rescore.reason) == (
            "proposed",
            corrected.pk,
            "anchor corrected",
        )
        page = client.get(f"/admin/submissions/rescore/{rescore.pk}/change/").content.decode()
        assert "<code>overall</code>" in page
        client.post("/admin/submissions/rescore/", {"action": "apply", "_selected_action": [rescore.pk]})
        assert Rescore.objects.get().state == "applied"
        assert Run.objects.filter(release=corrected, carried_from=run).count() == 1

    @pytest.mark.parametrize("who", ["owner", "stranger", "anonymous"])
    def test_the_admin_action_refuses_everyone_but_staff(self, run, who, request, demo_release, corrected, client):
        if who != "anonymous":
            client.force_login(request.getfixturevalue(who))
        response = client.post(
            "/admin/leaderboard/release/",
            {
                "action": "propose_carry",
                "_selected_action": [demo_release.pk],
                "target": corrected.pk,
                "confirm": "Propose",
            },
        )
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
        assert not Rescore.objects.exists()
        assert not Run.objects.filter(release=corrected).exists()


@pytest.mark.django_db
def test_a_run_carried_onto_a_draft_shows_its_submitter_no_rank_and_no_leader_among_the_drafts_other_runs(
    owner, stranger, staff, demo_release, release_from_spec, seal, client, django_capture_on_commit_callbacks
):
    # Staff carry the runs onto the next release while it is a draft, to look before publishing.
    # Each carried run is visible to its submitter, but the draft's board, and every other
    # account's run on it, is staff's: the run page named the draft's leader (another account's
    # agent, version and run id) and said which place the run takes among runs its submitter may
    # not see (how many others scored higher).
    from django.urls import reverse

    def verified(user, **kwargs):
        submission, _ = submission_create(user=user, uploaded_file=io.BytesIO(seal(**kwargs)))
        with django_capture_on_commit_callbacks(execute=True):
            assert submission_verify(submission_id=submission.pk).verdict == "validated"
        return Run.objects.get(submission=submission)

    verified(stranger, agent_name="Hidden Leader", agent_version="9", skill=1.2, seed=1)
    mine = verified(owner, agent_name="Modest", agent_version="1", skill=0.5, seed=2)
    spec, _ = demo_release_spec()
    draft = release_from_spec(spec, benchmark=DEMO_BENCHMARK, version="0.6", published=False)
    rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, draft)
    with django_capture_on_commit_callbacks(execute=True):
        rescore_apply(rescore_id=rescore.pk, user=staff)
    carried = Run.objects.get(release=draft, carried_from=mine)
    leader = Run.objects.get(release=draft, agent_version__agent__name="Hidden Leader")
    assert Standing.objects.filter(release=draft, tab="overall").count() == 2  # staff's preview of the board

    client.force_login(owner)
    page = client.get(reverse("run_detail", args=[carried.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "Hidden Leader" not in body and f"run #{leader.pk}" not in body
    assert "data-compare-leader" not in body
    assert "rank " not in body  # no place among the draft's runs
    client.force_login(staff)
    body = client.get(reverse("run_detail", args=[carried.pk])).content.decode()
    assert "Hidden Leader" in body and "rank 2" in body


# ------------------------------------------------------------------ what an attested run carries


@pytest.fixture
def signers(demo_release, corrected):
    """An evaluator key and a judge key (rubric/1, as the demo release's faithfulness gate was
    calibrated); the corrected release 0.6 calibrates its own gate with ``calibrate(rubric)``."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from django.utils import timezone

    from leaderboard.models import Evaluator
    from submissions.bundle.signatures import public_key_b64
    from submissions.services.signing_keys import signing_key_register

    evaluator, judge = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(evaluator), user=None
    )
    reproduction = ReleaseTask.objects.filter(release=demo_release, genre="reproduction")
    reproduction.update(faithfulness_rubric_version="rubric/1", faithfulness_calibrated_at=timezone.now())
    signing_key_register(
        judge_name="judge/1",
        tasks={rt.task: "rubric/1" for rt in reproduction},
        public_key_b64=public_key_b64(judge),
        user=None,
    )

    def calibrate(rubric: str) -> None:
        ReleaseTask.objects.filter(release=corrected, genre="reproduction").update(
            faithfulness_rubric_version=rubric, faithfulness_calibrated_at=timezone.now()
        )

    return evaluator, judge, calibrate


@pytest.fixture
def attested(owner, demo_release, seal, issue_challenge, signers, django_capture_on_commit_callbacks):
    evaluator, judge, _ = signers
    sealed = seal(challenge=issue_challenge(owner), sign_with=evaluator, judge_with=judge)
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(sealed))
    with django_capture_on_commit_callbacks(execute=True):
        verified = submission_verify(submission_id=submission.pk)
    assert verified.verdict == "attested"
    return Run.objects.get(submission=submission)


def carry(source_release, target, staff, capture) -> Run:
    rescore = propose(source_release, staff, capture, target)
    with capture(execute=True):
        rescore_apply(rescore_id=rescore.pk, user=staff)
    return Run.objects.get(release=target)


@pytest.mark.django_db
class TestWhatAnAttestedRunCarries:
    def test_an_attested_run_whose_signers_count_on_the_new_release_is_carried_attested(
        self, attested, signers, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        signers[2]("rubric/1")
        carried = carry(demo_release, corrected, staff, django_capture_on_commit_callbacks)
        assert (carried.level, carried.submission.verdict) == ("attested", "attested")

    def test_a_run_whose_evaluator_key_was_revoked_since_is_carried_validated_and_says_why(
        self, attested, signers, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        """Revocation looks forward: a run attested before keeps its level, but the run a rescore
        creates on the new release is recorded after the revocation. It carried the source's
        level, so a key revoked after a compromise attested new runs on every later release."""
        from leaderboard.models import SigningKey
        from submissions.bundle.signatures import key_id_for, public_key_b64
        from submissions.services.signing_keys import signing_key_revoke

        signers[2]("rubric/1")
        key_id = key_id_for(public_key_b64(signers[0]))
        signing_key_revoke(signing_key=SigningKey.objects.get(key_id=key_id), user=None)
        carried = carry(demo_release, corrected, staff, django_capture_on_commit_callbacks)
        assert (carried.level, carried.submission.verdict) == ("validated", "validated")
        event = VerificationEvent.objects.get(run=carried)
        assert event.level == "validated"
        assert f"not attested on release 0.6: evaluator key {key_id} is revoked" in event.note
        attested.refresh_from_db()
        assert attested.level == "attested"  # the run on the old release keeps its level

    def test_a_judge_verdict_under_a_rubric_the_new_release_did_not_calibrate_is_not_attested_there(
        self, attested, signers, staff, demo_release, corrected, django_capture_on_commit_callbacks
    ):
        """Seed 003: a verdict counts only under the rubric the release's faithfulness gate was
        calibrated with. 0.6 calibrated rubric/2, and the carried run was attested on a verdict
        signed under 0.5's rubric/1, which nobody dry-ran for 0.6."""
        signers[2]("rubric/2")
        carried = carry(demo_release, corrected, staff, django_capture_on_commit_callbacks)
        assert (carried.level, carried.submission.verdict) == ("validated", "validated")
        note = VerificationEvent.objects.get(run=carried).note
        assert "not attested on release 0.6: judge judge/1 signed" in note
        assert "under rubric 'rubric/1', not the rubric release 0.6 calibrated" in note


@pytest.fixture
def carried(run, staff, demo_release, corrected, django_capture_on_commit_callbacks) -> Run:
    rescore = propose(demo_release, staff, django_capture_on_commit_callbacks, corrected)
    with django_capture_on_commit_callbacks(execute=True):
        rescore_apply(rescore_id=rescore.pk, user=staff)
    copy = Run.objects.get(release=corrected, carried_from=run)
    assert Standing.objects.filter(run=copy).exists()
    return copy


@pytest.mark.django_db
def test_revoking_a_run_revokes_its_carried_copy_and_takes_both_off_every_board(run, carried, staff) -> None:
    from submissions.services.reruns import run_level_change

    run_level_change(run=run, actor=staff, level="revoked", reason="fabricated results")
    carried.refresh_from_db()
    assert carried.level == "revoked"
    event = VerificationEvent.objects.filter(run=carried).latest("pk")
    assert (event.level, event.note) == ("revoked", "fabricated results")
    assert f"on run {run.pk}, which it was carried from" in event.method
    assert not Standing.objects.filter(run__in=[run, carried]).exists()


@pytest.mark.django_db
def test_hiding_a_run_hides_its_carried_copy_and_unhiding_brings_both_back(run, carried, staff) -> None:
    from submissions.services.visibility import run_hide, run_unhide

    run_hide(run_id=run.pk, user=staff, reason="under review")
    carried.refresh_from_db()
    assert (carried.hidden_reason, carried.is_private) == ("under review", True)
    assert not Standing.objects.filter(run__in=[run, carried]).exists()
    run_unhide(run_id=run.pk, user=staff)
    carried.refresh_from_db()
    assert (carried.hidden_at, carried.is_private) == (None, False)
    assert Standing.objects.filter(run=carried).exists()


@pytest.mark.django_db
def test_a_copy_hidden_for_its_own_reason_stays_hidden_when_its_source_is_unhidden(run, carried, staff) -> None:
    from submissions.services.visibility import run_hide, run_unhide

    run_hide(run_id=carried.pk, user=staff, reason="its own problem")
    run_hide(run_id=run.pk, user=staff, reason="under review")
    run_unhide(run_id=run.pk, user=staff)
    carried.refresh_from_db()
    assert carried.hidden_reason == "its own problem"


@pytest.mark.django_db
def test_a_copy_hidden_on_its_own_in_the_same_words_stays_hidden_when_its_source_is_unhidden(
    run, carried, staff
) -> None:
    from submissions.services.visibility import run_hide, run_unhide

    run_hide(run_id=carried.pk, user=staff, reason="under review")
    run_hide(run_id=run.pk, user=staff, reason="under review")
    run_hide(run_id=run.pk, user=staff, reason="still under review")  # a new reason for the source only
    run_unhide(run_id=run.pk, user=staff)
    carried.refresh_from_db()
    assert (carried.hidden_reason, carried.is_private) == ("under review", True)
