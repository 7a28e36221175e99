"""A run's bootstrap intervals, computed after commit (submissions.services.runs.run_confidence_compute
and the submissions.tasks.compute_run_confidence task), off the verification path."""

import io

import pytest

from leaderboard.models import Release, Run, RunEpisodes, Standing
from leaderboard.selectors.releases import release_spec
from submissions.bundle.evaluate import evaluate_paper_gap
from submissions.services.runs import run_confidence_compute
from submissions.services.stored_bundles import bundle_local_path, open_stored_bundle
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify
from submissions.tasks import compute_run_confidence


@pytest.fixture
def verified_run(demo_release, seal, owner, django_capture_on_commit_callbacks):
    """A validated run whose on-commit follow-ups were captured, not run: (run, callbacks)."""
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        submission_verify(submission_id=submission.pk)
    return Run.objects.get(submission=submission), callbacks


def expected_confidence(run: Run, resamples: int) -> dict[str, list[float]]:
    """What the bundle tool itself reports for the run's stored bundle, as [low, high] per tab."""
    with bundle_local_path(run.submission.file.name) as path:
        bundle = open_stored_bundle(path)
    outcome = evaluate_paper_gap(
        bundle,
        release_spec=release_spec(run.release),
        required_task_set_hash=run.release.required_task_set_hash,
        signing_keys={},
        bootstrap_resamples=resamples,
        bootstrap_seed=0,
    )
    return {tab: [interval["low"], interval["high"]] for tab, interval in outcome.confidence.items()}


@pytest.mark.django_db
def test_verification_records_the_run_without_intervals_and_its_standings_without_a_range(verified_run):
    run, callbacks = verified_run
    assert run.confidence == {}
    assert len(callbacks) == 1
    assert set(Standing.objects.filter(run=run).values_list("ci_low", "ci_high")) == {(None, None)}
    assert Standing.objects.filter(run=run, score=run.overall, tab="overall").exists()


@pytest.mark.django_db
def test_the_follow_up_on_commit_computes_the_intervals_the_bundle_tool_reports(verified_run, settings):
    run, callbacks = verified_run
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 120
    callbacks[0]()  # in-process Celery: compute_run_confidence runs now
    run.refresh_from_db()
    assert run.confidence == expected_confidence(run, 120)
    assert run.confidence["overall"][0] <= run.overall <= run.confidence["overall"][1]
    overall = Standing.objects.get(run=run, tab="overall")
    assert [overall.ci_low, overall.ci_high] == run.confidence["overall"]
    assert Release.objects.get(pk=run.release_id).generation == 2


@pytest.mark.django_db
def test_computing_the_intervals_twice_changes_nothing_the_second_time(verified_run):
    run, _ = verified_run
    compute_run_confidence(run.pk)
    run.refresh_from_db()
    first = run.confidence
    generation = Release.objects.get(pk=run.release_id).generation
    compute_run_confidence(run.pk)
    run.refresh_from_db()
    assert first and run.confidence == first
    assert Release.objects.get(pk=run.release_id).generation == generation


@pytest.mark.django_db
def test_a_run_that_no_longer_exists_is_skipped(db):
    assert run_confidence_compute(run_id=987654) is None
    compute_run_confidence(987654)  # the task does not raise either
    assert Run.objects.count() == 0


@pytest.mark.django_db
def test_zero_bootstrap_resamples_leave_the_run_without_intervals(verified_run, settings):
    run, _ = verified_run
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 0
    assert run_confidence_compute(run_id=run.pk).confidence == {}
    run.refresh_from_db()
    assert run.confidence == {}
    assert Release.objects.get(pk=run.release_id).generation == 1


@pytest.mark.django_db
def test_a_stored_bundle_that_no_longer_decrypts_leaves_the_run_without_intervals(verified_run, settings):
    import pyrage

    run, _ = verified_run
    RunEpisodes.objects.filter(run=run).delete()  # a run recorded before episodes were stored
    settings.PODIUM_SITE_KEYS = str(pyrage.x25519.Identity.generate())  # the site lost its key
    assert run_confidence_compute(run_id=run.pk).confidence == {}
    run.refresh_from_db()
    assert run.confidence == {}


def test_the_confidence_task_is_acknowledged_late_and_retried_on_transient_faults():
    from django.db import OperationalError

    assert compute_run_confidence.acks_late is True
    assert compute_run_confidence.reject_on_worker_lost is True
    assert OperationalError in compute_run_confidence.autoretry_for
    assert OSError in compute_run_confidence.autoretry_for


@pytest.mark.django_db
def test_the_sweeper_hands_back_runs_whose_confidence_follow_up_was_lost(verified_run, settings):
    from datetime import timedelta

    from django.utils import timezone

    from submissions.tasks import sweep_stuck_submissions

    run, _ = verified_run  # its follow-up was never run: as if the broker lost it
    settings.PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS = 60
    assert sweep_stuck_submissions() == 0  # too recent: its follow-up may still be queued
    run.refresh_from_db()
    assert run.confidence == {}
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=61))
    assert sweep_stuck_submissions() == 0  # counts submissions only; tasks run in-process in tests
    run.refresh_from_db()
    assert run.confidence == expected_confidence(run, settings.PODIUM_BOOTSTRAP_RESAMPLES)


@pytest.mark.django_db
def test_the_sweeper_leaves_runs_older_than_a_day_and_runs_with_intervals_alone(verified_run, settings):
    from datetime import timedelta

    from django.utils import timezone

    from submissions.services.runs import runs_missing_confidence_ids

    run, _ = verified_run
    settings.PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS = 60
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(created_at=now - timedelta(days=1, seconds=1))
    assert runs_missing_confidence_ids(now=now) == []
    Run.objects.filter(pk=run.pk).update(created_at=now - timedelta(hours=1))
    assert runs_missing_confidence_ids(now=now) == [run.pk]
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 0
    assert runs_missing_confidence_ids(now=now) == []
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 50
    Run.objects.filter(pk=run.pk).update(confidence={"overall": [0.1, 0.2]})
    assert runs_missing_confidence_ids(now=now) == []


@pytest.mark.django_db
def test_verification_stores_the_runs_episodes_for_the_follow_up(verified_run):
    from scoring.uncertainty import unpack_run_columns

    run, _ = verified_run
    columns = unpack_run_columns(RunEpisodes.objects.get(run=run).columns)
    with bundle_local_path(run.submission.file.name) as path:
        bundle = open_stored_bundle(path)
    assert columns is not None and set(columns) == set(bundle.results)
    for slug, result in bundle.results.items():
        assert columns[slug].values.shape[1] == len(result.episodes)
        assert columns[slug].values[0].tolist() == [episode.metric for episode in result.episodes]


@pytest.mark.django_db
def test_the_follow_up_reads_the_stored_episodes_and_never_opens_the_bundle(verified_run, settings, monkeypatch):
    import submissions.services.runs as runs_service

    run, _ = verified_run
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 150
    expected = expected_confidence(run, 150)

    def no_bundle(*args, **kwargs):
        raise AssertionError("the follow-up opened the bundle")

    monkeypatch.setattr(runs_service, "open_stored_bundle", no_bundle)
    monkeypatch.setattr(runs_service, "bundle_local_path", no_bundle)
    run_confidence_compute(run_id=run.pk)
    run.refresh_from_db()
    assert run.confidence == expected
    assert [Standing.objects.get(run=run, tab="overall").ci_low] == [expected["overall"][0]]
    assert not RunEpisodes.objects.filter(run=run).exists()  # a hand-off: gone once used


@pytest.mark.django_db
def test_without_bootstrap_resamples_verification_stores_no_episodes(demo_release, seal, owner, settings):
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 0
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    submission_verify(submission_id=submission.pk)
    assert Run.objects.filter(submission=submission).exists()
    assert not RunEpisodes.objects.exists()


@pytest.mark.django_db
def test_a_run_without_stored_episodes_gets_the_same_intervals_from_its_bundle(verified_run, settings):
    run, _ = verified_run
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 150
    RunEpisodes.objects.filter(run=run).delete()
    run_confidence_compute(run_id=run.pk)
    run.refresh_from_db()
    assert run.confidence == expected_confidence(run, 150)


@pytest.mark.django_db
def test_stored_episodes_that_no_longer_fit_the_release_fall_back_to_the_bundle(verified_run, settings):
    run, _ = verified_run
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 150
    RunEpisodes.objects.filter(run=run).update(columns=b"not a packing")
    run_confidence_compute(run_id=run.pk)
    run.refresh_from_db()
    assert run.confidence == expected_confidence(run, 150)


@pytest.mark.django_db
def test_the_interval_lands_only_on_the_runs_own_standing_rows(verified_run, demo_release, seal, owner):
    run, _ = verified_run
    other_submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal(agent_version="2.0")))
    submission_verify(submission_id=other_submission.pk)
    other = Run.objects.get(submission=other_submission)
    Run.objects.filter(pk=other.pk).update(confidence={})
    Standing.objects.filter(run=other).update(ci_low=None, ci_high=None)
    run_confidence_compute(run_id=run.pk)
    assert set(Standing.objects.filter(run=other).values_list("ci_low", "ci_high")) == {(None, None)}
    run.refresh_from_db()
    rows = {row.tab: [row.ci_low, row.ci_high] for row in Standing.objects.filter(run=run)}
    assert rows and all(rows[tab] == run.confidence.get(tab, [None, None]) for tab in rows)


@pytest.mark.django_db
def test_a_re_synced_release_s_changed_task_spec_is_used_by_the_next_computation(verified_run, settings):
    from leaderboard.models import ReleaseTask
    from leaderboard.selectors.releases import release_spec_by_id

    run, _ = verified_run
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 150
    release = run.release
    before = expected_confidence(run, 150)
    # A computation before the re-sync builds (and keeps) the release's spec as it was.
    assert release_spec_by_id(release.pk, release.missing_task_policy) == release_spec(release)
    # The re-sync moves an anchor and a penalty limit (as leaderboard.services.release_sync saves them).
    slug = min(release_spec(release).tasks)
    row = ReleaseTask.objects.get(release=release, task__slug=slug)
    row.paper_value *= 2
    row.penalties = [{"metric": entry["metric"], "limit": entry["limit"] / 2} for entry in row.penalties]
    row.save()
    assert release_spec_by_id(release.pk, release.missing_task_policy) == release_spec(release)
    run_confidence_compute(run_id=run.pk)
    run.refresh_from_db()
    assert run.confidence == expected_confidence(run, 150) != before


@pytest.mark.django_db
def test_a_release_s_changed_missing_task_policy_is_used_by_the_next_spec(verified_run):
    from leaderboard.selectors.releases import release_spec_by_id

    run, _ = verified_run
    release = run.release
    assert release_spec_by_id(release.pk, "exclude").missing_task_policy == "exclude"
    assert release_spec_by_id(release.pk, "zero").missing_task_policy == "zero"
