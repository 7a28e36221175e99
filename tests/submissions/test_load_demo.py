import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from leaderboard.models import Release, Run, SigningKey, Standing
from submissions.models import Submission, SubmissionChallenge


def paper_gap_submissions():
    return Submission.objects.filter(submitter__username="demo-submitter", kind="paper_gap")


@pytest.mark.django_db
def test_load_demo_fills_both_releases_through_the_real_path_and_a_rerun_changes_nothing(site_identity, capsys):
    call_command("load_demo")
    out = capsys.readouterr().out
    releases = Release.objects.filter(benchmark__slug="ale-robotics", published=True)
    assert sorted(releases.values_list("version", flat=True)) == ["0.4", "0.5"]
    verdicts = sorted(paper_gap_submissions().values_list("verdict", flat=True))
    # Every run covering a withheld anchor is evaluator-signed; the two Baseline BC runs (published
    # anchors only) are not. Only the three judged runs are attested: the other consistent runs'
    # faithfulness is self-declared, which caps them at validated.
    assert verdicts.count("attested") == 3
    assert verdicts.count("validated") == 10
    assert verdicts.count("mismatch") == 1
    assert verdicts.count("rejected") == 2
    assert len(verdicts) == 16
    assert sorted(paper_gap_submissions().filter(verdict="rejected").values_list("error_code", flat=True)) == [
        "release_hash_mismatch",
        "unsigned_withheld_task",
    ]
    assert Run.objects.filter(release__version="0.5", complete=False).count() == 3  # Sparrow, Heron, Baseline BC
    assert Standing.objects.filter(release__version="0.5", tab="overall").count() == 10
    # One evaluator key per demo simulator (keys are scoped) and one calibrated judge.
    assert SigningKey.objects.filter(owner_kind="evaluator").count() == 4
    assert SigningKey.objects.filter(owner_kind="judge").count() == 1
    # Every demo bundle is podium-bundle/2, made for a challenge of the demo user and using it up.
    assert set(paper_gap_submissions().values_list("bundle_format", flat=True)) == {"podium-bundle/2"}
    assert SubmissionChallenge.objects.filter(used_at__isnull=True).count() == 2  # the rejected ones'

    assert "demo loaded" in out

    counts = (Submission.objects.count(), Run.objects.count(), Standing.objects.count(), SigningKey.objects.count())
    call_command("load_demo")
    assert (
        Submission.objects.count(),
        Run.objects.count(),
        Standing.objects.count(),
        SigningKey.objects.count(),
    ) == counts
    assert "unchanged" in capsys.readouterr().out


@pytest.mark.django_db(transaction=True)  # real commits: the uploads' on-commit enqueue fires
def test_load_demo_verifies_in_process_and_publishes_nothing_to_the_broker(site_identity, monkeypatch):
    from leaderboard.site.celery import app

    published = []
    app.conf.task_always_eager = False  # as with a broker configured (the autouse fixture restores it)
    monkeypatch.setattr(app, "send_task", lambda name, *args, **kwargs: published.append(name))
    call_command("load_demo")
    assert published == []
    assert paper_gap_submissions().count() == 16
    assert not paper_gap_submissions().exclude(status="done").exists()
    assert app.conf.task_always_eager is False  # restored afterwards


@pytest.mark.django_db
def test_the_demo_evaluator_keys_sign_only_the_demo_tasks_of_their_simulator(site_identity):
    # Their private halves are derived from public labels: unscoped, they would sign for any task
    # a real release later puts on a demo simulator.
    from leaderboard.models import ReleaseTask, SigningKeyTask, Task

    call_command("load_demo")
    demo_tasks = ReleaseTask.objects.filter(release__benchmark__slug="ale-robotics").values_list("task", flat=True)
    for key in SigningKey.objects.filter(owner_kind="evaluator"):
        scoped = set(SigningKeyTask.objects.filter(signing_key=key).values_list("task", flat=True))
        expected = set(Task.objects.filter(pk__in=demo_tasks, simulator=key.evaluator_id).values_list("pk", flat=True))
        assert scoped == expected and scoped


@pytest.mark.django_db
def test_load_demo_names_an_account_holding_the_demo_username_in_another_case_and_loads_nothing(site_identity):
    get_user_model().objects.create_user("Demo-Submitter")
    with pytest.raises(CommandError) as refused:
        call_command("load_demo")
    assert str(refused.value) == (
        "the account 'Demo-Submitter' holds the demo's username 'demo-submitter' in another case (usernames are "
        "unique whatever their case); rename it in the admin, then run load_demo again."
    )
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["Demo-Submitter"]
    assert not Release.objects.exists() and not Submission.objects.exists()


@pytest.mark.django_db
def test_load_demo_on_a_site_that_revoked_a_demo_key_is_a_clear_error_not_a_traceback(site_identity):
    from leaderboard.models import Evaluator
    from submissions.bundle.signatures import public_key_b64
    from submissions.management.commands.load_demo import demo_evaluator_key
    from submissions.services.signing_keys import signing_key_register, signing_key_revoke

    carla = Evaluator.objects.create(simulator="carla")
    key = signing_key_register(evaluator=carla, public_key_b64=public_key_b64(demo_evaluator_key("carla")), user=None)
    signing_key_revoke(signing_key=key, user=None)
    with pytest.raises(CommandError) as refused:
        call_command("load_demo")
    message = str(refused.value)
    assert message.startswith(f"a demo signing key: public key: key {key.key_id} was revoked")
    assert "load it into a fresh database" in message
