"""Issue 11 items 1, 2, 3, 4 (verification side) and 11's two crashes, on the real path:
an API-key upload (``POST /api/v1/submissions/``), verified in-process on commit, with
the exact code and the database state after. Every refusal writes nothing but the verdict."""

from __future__ import annotations

import io
import json
import tarfile
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import Agent, AgentVersion, Evaluator, RaceEntry, ReleaseTask, Run, TaskResult
from submissions.api_keys import api_key_create
from submissions.bundle.signatures import public_key_b64
from submissions.models import Submission, SubmissionChallenge
from submissions.services.signing_keys import signing_key_register

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_daily_counters")]


@pytest.fixture
def api(django_capture_on_commit_callbacks):
    """api(user) -> client that uploads with the user's API key; upload(client, bytes) verifies on commit."""

    def make(user) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(user=user, name='harness').plaintext}")
        return client

    return make


@pytest.fixture
def upload(django_capture_on_commit_callbacks):
    def run(client: APIClient, sealed: bytes, benchmark: str = "ale-robotics") -> Submission:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/api/v1/submissions/",
                {"benchmark": benchmark, "bundle": io.BytesIO(sealed)},
                format="multipart",
            )
        assert response.status_code in (200, 201), response.content
        return Submission.objects.get(pk=response.json()["id"])

    return run


@pytest.fixture
def evaluator_key(demo_release, owner):
    key = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(key), user=None
    )
    return key


@pytest.fixture
def judge_key(demo_release, owner):
    key = Ed25519PrivateKey.generate()
    reproduction = ReleaseTask.objects.filter(release=demo_release, genre="reproduction")
    # The release's faithfulness gate passed with rubric/1: a judge key counts for what was calibrated.
    reproduction.update(faithfulness_rubric_version="rubric/1", faithfulness_calibrated_at=timezone.now())
    tasks = {rt.task: "rubric/1" for rt in reproduction}
    signing_key_register(judge_name="judge/1", tasks=tasks, public_key_b64=public_key_b64(key), user=None)
    return key


def nothing_recorded() -> bool:
    return not Run.objects.exists() and not TaskResult.objects.exists()


# ------------------------------------------------------------------ challenges


def test_a_challenge_is_issued_over_the_api_bound_to_the_account_release_and_agent(api, owner, demo_release):
    response = api(owner).post(
        "/api/v1/challenges/",
        {"benchmark": "ale-robotics", "release": "0.5", "agent_name": "Alice Agent", "agent_version": "1.0"},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    challenge = SubmissionChallenge.objects.get(token=body["token"])
    assert (challenge.user, challenge.release, challenge.agent_version.agent.slug, challenge.used_at) == (
        owner,
        demo_release,
        "alice-agent",
        None,
    )
    assert body["format"] == "podium-bundle/2"
    assert Agent.objects.get(slug="alice-agent").owner == owner


def test_a_challenge_form_naming_a_field_twice_is_refused_and_issues_nothing(api, owner, demo_release):
    response = api(owner).post(
        "/api/v1/challenges/",
        {"benchmark": "ale-robotics", "release": ["0.4", "0.5"], "agent_name": "A", "agent_version": "1"},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "release: given 2 times; send it once."
    assert not SubmissionChallenge.objects.exists()


@pytest.mark.parametrize(
    ("extra", "code", "message"),
    [
        (
            {"rcae": 1},
            "invalid",
            "rcae: unknown field; expected benchmark, release, agent_name, agent_version, race.",
        ),
        ({"race": 1}, "unknown_race", "race: benchmark 'ale-robotics' runs no races; leave race out (or null)"),
    ],
)
def test_a_challenge_request_that_would_be_read_past_is_refused_and_issues_nothing(
    api, owner, demo_release, extra, code, message
):
    body = {"benchmark": "ale-robotics", "release": "0.5", "agent_name": "Alice Agent", "agent_version": "1.0"}
    response = api(owner).post("/api/v1/challenges/", {**body, **extra}, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (400, code)
    assert response.json()["error"]["message"] == message
    assert not SubmissionChallenge.objects.exists() and not Agent.objects.exists()


def test_an_account_holding_too_many_unused_challenges_is_told_when_one_frees(api, owner, demo_release, monkeypatch):
    from datetime import timedelta

    from django.utils import timezone

    from submissions.services import challenges

    monkeypatch.setattr(challenges, "CHALLENGE_OPEN_MAX", 2)
    body = {"benchmark": "ale-robotics", "release": "0.5", "agent_name": "Alice Agent", "agent_version": "1.0"}
    for _ in range(2):
        assert api(owner).post("/api/v1/challenges/", body, format="json").status_code == 201
    # The first to expire frees a slot in about an hour.
    first = SubmissionChallenge.objects.order_by("pk").first()
    SubmissionChallenge.objects.filter(pk=first.pk).update(expires_at=timezone.now() + timedelta(seconds=3600))
    response = api(owner).post("/api/v1/challenges/", body, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (429, "too_many_challenges")
    assert 3590 <= int(response["Retry-After"]) <= 3600
    assert SubmissionChallenge.objects.filter(user=owner).count() == 2


def test_anonymous_clients_get_no_challenge(demo_release):
    response = APIClient().post("/api/v1/challenges/", {"benchmark": "ale-robotics"}, format="json")
    assert response.status_code == 401
    assert not SubmissionChallenge.objects.exists()


def test_a_challenge_for_another_accounts_agent_is_refused_agent_not_yours(api, owner, stranger, demo_release):
    api(owner).post(
        "/api/v1/challenges/",
        {"benchmark": "ale-robotics", "release": "0.5", "agent_name": "alice-agent", "agent_version": "1"},
        format="json",
    )
    response = api(stranger).post(
        "/api/v1/challenges/",
        {"benchmark": "ale-robotics", "release": "0.5", "agent_name": "Alice Agent", "agent_version": "2"},
        format="json",
    )
    assert (response.status_code, response.json()["error"]["code"]) == (403, "agent_not_yours")
    assert SubmissionChallenge.objects.filter(user=stranger).count() == 0
    assert AgentVersion.objects.filter(agent__slug="alice-agent").count() == 1


def test_a_challenge_for_an_unpublished_release_reads_like_one_that_does_not_exist(api, owner, demo_release):
    demo_release.published = False
    demo_release.save(update_fields=["published"])
    answers = [
        api(owner)
        .post(
            "/api/v1/challenges/",
            {"benchmark": "ale-robotics", "release": version, "agent_name": "a", "agent_version": "1"},
            format="json",
        )
        .json()["error"]
        for version in ("0.5", "9.9")
    ]
    assert [a["code"] for a in answers] == ["unknown_release", "unknown_release"]
    assert answers[0]["message"].replace("0.5", "X") == answers[1]["message"].replace("9.9", "X")


def test_a_v2_bundle_with_its_challenge_signed_results_and_judge_is_attested_and_uses_the_challenge(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, judge_key
):
    token = issue_challenge(owner)
    submission = upload(api(owner), seal(challenge=token, sign_with=evaluator_key, judge_with=judge_key))
    assert (submission.verdict, submission.error_code, submission.bundle_format) == ("attested", "", "podium-bundle/2")
    challenge = SubmissionChallenge.objects.get(token=token)
    assert (challenge.submission, challenge.used_at is not None) == (submission, True)
    assert Run.objects.get(submission=submission).level == "attested"


def test_a_bundle_signed_with_the_tools_sign_results_and_sign_faithfulness_is_attested_by_the_server(
    api, upload, owner, demo_release, issue_challenge, evaluator_key, judge_key, site_identity, tmp_path
):
    from submissions.bundle.cli import main
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
    from submissions.bundle.signatures import private_key_pem

    token = issue_challenge(owner)
    directory = write_paper_gap_bundle_dir(tmp_path / "bundle", challenge=token, episodes_per_task=5)
    (tmp_path / "evaluator.pem").write_bytes(private_key_pem(evaluator_key))
    (tmp_path / "judge.pem").write_bytes(private_key_pem(judge_key))
    assert main(["sign-results", str(directory), "--key", str(tmp_path / "evaluator.pem")]) == 0
    # rubric/1: the rubric the judge key is registered for and the release's gate calibrated.
    judged = ["sign-faithfulness", str(directory), "--key", str(tmp_path / "judge.pem"), "--rubric", "rubric/1"]
    assert main(judged) == 0
    # Sealed as it is: the members map the sign commands rewrote is the one the server checks.
    sealed = seal_dir(directory, str(site_identity.to_public()), tmp_path / "run.age")
    submission = upload(api(owner), sealed.read_bytes())
    assert (submission.verdict, submission.error_code) == ("attested", ""), submission.error_message
    reproduction = TaskResult.objects.filter(run__submission=submission, release_task__genre="reproduction")
    assert reproduction.exists()
    assert set(reproduction.values_list("faithfulness_source", "judge", "rubric_version")) == {
        ("judge_signed", "judge/1", "rubric/1")
    }
    assert SubmissionChallenge.objects.get(token=token).submission == submission


def _judged_attempt(directory, *, token, evaluator_key, judge_key, seed):
    """One attempt at the run under ``token``: its results signed by the evaluator, its
    verdicts by the judge (each naming the results it judged)."""
    from submissions.bundle.demo import write_paper_gap_bundle_dir

    return write_paper_gap_bundle_dir(
        directory, challenge=token, sign_with=evaluator_key, judge_with=judge_key, seed=seed, episodes_per_task=5
    )


def test_a_judge_verdict_of_another_attempt_under_the_same_challenge_is_refused_and_nothing_is_recorded(
    api, upload, owner, demo_release, issue_challenge, evaluator_key, judge_key, site_identity, tmp_path
):
    from submissions.bundle.demo import seal_dir
    from submissions.bundle.seal import write_members

    token = issue_challenge(owner)
    judged = _judged_attempt(tmp_path / "a", token=token, evaluator_key=evaluator_key, judge_key=judge_key, seed=1)
    other = _judged_attempt(tmp_path / "b", token=token, evaluator_key=evaluator_key, judge_key=judge_key, seed=2)
    # Attempt b's signed results, carried by attempt a's signed verdicts: both signatures verify,
    # for the same tasks and challenge; only the verdicts' results_sha256 tells them apart.
    (other / "faithfulness.json").write_bytes((judged / "faithfulness.json").read_bytes())
    write_members(other)
    submission = upload(api(owner), seal_dir(other, str(site_identity.to_public())).read_bytes())
    assert (submission.status, submission.verdict, submission.error_code) == (
        "done",
        "rejected",
        "verdict_results_mismatch",
    )
    assert "a judge's verdict counts only for the results it judged" in submission.error_message
    assert nothing_recorded()


def test_a_judge_verdict_signed_without_naming_its_results_is_recorded_but_does_not_attest(
    api, upload, owner, demo_release, issue_challenge, evaluator_key, judge_key, site_identity, tmp_path
):
    from submissions.bundle.demo import seal_dir
    from submissions.bundle.seal import write_members
    from submissions.bundle.sign_dir import signed_verdict

    token = issue_challenge(owner)
    directory = _judged_attempt(tmp_path / "a", token=token, evaluator_key=evaluator_key, judge_key=judge_key, seed=1)
    verdicts = json.loads((directory / "faithfulness.json").read_text())
    older = {
        slug: signed_verdict(
            slug,
            faithful=v["faithful"],
            judge=v["judge"],
            rubric_version=v["rubric_version"],
            challenge=token,
            results_sha256=None,  # the form judges signed before verdicts named their results
            key=judge_key,
        )
        for slug, v in verdicts.items()
    }
    (directory / "faithfulness.json").write_text(json.dumps(older))
    write_members(directory)
    submission = upload(api(owner), seal_dir(directory, str(site_identity.to_public())).read_bytes())
    assert (submission.verdict, submission.error_code) == ("validated", "")
    assert "a judge's signed verdict does not name the results it judged" in submission.error_message
    run = Run.objects.get(submission=submission)
    assert run.level == "validated"
    reproduction = TaskResult.objects.filter(run=run, release_task__genre="reproduction")
    assert set(reproduction.values_list("faithfulness_source", flat=True)) == {"judge_signed"}


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("unknown", "challenge_unknown"),
        ("another_account", "challenge_not_yours"),
        ("expired", "challenge_expired"),
        ("another_agent", "challenge_mismatch"),
    ],
)
def test_a_bundle_whose_challenge_is_not_valid_for_it_is_refused_with_its_own_code(
    case, code, api, upload, owner, stranger, demo_release, seal, issue_challenge, evaluator_key
):
    if case == "unknown":
        token = "u" * 43
    elif case == "another_account":
        token = issue_challenge(stranger, "stranger-agent")
    else:
        token = issue_challenge(owner, "other-agent" if case == "another_agent" else "demo-agent")
        if case == "expired":
            SubmissionChallenge.objects.filter(token=token).update(expires_at=timezone.now() - timedelta(seconds=1))
    submission = upload(api(owner), seal(challenge=token, sign_with=evaluator_key))
    assert (submission.verdict, submission.error_code) == ("rejected", code)
    assert nothing_recorded()
    assert not SubmissionChallenge.objects.filter(used_at__isnull=False).exists()


def test_a_challenge_is_single_use(api, upload, owner, demo_release, seal, issue_challenge, evaluator_key):
    token = issue_challenge(owner)
    client = api(owner)
    first = upload(client, seal(challenge=token, sign_with=evaluator_key, seed=1))
    second = upload(client, seal(challenge=token, sign_with=evaluator_key, seed=2))
    assert (first.verdict, second.verdict, second.error_code) == ("validated", "rejected", "challenge_used")
    assert Run.objects.count() == 1


def test_another_account_uploading_a_sealed_v2_bundle_first_is_refused_and_the_owner_still_succeeds(
    api, upload, owner, stranger, demo_release, seal, issue_challenge, evaluator_key
):
    """The front-running of issue 11: Bob uploads Alice's sealed file before she does."""
    sealed = seal(challenge=issue_challenge(owner), sign_with=evaluator_key)
    stolen = upload(api(stranger), sealed)
    assert (stolen.verdict, stolen.error_code) == ("rejected", "challenge_not_yours")
    assert nothing_recorded()
    # The same bytes from the owner are a new upload of hers (the stranger's row stays rejected).
    mine = upload(api(owner), sealed)
    assert (mine.submitter, mine.verdict, mine.error_code) == (owner, "validated", "")
    assert Run.objects.get().submission == mine
    assert Submission.objects.get(pk=stolen.pk).verdict == "rejected"


def test_results_resealed_under_a_new_challenge_by_another_account_are_duplicate_results(
    api, upload, owner, stranger, demo_release, tmp_path, site_identity, issue_challenge
):
    """Bob re-seals Alice's plaintext with his own challenge: the results digest gives it away."""
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir

    recipient = str(site_identity.to_public())
    alice = write_paper_gap_bundle_dir(tmp_path / "a", challenge=issue_challenge(owner, "alice"), agent_name="alice")
    bob = write_paper_gap_bundle_dir(tmp_path / "b", challenge=issue_challenge(stranger, "bob"), agent_name="bob")
    first = upload(api(owner), seal_dir(alice, recipient).read_bytes())
    second = upload(api(stranger), seal_dir(bob, recipient).read_bytes())
    assert (first.verdict, second.verdict, second.error_code) == ("validated", "rejected", "duplicate_results")
    assert Run.objects.filter(submission=second).count() == 0
    assert second.results_digest == ""
    assert first.results_digest != ""


def test_results_signed_over_their_own_challenge_outrank_an_unsigned_copy_filed_first(
    api, upload, owner, stranger, demo_release, tmp_path, site_identity, issue_challenge, evaluator_key
):
    """Bob files Alice's plaintext results, unsigned, under his own challenge before she uploads.
    First-come used to win: Bob ranked on her measurements and her signed original was refused
    duplicate_results for good. Her evaluator's signatures cover her own challenge, his copy
    carries no proof: hers is the run, and his is hidden as a copy with a public reason."""
    from leaderboard.models import Standing
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
    from submissions.models import RunVisibilityEvent
    from submissions.services.visibility import COPY_HIDDEN_REASON

    recipient = str(site_identity.to_public())
    alice = write_paper_gap_bundle_dir(
        tmp_path / "a", challenge=issue_challenge(owner, "alice"), agent_name="alice", sign_with=evaluator_key
    )
    bob = write_paper_gap_bundle_dir(tmp_path / "b", challenge=issue_challenge(stranger, "bob"), agent_name="bob")
    copy = upload(api(stranger), seal_dir(bob, recipient).read_bytes())
    assert (copy.verdict, copy.error_code) == ("validated", "")
    original = upload(api(owner), seal_dir(alice, recipient).read_bytes())
    assert original.error_code == "" and original.verdict in ("validated", "attested")
    copied_run = Run.objects.get(submission=copy)
    assert copied_run.hidden_at is not None and copied_run.is_private
    assert copied_run.hidden_reason == COPY_HIDDEN_REASON  # the original (maybe private) is not named
    assert Run.objects.get(submission=original).hidden_at is None
    event = RunVisibilityEvent.objects.get(run=copied_run)
    assert (event.action, event.actor) == ("hidden", None)
    assert set(Standing.objects.filter(release=demo_release).values_list("agent_slug", flat=True)) == {"alice"}
    # The original stands: the same results from anyone else, signed or not, are refused.
    again = write_paper_gap_bundle_dir(
        tmp_path / "c", challenge=issue_challenge(stranger, "bob"), agent_name="bob", sign_with=evaluator_key
    )
    refused = upload(api(stranger), seal_dir(again, recipient).read_bytes())
    assert (refused.verdict, refused.error_code) == ("rejected", "duplicate_results")


def test_a_podium_bundle_1_is_accepted_but_never_above_validated(api, upload, owner, demo_release, seal, evaluator_key):
    submission = upload(api(owner), seal(sign_with=evaluator_key))
    assert (submission.verdict, submission.bundle_format) == ("validated", "podium-bundle/1")
    assert "podium-bundle/1 bundles carry no submission challenge" in submission.error_message
    assert Run.objects.get(submission=submission).level == "validated"


def test_a_newer_release_moving_a_task_to_another_simulator_does_not_change_who_signs_this_one(
    api, upload, owner, demo_release, seal, evaluator_key
):
    # What sync does when a newer release names another simulator: the shared Task row moves,
    # this release's snapshot (ReleaseTask.simulator) keeps the evaluator it was published with.
    from leaderboard.models import Task

    newer = Evaluator.objects.create(simulator="demo-sim-next")
    moved = ReleaseTask.objects.filter(release=demo_release).order_by("task__slug").first()
    assert moved.simulator.simulator == "demo-sim"
    Task.objects.filter(pk=moved.task_id).update(simulator=newer)
    submission = upload(api(owner), seal(sign_with=evaluator_key))
    assert (submission.verdict, submission.error_code) == ("validated", "")
    result = TaskResult.objects.get(run__submission=submission, release_task=moved)
    assert (result.signature, result.signing_key.evaluator.simulator) == ("valid", "demo-sim")


# ------------------------------------------------------------------ ownership


def test_a_run_under_another_accounts_agent_is_refused_even_spelled_differently(
    api, upload, owner, stranger, demo_release, seal
):
    upload(api(owner), seal(agent_name="alice-agent"))
    agents_before = list(AgentVersion.objects.values_list("pk", flat=True))
    submission = upload(api(stranger), seal(agent_name="Alice Agent", agent_version="9", seed=7))
    assert (submission.verdict, submission.error_code) == ("rejected", "agent_not_yours")
    assert Run.objects.filter(submission=submission).count() == 0
    assert list(AgentVersion.objects.values_list("pk", flat=True)) == agents_before


def test_the_owner_files_new_versions_under_their_agent(api, upload, owner, demo_release, seal):
    client = api(owner)
    upload(client, seal(agent_name="alice-agent", agent_version="1"))
    second = upload(client, seal(agent_name="Alice Agent", agent_version="2", seed=3))
    assert second.verdict == "validated"
    assert list(AgentVersion.objects.filter(agent__slug="alice-agent").values_list("version", flat=True)) == ["1", "2"]


# ------------------------------------------------------------------ scoped keys


def test_an_evaluator_key_signing_a_task_outside_its_scope_is_refused(
    api, upload, owner, demo_release, seal, issue_challenge
):
    other = Evaluator.objects.create(simulator="another-sim")
    key = Ed25519PrivateKey.generate()
    signing_key_register(evaluator=other, public_key_b64=public_key_b64(key), user=None)
    submission = upload(api(owner), seal(challenge=issue_challenge(owner), sign_with=key))
    assert (submission.verdict, submission.error_code) == ("rejected", "key_out_of_scope")
    assert "not for task" in submission.error_message
    assert nothing_recorded()


def test_an_evaluator_key_narrowed_to_some_tasks_cannot_sign_the_others(
    api, upload, owner, demo_release, seal, issue_challenge
):
    first = ReleaseTask.objects.filter(release=demo_release).order_by("task__slug").first().task
    key = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"),
        tasks={first: ""},
        public_key_b64=public_key_b64(key),
        user=None,
    )
    submission = upload(api(owner), seal(challenge=issue_challenge(owner), sign_with=key))
    assert (submission.verdict, submission.error_code) == ("rejected", "key_out_of_scope")


def _same_slugs_on_another_benchmark(release_from_spec, *, withhold_one: bool = False):
    """A second benchmark whose tasks have the demo release's slugs (and simulator): task slugs
    are unique per benchmark only, so this is any real benchmark that names a task like a demo one."""
    from submissions.bundle.demo import demo_release_spec

    spec, _ = demo_release_spec()
    withheld = frozenset({min(spec.tasks)}) if withhold_one else frozenset()
    return release_from_spec(spec, benchmark="real-bench", version="1.0", withheld=withheld)


def test_an_evaluator_key_narrowed_to_one_benchmarks_tasks_cannot_sign_another_benchmarks_task_of_the_same_slug(
    api, upload, owner, demo_release, release_from_spec, seal, issue_challenge
):
    """The demo keys' case: narrowed to the demo benchmark's tasks (their private halves are public),
    they must not sign a real benchmark's task that merely shares a slug, least of all a withheld one."""
    from leaderboard.models import Task

    _same_slugs_on_another_benchmark(release_from_spec, withhold_one=True)
    key = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"),
        tasks=dict.fromkeys(Task.objects.filter(benchmark=demo_release.benchmark), ""),
        public_key_b64=public_key_b64(key),
        user=None,
    )
    token = issue_challenge(owner, benchmark="real-bench", release="1.0")
    sealed = seal(challenge=token, sign_with=key, benchmark="real-bench", release_version="1.0")
    submission = upload(api(owner), sealed, benchmark="real-bench")
    assert (submission.verdict, submission.error_code) == ("rejected", "key_out_of_scope")
    assert "tasks of other benchmarks only" in submission.error_message
    assert nothing_recorded()
    # The same key still signs its own benchmark's tasks.
    mine = upload(api(owner), seal(challenge=issue_challenge(owner), sign_with=key, seed=5))
    assert (mine.verdict, mine.error_code) == ("validated", "")


def test_a_judge_key_calibrated_for_one_benchmarks_tasks_cannot_sign_another_benchmarks_task_of_the_same_slug(
    api, upload, owner, demo_release, release_from_spec, seal, issue_challenge, evaluator_key, judge_key
):
    _same_slugs_on_another_benchmark(release_from_spec)
    token = issue_challenge(owner, benchmark="real-bench", release="1.0")
    sealed = seal(
        challenge=token, sign_with=evaluator_key, judge_with=judge_key, benchmark="real-bench", release_version="1.0"
    )
    submission = upload(api(owner), sealed, benchmark="real-bench")
    assert (submission.verdict, submission.error_code) == ("rejected", "judge_key_out_of_scope")
    assert nothing_recorded()


def test_a_judge_key_signing_a_task_it_is_not_calibrated_for_is_refused(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key
):
    one = ReleaseTask.objects.filter(release=demo_release, genre="reproduction").order_by("task__slug").first().task
    key = Ed25519PrivateKey.generate()
    signing_key_register(judge_name="narrow", tasks={one: "rubric/1"}, public_key_b64=public_key_b64(key), user=None)
    submission = upload(api(owner), seal(challenge=issue_challenge(owner), sign_with=evaluator_key, judge_with=key))
    assert (submission.verdict, submission.error_code) == ("rejected", "judge_key_out_of_scope")
    assert nothing_recorded()


def test_a_judge_signature_with_another_rubric_version_is_refused(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, judge_key
):
    sealed = seal(challenge=issue_challenge(owner), sign_with=evaluator_key, judge_with=judge_key, rubric_version="2")
    submission = upload(api(owner), sealed)
    assert (submission.verdict, submission.error_code) == ("rejected", "judge_key_out_of_scope")


def test_a_judge_key_counts_only_for_the_rubric_the_releases_gate_was_calibrated_with(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, judge_key
):
    # Registered for rubric/1 (what an administrator typed); the release's gate recorded rubric/2:
    # seed 003 trusts a verdict only under the rubric that was authored and dry-run for it.
    ReleaseTask.objects.filter(release=demo_release, genre="reproduction").update(
        faithfulness_rubric_version="rubric/2"
    )
    sealed = seal(challenge=issue_challenge(owner), sign_with=evaluator_key, judge_with=judge_key)
    submission = upload(api(owner), sealed)
    assert (submission.verdict, submission.error_code) == ("rejected", "judge_key_out_of_scope")
    # The message says why, naming both rubrics (it said only "not calibrated for task").
    assert "(registered for rubric 'rubric/1'; this release calibrated the task for rubric 'rubric/2')" in (
        submission.error_message
    )
    assert nothing_recorded()


def test_self_declared_faithfulness_caps_the_run_at_validated_and_the_run_page_says_so(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, client
):
    submission = upload(api(owner), seal(challenge=issue_challenge(owner), sign_with=evaluator_key))
    assert submission.verdict == "validated"
    assert submission.error_message.endswith("not attested: self-declared faithfulness")
    run = Run.objects.get(submission=submission)
    assert set(
        TaskResult.objects.filter(run=run, release_task__genre="reproduction").values_list(
            "faithfulness_source", flat=True
        )
    ) == {"self_declared"}
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "self-declared faithfulness" in page


def test_the_run_page_and_api_show_the_judge_and_rubric_of_a_signed_verdict(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, judge_key, client
):
    submission = upload(
        api(owner), seal(challenge=issue_challenge(owner), sign_with=evaluator_key, judge_with=judge_key)
    )
    run = Run.objects.get(submission=submission)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "judge judge/1, rubric rubric/1" in page
    assert "self-declared faithfulness" not in page
    tasks = APIClient().get(f"/api/v1/runs/{run.pk}/").json()["tasks"]
    reproduction = [t for t in tasks if t["genre"] == "reproduction"]
    assert {(t["faithfulness_source"], t["judge"], t["rubric_version"]) for t in reproduction} == {
        ("judge_signed", "judge/1", "rubric/1")
    }


# ------------------------------------------------------------------ withheld anchors (verification side)


def test_an_unsigned_result_for_a_withheld_anchor_task_is_refused(api, upload, owner, release_from_spec, seal):
    from submissions.bundle.demo import DEMO_BENCHMARK, DEMO_RELEASE, demo_release_spec

    spec, _ = demo_release_spec()
    withheld = min(spec.tasks)
    release_from_spec(spec, benchmark=DEMO_BENCHMARK, version=DEMO_RELEASE, withheld=frozenset({withheld}))
    submission = upload(api(owner), seal(tasks=[withheld]))
    assert (submission.verdict, submission.error_code) == ("rejected", "unsigned_withheld_task")
    # The refusal names the task and the rule, never a recomputed value.
    assert withheld in submission.error_message
    assert submission.diff == []
    assert nothing_recorded()


def test_a_withheld_anchor_task_signed_by_its_evaluator_is_scored(
    api, upload, owner, release_from_spec, seal, issue_challenge
):
    from submissions.bundle.demo import DEMO_BENCHMARK, DEMO_RELEASE, demo_release_spec

    spec, _ = demo_release_spec()
    withheld = min(spec.tasks)
    release_from_spec(spec, benchmark=DEMO_BENCHMARK, version=DEMO_RELEASE, withheld=frozenset({withheld}))
    key = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(key), user=None
    )
    submission = upload(api(owner), seal(tasks=[withheld], sign_with=key, challenge=issue_challenge(owner)))
    assert submission.verdict == "validated"
    assert TaskResult.objects.filter(run__submission=submission).count() == 1


# ------------------------------------------------------------------ the two crashes of 11.11


def _sealed_tar(site_identity, entries: list[tuple[str | bytes, bytes]]) -> bytes:
    from submissions.bundle.envelope import seal_file

    buffer = io.BytesIO()
    with tarfile.open(
        fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape"
    ) as tar:
        for name, data in entries:
            text = name.decode("utf-8", "surrogateescape") if isinstance(name, bytes) else name
            info = tarfile.TarInfo(text)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as work:
        plain, sealed = Path(work, "b.tar"), Path(work, "b.age")
        plain.write_bytes(buffer.getvalue())
        seal_file(str(plain), str(sealed), [str(site_identity.to_public())])
        return sealed.read_bytes()


def test_a_tar_member_name_that_is_not_utf8_is_a_specific_rejection_not_an_error(
    api, upload, owner, demo_release, site_identity
):
    sealed = _sealed_tar(site_identity, [(b"results/\xff\xfe.json", b"{}")])
    submission = upload(api(owner), sealed)
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "rejected", "invalid_member_name")
    assert "\\xff" in submission.error_message
    assert nothing_recorded()


def test_a_lone_surrogate_escape_in_a_free_text_field_is_a_specific_rejection_not_an_error(
    api, upload, owner, demo_release, tmp_path, site_identity
):
    from submissions.bundle.demo import write_paper_gap_bundle_dir

    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5)
    entries = [
        (path.relative_to(directory).as_posix(), path.read_bytes())
        for path in sorted(directory.rglob("*.json"))
        if path.name != "manifest.json"
    ]
    manifest = json.loads((directory / "manifest.json").read_text())
    text = json.dumps(manifest).replace('"demo-agent"', '"demo\\ud800agent"')
    assert "\\ud800" in text
    sealed = _sealed_tar(site_identity, [("manifest.json", text.encode()), *entries])
    submission = upload(api(owner), sealed)
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "rejected", "invalid_json")
    assert "agent.name" in submission.error_message
    assert not Agent.objects.exists()


def test_a_nul_escape_in_the_agent_name_is_a_specific_rejection_not_a_retried_fault(
    api, upload, owner, demo_release, tmp_path, site_identity
):
    # On PostgreSQL the name reached the Agent row and the DataError left the submission
    # "error", retried as a temporary fault; on SQLite an agent named "demo\x00agent" was stored.
    from submissions.bundle.demo import write_paper_gap_bundle_dir

    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5)
    entries = [
        (path.relative_to(directory).as_posix(), path.read_bytes())
        for path in sorted(directory.rglob("*.json"))
        if path.name != "manifest.json"
    ]
    text = (directory / "manifest.json").read_text().replace('"demo-agent"', '"demo\\u0000agent"')
    assert "\\u0000" in text
    sealed = _sealed_tar(site_identity, [("manifest.json", text.encode()), *entries])
    submission = upload(api(owner), sealed)
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "rejected", "invalid_json")
    assert submission.error_message == (
        "manifest.json: agent.name holds a \\u0000 escape: the NUL character (U+0000), which no text field "
        "can hold; leave it out"
    )
    assert not Agent.objects.exists()
    assert nothing_recorded()


def test_a_token_count_beyond_64_bits_is_a_schema_error_not_a_retried_fault(
    api, upload, owner, demo_release, tmp_path, site_identity
):
    # The count reached Run's integer column: PostgreSQL's bigint (or SQLite's OverflowError)
    # refused it, and the submission was left "error", retried as a temporary fault.
    from submissions.bundle.demo import write_paper_gap_bundle_dir

    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5)
    entries = [
        (path.relative_to(directory).as_posix(), path.read_bytes())
        for path in sorted(directory.rglob("*.json"))
        if path.name != "manifest.json"
    ]
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["tokens"]["input"] = 2**70
    sealed = _sealed_tar(site_identity, [("manifest.json", json.dumps(manifest).encode()), *entries])
    submission = upload(api(owner), sealed)
    assert (submission.status, submission.verdict, submission.error_code) == ("done", "rejected", "schema_error")
    assert submission.error_message == (
        f"manifest.json: tokens.input must be an integer of at most {2**63 - 1} (64 bits), got {2**70}"
    )
    assert not Agent.objects.exists()
    assert nothing_recorded()


# ------------------------------------------------------------------ the upload page's challenge form


def _challenge_form(release="0.5", agent_name="Alice Agent", agent_version="1"):
    return {"benchmark": "ale-robotics", "release": release, "agent_name": agent_name, "agent_version": agent_version}


def test_the_upload_page_issues_a_challenge_to_a_signed_in_submitter(client, owner, demo_release):
    client.force_login(owner)
    response = client.post("/submit/challenge/", _challenge_form(), follow=True)
    challenge = SubmissionChallenge.objects.get(user=owner)
    # Back on the upload page's own address (reloading it sends nothing), the whole page shown.
    assert response.redirect_chain == [(f"/submit/?challenge={challenge.pk}#challenge-heading", 302)]
    page = response.content.decode()
    assert f'<code class="hash" data-challenge-token>{challenge.token}</code>' in page
    assert "Your open challenges" in page and 'data-limit="ale-robotics"' in page
    # Listed again on the plain upload page, for this account only.
    assert challenge.token in client.get("/submit/").content.decode()


def test_the_upload_page_refuses_another_accounts_agent_and_shows_the_code(client, owner, stranger, demo_release):
    client.force_login(owner)
    client.post("/submit/challenge/", _challenge_form())
    client.force_login(stranger)
    response = client.post("/submit/challenge/", _challenge_form(agent_name="alice-agent", agent_version="2"))
    assert response.status_code == 403
    assert "agent_not_yours" in response.content.decode()
    assert not SubmissionChallenge.objects.filter(user=stranger).exists()
    # The stranger's page lists none of the owner's challenges.
    assert SubmissionChallenge.objects.get(user=owner).token not in client.get("/submit/").content.decode()


def test_the_challenge_form_needs_every_field_and_a_numeric_race(client, owner, demo_release):
    client.force_login(owner)
    missing = client.post("/submit/challenge/", _challenge_form(agent_version=""))
    assert (missing.status_code, "agent_version: this field is required." in missing.content.decode()) == (400, True)
    bad_race = client.post("/submit/challenge/", {**_challenge_form(), "race": "9" * 40})
    assert (bad_race.status_code, "unknown_race" in bad_race.content.decode()) == (400, True)
    assert not SubmissionChallenge.objects.exists()


@pytest.mark.parametrize("race", ["\u00b2", "1\u00b2"])
def test_a_superscript_race_number_in_the_challenge_form_is_unknown_race_not_a_500(client, owner, demo_release, race):
    # str.isdigit() accepts "²" and int() refuses it: the form used to 500 here.
    client.force_login(owner)
    response = client.post("/submit/challenge/", {**_challenge_form(), "race": race})
    assert (response.status_code, "unknown_race" in response.content.decode()) == (400, True)
    assert not SubmissionChallenge.objects.exists()


def test_a_superscript_race_number_in_the_race_entry_form_is_unknown_race_not_a_500(client, owner, demo_release):
    client.force_login(owner)
    fields = {"benchmark": "ale-robotics", "race": "\u00b2", "agent_name": "Alice Agent", "agent_version": "1"}
    response = client.post("/submit/race-entries/", fields)
    assert (response.status_code, "unknown_race" in response.content.decode()) == (400, True)
    assert not RaceEntry.objects.exists()


def test_anonymous_visitors_are_sent_to_sign_in_and_get_no_challenge(client, demo_release):
    response = client.post("/submit/challenge/", _challenge_form())
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert not SubmissionChallenge.objects.exists()


def test_staff_get_challenges_like_anyone_and_own_the_agent_they_name(client, make_user, demo_release):
    staff = make_user("staff-member")
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    client.force_login(staff)
    assert client.post("/submit/challenge/", _challenge_form(agent_name="Staff Bot")).status_code == 302
    assert Agent.objects.get(slug="staff-bot").owner == staff


def test_staff_see_challenges_in_the_admin_and_cannot_add_or_delete_them(
    client, make_user, owner, demo_release, issue_challenge
):
    issue_challenge(owner)
    staff = make_user("admin-member")
    staff.is_staff = staff.is_superuser = True
    staff.save(update_fields=["is_staff", "is_superuser"])
    client.force_login(staff)
    assert client.get("/admin/submissions/submissionchallenge/").status_code == 200
    assert client.get("/admin/submissions/submissionchallenge/add/").status_code == 403
    assert SubmissionChallenge.objects.count() == 1


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_accounts_recording_the_same_results_at_once_are_serialized_and_the_second_is_refused(owner, stranger):
    """The duplicate check runs in the verdict's transaction under a per-digest lock: while the
    first account's verdict is uncommitted, the second account's check waits, then sees it."""
    import threading

    from django.db import connection, transaction

    from submissions.bundle.errors import BundleError
    from submissions.models import Submission
    from submissions.services.challenges import results_duplicate_check

    digest = "d" * 64
    recorded, release = threading.Event(), threading.Event()
    outcome: dict[str, object] = {}

    def first() -> None:
        try:
            with transaction.atomic():
                results_duplicate_check(digest=digest, submission=Submission(submitter=owner), signed_unbound=False)
                Submission.objects.create(
                    submitter=owner, sha256="1" * 64, size=1, file="b/1.age", status="done", results_digest=digest
                )
                recorded.set()
                release.wait(10)
        finally:
            connection.close()

    def second() -> None:
        try:
            with transaction.atomic():
                results_duplicate_check(digest=digest, submission=Submission(submitter=stranger), signed_unbound=False)
            outcome["second"] = "accepted"
        except BundleError as exc:
            outcome["second"] = exc.code
        finally:
            connection.close()

    one = threading.Thread(target=first)
    one.start()
    assert recorded.wait(10)
    two = threading.Thread(target=second)
    two.start()
    two.join(1.0)
    assert two.is_alive(), "the second check did not wait for the first verdict's transaction"
    release.set()
    one.join(10)
    two.join(10)
    assert outcome["second"] == "duplicate_results"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_revocation_and_a_verdict_counting_the_key_are_serialized():
    """A verdict holds each key it counts until it commits: a revocation waits for it (the run is
    then one the key attested before), and a verdict asking while a revocation is uncommitted
    waits for it and sees the key revoked."""
    import threading

    from django.db import connection, transaction

    from leaderboard.models import SigningKey
    from submissions.services.signing_keys import signing_key_revoke, signing_keys_revoked

    evaluator = Evaluator.objects.create(simulator="lock-sim")
    key = signing_key_register(
        evaluator=evaluator, public_key_b64=public_key_b64(Ed25519PrivateKey.generate()), user=None
    )
    held, release = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def verdict() -> None:
        try:
            with transaction.atomic():
                seen["verdict"] = signing_keys_revoked(key_ids=[key.key_id])
                held.set()
                release.wait(10)
        finally:
            connection.close()

    def revocation(hold: bool = False) -> None:
        try:
            with transaction.atomic():
                signing_key_revoke(signing_key=key, user=None)
                held.set()
                if hold:
                    release.wait(10)
        finally:
            connection.close()

    one = threading.Thread(target=verdict)
    one.start()
    assert held.wait(10)
    two = threading.Thread(target=revocation)
    two.start()
    two.join(1.0)
    assert two.is_alive(), "the revocation did not wait for the verdict counting the key"
    release.set()
    one.join(10)
    two.join(10)
    assert seen["verdict"] == set()  # recorded before the revocation, as a run it attested before
    assert SigningKey.objects.get(pk=key.pk).revoked_at is not None

    SigningKey.objects.filter(pk=key.pk).update(revoked_at=None)
    held.clear(), release.clear()
    one = threading.Thread(target=revocation, kwargs={"hold": True})
    one.start()
    assert held.wait(10)
    two = threading.Thread(target=verdict)
    two.start()
    two.join(1.0)
    assert two.is_alive(), "the verdict did not wait for the uncommitted revocation"
    release.set()
    one.join(10)
    two.join(10)
    assert seen["verdict"] == {key.key_id}


def _integral_floats_as_ints(value):
    """The same JSON numbers written another way: 1.0 as 1 (JCS prints both as 1)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral_floats_as_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(item) for item in value]
    return value


def test_signed_results_rewritten_with_the_same_numbers_spelled_otherwise_are_still_duplicate_results(
    api, upload, owner, stranger, demo_release, tmp_path, site_identity, evaluator_key
):
    """Bob copies Alice's signed podium-bundle/1 results and writes 1.0 as 1: JCS prints both as
    ``1``, so every signature still verifies; the results digest must see the same results too."""
    import shutil

    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
    from submissions.bundle.seal import write_members

    recipient = str(site_identity.to_public())
    alice = write_paper_gap_bundle_dir(tmp_path / "a", agent_name="alice", sign_with=evaluator_key)
    first = upload(api(owner), seal_dir(alice, recipient).read_bytes())
    bob = tmp_path / "b"
    shutil.copytree(alice, bob)
    rewritten = 0
    for path in sorted((bob / "results").glob("*.json")):
        text = path.read_text()
        new = json.dumps(_integral_floats_as_ints(json.loads(text)))
        rewritten += new != json.dumps(json.loads(text))
        path.write_text(new)
    manifest = json.loads((bob / "manifest.json").read_text())
    manifest["agent"]["name"] = "bob"
    (bob / "manifest.json").write_text(json.dumps(manifest))
    write_members(bob)
    assert rewritten
    second = upload(api(stranger), seal_dir(bob, recipient).read_bytes())
    assert first.verdict == "validated"
    assert (second.verdict, second.error_code) == ("rejected", "duplicate_results")
    assert Run.objects.filter(submission=second).count() == 0


def test_revoking_a_key_stops_it_attesting_later_uploads_and_marks_the_runs_it_attested_before(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, judge_key, client
):
    """Revocation looks forward: a run attested before keeps its level (a key is revoked on rotation as
    often as on compromise) and its page says the key was since revoked; staff lower it by hand."""
    from leaderboard.models import SigningKey
    from submissions.bundle.signatures import key_id_for
    from submissions.services.signing_keys import signing_key_revoke

    before = upload(api(owner), seal(challenge=issue_challenge(owner), sign_with=evaluator_key, judge_with=judge_key))
    assert before.verdict == "attested"
    signing_key_revoke(signing_key=SigningKey.objects.get(key_id=key_id_for(public_key_b64(evaluator_key))), user=None)
    after = upload(
        api(owner),
        seal(
            challenge=issue_challenge(owner, agent_version="2"),
            agent_version="2",
            seed=1,
            sign_with=evaluator_key,
            judge_with=judge_key,
        ),
    )
    assert after.verdict == "validated"
    assert "not every evaluator result is signed by a registered key" in after.error_message
    run = Run.objects.get(submission=before)
    assert run.level == "attested"
    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200
    assert "key since revoked" in page.content.decode()


def test_each_tasks_signers_and_their_revocation_read_the_same_on_the_page_in_the_api_and_in_the_exports(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, judge_key, client
):
    """Which key signed a task's result and which its faithfulness verdict, and whether each was
    revoked since, is provenance a visitor reads on the run page, in the API and in the exports.
    The page marked only evaluator keys "since revoked" (a revoked judge key read like one in
    force) and named no judge key; the API named no judge key and no revocation; the exports named
    no key at all, and no verdict's source."""
    import csv

    from leaderboard.models import SigningKey
    from submissions.bundle.signatures import key_id_for
    from submissions.services.signing_keys import signing_key_revoke

    submission = upload(
        api(owner), seal(challenge=issue_challenge(owner), sign_with=evaluator_key, judge_with=judge_key)
    )
    run = Run.objects.get(submission=submission)
    evaluator_id = key_id_for(public_key_b64(evaluator_key))
    judge_id = key_id_for(public_key_b64(judge_key))
    signing_key_revoke(signing_key=SigningKey.objects.get(key_id=judge_id), user=None)
    revoked_at = SigningKey.objects.get(key_id=judge_id).revoked_at

    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert f"<code>{judge_id}</code> judge judge/1" in page
    assert page.count("key since revoked") == 1  # the judge's; the evaluator key is in force
    assert f'datetime="{revoked_at.isoformat()}"' in page

    tasks = {t["task"]: t for t in APIClient().get(f"/api/v1/runs/{run.pk}/").json()["tasks"]}
    rows = {
        r["task"]: r
        for r in csv.DictReader(
            b"".join(client.get(f"/runs/{run.pk}/results.csv").streaming_content).decode().splitlines()
        )
    }
    records = {r["task"]: r for r in client.get(f"/runs/{run.pk}/results.json").json()["tasks"]}
    assert tasks.keys() == rows.keys() == records.keys()
    for slug, task in tasks.items():
        judged = task["genre"] == "reproduction"
        expected = {
            "signature": "valid",
            "signing_key": evaluator_id,
            "signing_key_revoked_at": None,
            "faithfulness_source": "judge_signed" if judged else "",
            "judge_key": judge_id if judged else None,
            "judge_key_revoked_at": revoked_at.isoformat().replace("+00:00", "Z") if judged else None,
        }
        assert {name: task[name] for name in expected} == expected, slug
        assert {name: records[slug][name] for name in expected} == expected, slug
        assert {name: rows[slug][name] for name in expected} == {
            name: "" if value is None else value for name, value in expected.items()
        }, slug


def test_the_run_exports_tell_a_self_declared_verdict_from_a_judge_signed_one(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, judge_key, client
):
    """A verdict the runner wrote itself and one a calibrated judge signed read alike in results.csv
    and results.json (``faithful`` alone), where the page and the API tell them apart."""
    import csv

    signed = upload(api(owner), seal(challenge=issue_challenge(owner), sign_with=evaluator_key, judge_with=judge_key))
    declared = upload(
        api(owner),
        seal(challenge=issue_challenge(owner, agent_version="2"), agent_version="2", seed=1, sign_with=evaluator_key),
    )
    assert (signed.verdict, declared.verdict) == ("attested", "validated")
    for submission, source in ((signed, "judge_signed"), (declared, "self_declared")):
        run = Run.objects.get(submission=submission)
        rows = csv.DictReader(
            b"".join(client.get(f"/runs/{run.pk}/results.csv").streaming_content).decode().splitlines()
        )
        records = client.get(f"/runs/{run.pk}/results.json").json()["tasks"]
        for row in [*rows, *records]:
            if row["genre"] == "reproduction":
                assert row["faithfulness_source"] == source


def test_a_key_revoked_while_a_bundle_it_signed_is_being_verified_attests_nothing(
    api, upload, owner, demo_release, seal, issue_challenge, evaluator_key, judge_key, monkeypatch
):
    """The keys are read before the recomputation (seconds for a large bundle) and the run is
    recorded after it: a revocation committed in between let the revoked key attest a run
    recorded after its revocation. The verdict is reached again with the keys as they are then."""
    from leaderboard.models import SigningKey
    from submissions.bundle.signatures import key_id_for
    from submissions.services import runs
    from submissions.services.signing_keys import signing_key_revoke

    key = SigningKey.objects.get(key_id=key_id_for(public_key_b64(evaluator_key)))
    evaluate = runs.paper_gap_evaluate

    def revoked_midway(bundle, context):
        outcome = evaluate(bundle, context)
        signing_key_revoke(signing_key=key, user=None)  # staff revoke it meanwhile (idempotent)
        return outcome

    monkeypatch.setattr(runs, "paper_gap_evaluate", revoked_midway)
    submission = upload(
        api(owner), seal(challenge=issue_challenge(owner), sign_with=evaluator_key, judge_with=judge_key)
    )
    assert (submission.verdict, submission.error_code) == ("validated", "")
    assert "not every evaluator result is signed by a registered key" in submission.error_message
    run = Run.objects.get(submission=submission)
    assert run.level == "validated"
    assert set(TaskResult.objects.filter(run=run).values_list("signature", "signing_key")) == {("unregistered", None)}
    assert list(run.events.values_list("level", flat=True)) == ["validated"]


def test_the_same_signed_results_filed_again_by_their_account_under_another_agent_are_duplicate_results(
    api, upload, owner, demo_release, tmp_path, site_identity, evaluator_key
):
    """A podium-bundle/1 signature binds no agent: Alice's evaluator-signed results for one agent,
    filed again under her second agent, would rank that agent on results nobody measured for it."""
    import shutil

    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
    from submissions.bundle.seal import write_members

    recipient = str(site_identity.to_public())
    first_dir = write_paper_gap_bundle_dir(tmp_path / "a", agent_name="alice", sign_with=evaluator_key)
    first = upload(api(owner), seal_dir(first_dir, recipient).read_bytes())
    second_dir = tmp_path / "b"
    shutil.copytree(first_dir, second_dir)
    manifest = json.loads((second_dir / "manifest.json").read_text())
    manifest["agent"] = {"name": "alice-other", "version": "7"}
    (second_dir / "manifest.json").write_text(json.dumps(manifest))
    write_members(second_dir)
    second = upload(api(owner), seal_dir(second_dir, recipient).read_bytes())
    assert first.verdict == "validated"
    assert (second.verdict, second.error_code) == ("rejected", "duplicate_results")
    assert Run.objects.filter(submission=second).count() == 0


def test_one_signed_result_taken_from_another_accounts_run_is_duplicate_results(
    api, upload, owner, stranger, demo_release, tmp_path, site_identity, evaluator_key
):
    """Bob files one task of Alice's evaluator-signed podium-bundle/1 results on its own (a partial run
    is allowed): the signature still verifies, and the result is Alice's all the same."""
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir

    recipient = str(site_identity.to_public())
    alice = write_paper_gap_bundle_dir(tmp_path / "a", agent_name="alice", sign_with=evaluator_key)
    taken = min(path.stem for path in (alice / "results").glob("*.json"))
    bob = write_paper_gap_bundle_dir(tmp_path / "b", agent_name="bob", sign_with=evaluator_key, tasks=[taken])
    assert (bob / "results" / f"{taken}.json").read_bytes() == (alice / "results" / f"{taken}.json").read_bytes()
    first = upload(api(owner), seal_dir(alice, recipient).read_bytes())
    second = upload(api(stranger), seal_dir(bob, recipient).read_bytes())
    assert first.verdict == "validated"
    assert (second.verdict, second.error_code) == ("rejected", "duplicate_results")
    assert Run.objects.filter(submission=second).count() == 0


def test_a_copy_of_results_whose_digest_was_stored_by_the_earlier_rule_is_still_duplicate_results(
    api, upload, owner, stranger, demo_release, tmp_path, site_identity, evaluator_key
):
    """Reading numbers as JCS does changed the digest of results holding 1.0 or 0.0; a row stored
    before keeps its old digest, and a verbatim copy must still meet it."""
    import shutil

    from submissions.bundle.contract import results_digest
    from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
    from submissions.bundle.seal import write_members

    recipient = str(site_identity.to_public())
    alice = write_paper_gap_bundle_dir(tmp_path / "a", agent_name="alice", sign_with=evaluator_key)
    first = upload(api(owner), seal_dir(alice, recipient).read_bytes())
    documents = [(p.stem, json.loads(p.read_text())) for p in sorted((alice / "results").glob("*.json"))]
    legacy = results_digest(documents, as_signed=False)
    assert legacy != first.results_digest
    Submission.objects.filter(pk=first.pk).update(results_digest=legacy)
    first.signed_result_digests.all().delete()  # a row stored before signed results were kept one by one
    bob = tmp_path / "b"
    shutil.copytree(alice, bob)
    manifest = json.loads((bob / "manifest.json").read_text())
    manifest["agent"]["name"] = "bob"
    (bob / "manifest.json").write_text(json.dumps(manifest))
    write_members(bob)
    second = upload(api(stranger), seal_dir(bob, recipient).read_bytes())
    assert (second.verdict, second.error_code) == ("rejected", "duplicate_results")


def test_the_upload_page_shows_as_new_only_a_challenge_of_this_account(client, owner, stranger, demo_release):
    client.force_login(owner)
    client.post("/submit/challenge/", _challenge_form())
    challenge = SubmissionChallenge.objects.get(user=owner)
    client.force_login(stranger)
    page = client.get(f"/submit/?challenge={challenge.pk}").content.decode()
    assert challenge.token not in page and "data-challenge-token" not in page


@pytest.mark.parametrize(("field", "limit"), [("agent_name", 100), ("agent_version", 100), ("release", 50)])
def test_the_challenge_form_refuses_a_value_too_long_rather_than_cutting_it(client, owner, demo_release, field, limit):
    # Cut to its column's width, a 1,000-character name issued a challenge (and claimed an agent)
    # for its first 100 characters; the API refuses the same value.
    client.force_login(owner)
    response = client.post("/submit/challenge/", {**_challenge_form(), field: "Z" * 1000})
    assert response.status_code == 400
    assert f"{field}: at most {limit} characters, got 1000." in response.content.decode()
    assert not SubmissionChallenge.objects.exists() and not Agent.objects.exists()
