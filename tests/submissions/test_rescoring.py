"""Rescoring (issue 13 feature 9): propose (dry run on the workers) -> look at the diff -> apply."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import ReleaseTask, Run, Standing, VerificationEvent
from submissions.models import Rescore, RescoreItem
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
def helper(make_user):
    """Staff without the rescore permissions: proposes and applies nothing."""
    user = make_user("helper")
    user.is_staff = True
    user.save()
    return user


@pytest.fixture
def run(owner, demo_release, seal, django_capture_on_commit_callbacks):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    with django_capture_on_commit_callbacks(execute=True):
        verified = submission_verify(submission_id=submission.pk)
    assert verified.verdict == "validated"
    return Run.objects.get(submission=submission)


def correct_an_anchor(release) -> ReleaseTask:
    """What a corrected release input looks like: one task's anchor changes."""
    release_task = ReleaseTask.objects.filter(release=release).order_by("position").first()
    release_task.paper_value = release_task.paper_value * 1.5
    release_task.save(update_fields=["paper_value"])
    return release_task


def propose(release, user, capture) -> Rescore:
    with capture(execute=True):
        rescore = rescore_propose(release=release, user=user, reason="anchor corrected")
    rescore.refresh_from_db()
    return rescore


@pytest.mark.django_db
class TestRescoring:
    def test_the_proposal_records_before_and_after_and_changes_no_run(
        self, run, staff, demo_release, django_capture_on_commit_callbacks
    ):
        before = Run.objects.values("overall", "breakdown").get(pk=run.pk)
        corrected = correct_an_anchor(demo_release)
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
        assert rescore.state == "proposed"
        item = RescoreItem.objects.get(rescore=rescore)
        assert item.state == "changed"
        paths = [row["path"] for row in item.diff]
        assert "overall" in paths and f"tasks.{corrected.task.slug}" in paths
        assert item.before["overall"] == pytest.approx(before["overall"])
        assert item.after["overall"] != pytest.approx(before["overall"])
        assert Run.objects.values("overall", "breakdown").get(pk=run.pk) == before  # nothing applied

    def test_applying_rewrites_the_run_logs_it_and_moves_the_board(
        self, run, staff, demo_release, django_capture_on_commit_callbacks
    ):
        corrected = correct_an_anchor(demo_release)
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
        item = RescoreItem.objects.get(rescore=rescore)
        with django_capture_on_commit_callbacks(execute=True):
            applied = rescore_apply(rescore_id=rescore.pk, user=staff)
        assert applied.state == "applied" and applied.applied_by == staff
        run.refresh_from_db()
        assert run.overall == pytest.approx(item.after["overall"])
        assert run.level == "validated"  # same evidence, same level
        final = run.task_results.get(release_task=corrected).final
        assert final == pytest.approx(item.after["tasks"][corrected.task.slug])
        event = VerificationEvent.objects.filter(run=run).last()
        assert f"rescore {rescore.pk}" in event.method and event.actor == staff
        assert event.evidence_sha256 == run.submission.sha256
        standing = Standing.objects.get(run=run, tab="overall")
        assert standing.score == pytest.approx(item.after["overall"])
        assert RescoreItem.objects.get(pk=item.pk).state == "applied"

    @pytest.mark.parametrize("anchor_published", [True, False])
    def test_the_public_log_names_a_changed_task_only_where_its_anchor_is_public(
        self, run, staff, demo_release, django_capture_on_commit_callbacks, anchor_published
    ):
        """Whether a withheld anchor changed is not for visitors (guarantee 7): the run page's
        log entry leaves its task out; staff read the whole diff on the rescore's items."""
        corrected = correct_an_anchor(demo_release)
        ReleaseTask.objects.filter(pk=corrected.pk).update(anchor_published=anchor_published)
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
        item = RescoreItem.objects.get(rescore=rescore)
        assert f"tasks.{corrected.task.slug}" in [row["path"] for row in item.diff]
        rescore_apply(rescore_id=rescore.pk, user=staff)
        note = VerificationEvent.objects.filter(run=run).last().note
        assert note.startswith("anchor corrected — changed: ")
        assert (f"tasks.{corrected.task.slug}" in note) is anchor_published

    def test_applying_twice_changes_nothing_more(self, run, staff, demo_release, django_capture_on_commit_callbacks):
        correct_an_anchor(demo_release)
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
        rescore_apply(rescore_id=rescore.pk, user=staff)
        events = VerificationEvent.objects.filter(run=run).count()
        rescore_apply(rescore_id=rescore.pk, user=staff)
        assert VerificationEvent.objects.filter(run=run).count() == events

    def test_an_unchanged_release_proposes_nothing(self, run, staff, demo_release, django_capture_on_commit_callbacks):
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
        item = RescoreItem.objects.get(rescore=rescore)
        assert (item.state, item.diff) == ("unchanged", [])

    def test_a_run_changed_since_the_proposal_is_skipped_as_stale(
        self, run, staff, demo_release, django_capture_on_commit_callbacks
    ):
        correct_an_anchor(demo_release)
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
        Run.objects.filter(pk=run.pk).update(overall=0.123)
        rescore_apply(rescore_id=rescore.pk, user=staff)
        item = RescoreItem.objects.get(rescore=rescore)
        assert item.state == "failed" and item.error.startswith("stale")
        assert Run.objects.get(pk=run.pk).overall == 0.123

    @pytest.mark.parametrize("who", ["owner", "stranger", "helper"])
    def test_only_staff_propose_or_apply(
        self, run, who, request, staff, demo_release, django_capture_on_commit_callbacks
    ):
        user = request.getfixturevalue(who)
        with pytest.raises(RescoreError) as refused:
            rescore_propose(release=demo_release, user=user)
        assert refused.value.code == "staff_only"
        assert not Rescore.objects.exists()
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
        with pytest.raises(RescoreError) as refused:
            rescore_apply(rescore_id=rescore.pk, user=user)
        assert refused.value.code == "staff_only"
        assert Rescore.objects.get(pk=rescore.pk).state == "proposed"

    def test_one_open_rescore_per_release(self, run, staff, demo_release, django_capture_on_commit_callbacks):
        propose(demo_release, staff, django_capture_on_commit_callbacks)
        with pytest.raises(RescoreError) as refused:
            rescore_propose(release=demo_release, user=staff)
        assert refused.value.code == "rescore_open"

    def test_a_proposal_still_computing_cannot_be_applied(self, run, staff, demo_release):
        rescore = rescore_propose(release=demo_release, user=staff)  # on_commit not run: still proposing
        with pytest.raises(RescoreError) as refused:
            rescore_apply(rescore_id=rescore.pk, user=staff)
        assert refused.value.code == "not_proposed"


@pytest.mark.django_db
class TestCommandAndAdmin:
    def test_the_command_proposes_shows_and_applies(self, run, staff, demo_release, django_capture_on_commit_callbacks):
        correct_an_anchor(demo_release)
        out = io.StringIO()
        with django_capture_on_commit_callbacks(execute=True):
            call_command("rescore", "--as", staff.username, "propose", "ale-robotics", demo_release.version, stdout=out)
        rescore = Rescore.objects.get()
        assert "proposing for 1 run(s)" in out.getvalue()
        out = io.StringIO()  # the tests' transaction ran the workers' stage at the end of the block above
        call_command("rescore", "--as", staff.username, "show", str(rescore.pk), stdout=out)
        assert f"run {run.pk}: changed" in out.getvalue() and "overall:" in out.getvalue()
        out = io.StringIO()
        call_command("rescore", "--as", staff.username, "apply", str(rescore.pk), stdout=out)
        assert "1 run(s) rewritten" in out.getvalue()

    def test_the_command_refuses_a_non_staff_account(self, run, owner, demo_release):
        with pytest.raises(CommandError, match="no active staff account"):
            call_command("rescore", "--as", owner.username, "propose", "ale-robotics", demo_release.version)
        assert not Rescore.objects.exists()

    def test_the_admin_proposes_from_releases_shows_the_diff_and_applies(
        self, run, staff, demo_release, client, django_capture_on_commit_callbacks
    ):
        correct_an_anchor(demo_release)
        staff.is_superuser = True
        staff.save()
        client.force_login(staff)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/admin/leaderboard/release/",
                {"action": "propose_rescore", "_selected_action": [demo_release.pk]},
            )
        assert response.status_code == 302
        rescore = Rescore.objects.get()
        assert rescore.state == "proposed"
        page = client.get(f"/admin/submissions/rescore/{rescore.pk}/change/").content.decode()
        assert "<code>overall</code>" in page
        client.post("/admin/submissions/rescore/", {"action": "apply", "_selected_action": [rescore.pk]})
        assert Rescore.objects.get().state == "applied"


@pytest.mark.django_db
def test_a_proposal_can_be_deleted_in_the_admin_but_an_applied_rescore_cannot(
    run, staff, demo_release, client, django_capture_on_commit_callbacks
):
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
    rescore_apply(rescore_id=rescore.pk, user=staff)
    assert client.get(f"/admin/submissions/rescore/{rescore.pk}/delete/").status_code == 403
    second = propose(demo_release, staff, django_capture_on_commit_callbacks)
    assert client.post(f"/admin/submissions/rescore/{second.pk}/delete/", {"post": "yes"}).status_code == 302
    assert list(Rescore.objects.values_list("pk", flat=True)) == [rescore.pk]


@pytest.mark.django_db
class TestBrokerOutage:
    """The broker away while staff propose or apply: the writes commit, nothing claims otherwise,
    and the sweeper hands over what the broker lost (resilience review)."""

    def test_a_proposal_made_while_the_broker_is_down_is_recorded_and_the_sweeper_hands_it_over(
        self, run, staff, demo_release, settings, django_capture_on_commit_callbacks, monkeypatch
    ):
        from datetime import timedelta

        from django.utils import timezone
        from kombu.exceptions import OperationalError as BrokerError

        from submissions import tasks
        from submissions.services.rescoring import rescores_stuck_ids

        settings.PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS = 300
        sent: list[int] = []

        def broker_down(rescore_id):
            raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

        monkeypatch.setattr(tasks.compute_rescore, "delay", broker_down)
        with django_capture_on_commit_callbacks(execute=True):
            rescore = rescore_propose(release=demo_release, user=staff)  # raises nothing: robust enqueue
        rescore.refresh_from_db()
        assert rescore.state == "proposing" and rescore.enqueued_at is not None
        assert rescores_stuck_ids() == []  # just handed over (and lost): not yet stuck
        later = timezone.now() + timedelta(seconds=301)
        assert rescores_stuck_ids(now=later) == [rescore.pk]
        monkeypatch.setattr(tasks.compute_rescore, "delay", sent.append)
        Rescore.objects.filter(pk=rescore.pk).update(enqueued_at=timezone.now() - timedelta(seconds=301))
        with django_capture_on_commit_callbacks(execute=True):
            tasks.sweep_stuck_submissions()
        assert sent == [rescore.pk]
        assert rescores_stuck_ids() == []  # stamped again: not handed over on every sweep

    def test_a_run_older_than_a_day_rescored_in_place_is_swept_for_its_intervals(
        self, run, staff, demo_release, settings, django_capture_on_commit_callbacks, monkeypatch
    ):
        from datetime import timedelta

        from django.utils import timezone

        from submissions.services.runs import runs_missing_confidence_ids

        settings.PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS = 60
        correct_an_anchor(demo_release)
        rescore = propose(demo_release, staff, django_capture_on_commit_callbacks)
        with django_capture_on_commit_callbacks(execute=False):  # the intervals' enqueue is lost
            rescore_apply(rescore_id=rescore.pk, user=staff)
        Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(days=3))
        assert Run.objects.get(pk=run.pk).confidence == {}
        now = timezone.now()
        assert runs_missing_confidence_ids(now=now) == []  # just applied: its follow-up may be queued
        assert runs_missing_confidence_ids(now=now + timedelta(seconds=61)) == [run.pk]
