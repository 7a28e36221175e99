"""Race runs across the trust boundary (issue 11.1, 11.3, 11.10 and 11.11's Agent rows):
entries are owned, validator keys are scoped to a benchmark, runs carry the validator
account's challenge, and the runs validators owe are listed until they are filed."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from schemes_race_helpers import (
    QUALIFYING,
    RACE_TASKS,
    challenge_for,
    enter,
    entrant,
    env_error,
    members,
    scoring_outcomes,
)

from leaderboard.models import Agent, AgentVersion, Benchmark, QualifyingEntry, RaceEntry, RaceRun, Validator
from leaderboard.permissions import CHANGE_RACE
from leaderboard.services.race_exclusions import race_runs_exclude
from leaderboard.services.races import race_close, race_schedule
from submissions.bundle.signatures import generate_signing_key
from submissions.demo_loaders import scheme_bundles
from submissions.models import SubmissionChallenge
from submissions.services.agents import agent_slug
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify
from tests.api_clients import api_for
from tests.concurrency import on_postgresql_committing
from tests.staff import staff_grant

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_daily_counters")]


def test_a_race_run_for_a_race_that_is_not_running_writes_no_agent_rows(
    race_benchmark, race_release, submitter, submit, make_validator
):
    validator, key = make_validator("validator-a")
    race_schedule(benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, release=race_release)
    bundle = members(
        validator=validator,
        key=key,
        agent="Never Entered",
        version="1",
        outcomes=scoring_outcomes(0.5),
        race=1,
        entered=False,
        challenge=None,
    )
    submission = submit(submitter, bundle)
    assert (submission.verdict, submission.error_code) == ("rejected", "race_not_running")
    assert not Agent.objects.filter(slug="never-entered").exists()
    assert not AgentVersion.objects.exists()
    assert not RaceRun.objects.exists()


def test_a_race_run_of_a_version_nobody_entered_is_refused_not_entered(running, submitter, submit, make_validator):
    validator, key = make_validator("validator-a")
    enter("Shopper", "1", None)  # owned, but not entered in race 1
    bundle = members(
        validator=validator,
        key=key,
        agent="Shopper",
        version="1",
        outcomes=scoring_outcomes(0.5),
        race=1,
        entered=False,
        challenge=None,
    )
    submission = submit(submitter, bundle)
    assert (submission.verdict, submission.error_code) == ("rejected", "not_entered")
    assert not RaceRun.objects.exists()


def unentered_qualifying_run(validator, key, agent: str) -> dict[str, bytes]:
    """A signed qualifying run of ``agent`` 1 that leaves its registration to the test."""
    return members(
        validator=validator,
        key=key,
        agent=agent,
        version="1",
        outcomes=scoring_outcomes(0.5, QUALIFYING),
        race=None,
        tasks=QUALIFYING,
        entered=False,
        challenge=None,
    )


def test_a_qualifying_run_of_a_version_its_owner_did_not_register_is_not_entered_and_names_nothing(
    race_benchmark, race_release, submitter, submit, make_validator
):
    """An agent known only from elsewhere (here owned through a private claim, as a private
    paper-gap run leaves it) is not published on the qualifying board by a validator's run: its
    owner registers it for qualifying first. The refusal reads the same as for an agent that does
    not exist, so it tells the validator nothing of a private agent."""
    from submissions.services.agents import agent_version_claim

    validator, key = make_validator("validator-a")
    agent_version_claim(name="Secret Shopper", version="1", account=entrant())
    refusals = []
    for agent in ("Secret Shopper", "Nobody At All"):
        bundle = unentered_qualifying_run(validator, key, agent)
        submission = submit(submitter, bundle, name=f"{agent}.age")
        assert (submission.verdict, submission.error_code) == ("rejected", "not_entered")
        refusals.append(submission.error_message.replace(agent_slug(agent), "<agent>"))
    assert refusals[0] == refusals[1]
    assert "is not entered in the qualifying runs of shop-race by the account that owns it" in refusals[0]
    assert not RaceRun.objects.exists()
    assert not QualifyingEntry.objects.exists()


def test_the_owner_registers_a_version_for_qualifying_and_then_a_validators_run_lands(
    race_benchmark, race_release, submitter, submit, make_validator
):
    validator, key = make_validator("validator-a")
    owner = api_for(entrant())
    body = {"benchmark": "shop-race", "race": None, "agent_name": "Shopper", "agent_version": "1"}
    response = owner.post("/api/v1/race-entries/", body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["race"] is None
    assert list(QualifyingEntry.objects.values_list("benchmark__slug", "agent_version__agent__slug")) == [
        ("shop-race", "shopper")
    ]
    bundle = unentered_qualifying_run(validator, key, "Shopper")
    submission = submit(submitter, bundle)
    assert submission.verdict in ("validated", "attested"), submission.error_message
    assert RaceRun.objects.filter(race=None, agent_version__agent__slug="shopper").count() == 1


def test_a_validator_key_of_another_benchmark_cannot_sign_this_benchmarks_runs(
    running, submitter, submit, make_validator
):
    validator, key = make_validator("validator-elsewhere", benchmark_slug="other-race")
    bundle = members(validator=validator, key=key, agent="Shopper", version="1", outcomes=scoring_outcomes(0.5), race=1)
    submission = submit(submitter, bundle)
    assert (submission.verdict, submission.error_code) == ("rejected", "key_out_of_scope")
    assert not RaceRun.objects.exists()
    assert SubmissionChallenge.objects.filter(used_at__isnull=False).count() == 0


def test_a_validator_key_revoked_while_its_race_run_is_being_verified_files_no_run(
    running, submitter, submit, make_validator, monkeypatch
):
    """The validator keys are read before the run is evaluated and the run recorded after: a
    revocation committed in between let the revoked key file a counted race run."""
    from leaderboard.models import SigningKey
    from submissions.services import races
    from submissions.services.signing_keys import signing_key_revoke

    validator, key = make_validator("validator-a")
    evaluate = races.race_run_evaluate

    def revoked_midway(bundle, context):
        outcome = evaluate(bundle, context)
        signing_key_revoke(signing_key=SigningKey.objects.get(validator=validator), user=None)
        return outcome

    monkeypatch.setattr(races, "race_run_evaluate", revoked_midway)
    bundle = members(validator=validator, key=key, agent="Shopper", version="1", outcomes=scoring_outcomes(0.5), race=1)
    submission = submit(submitter, bundle)
    assert (submission.verdict, submission.error_code) == ("rejected", "validator_key_unknown")
    assert not RaceRun.objects.exists()
    assert SubmissionChallenge.objects.filter(used_at__isnull=False).count() == 0


def test_a_race_run_uploaded_by_another_account_than_its_challenges_is_refused(
    running, submit, make_validator, make_user
):
    validator, key = make_validator("validator-a")
    bundle = members(validator=validator, key=key, agent="Shopper", version="1", outcomes=scoring_outcomes(0.5), race=1)
    submission = submit(make_user("thief"), bundle)
    assert (submission.verdict, submission.error_code) == ("rejected", "challenge_not_yours")
    assert not RaceRun.objects.exists()


def test_a_podium_bundle_1_race_run_is_recorded_but_only_validated(running, submitter, submit, make_validator):
    validator, key = make_validator("validator-a")
    bundle = members(
        validator=validator,
        key=key,
        agent="Shopper",
        version="1",
        outcomes=scoring_outcomes(0.5),
        race=1,
        challenge=None,
    )
    submission = submit(submitter, bundle)
    assert (submission.verdict, submission.bundle_format) == ("validated", "podium-bundle/1")
    assert RaceRun.objects.filter(submission=submission).count() == 1


def test_a_podium_bundle_1_race_receipt_filed_twice_by_its_validators_account_counts_once(
    running, submitter, submit, make_validator
):
    """A v1 receipt carries no challenge, so re-sealed it is a new upload with a valid signature: a
    second run of the agent on the one receipt would weight the agent's mean. Signed v1 results are
    accepted once, from their own account too."""
    validator, key = make_validator("validator-a")
    receipt = members(
        validator=validator,
        key=key,
        agent="Shopper",
        version="1",
        outcomes=scoring_outcomes(0.5),
        race=1,
        challenge=None,
    )
    first = submit(submitter, receipt, name="a.age")
    again = submit(submitter, receipt, name="b.age")
    assert [(s.verdict, s.error_code) for s in (first, again)] == [("validated", ""), ("rejected", "duplicate_results")]
    assert RaceRun.objects.count() == 1


def _run_of(validator, key, score: float, *, race: int | None = 1) -> dict[str, bytes]:
    """A signed podium-bundle/2 run of Shopper 1 by ``validator`` on race ``race`` (None: qualifying)."""
    tasks = RACE_TASKS if race is not None else QUALIFYING
    outcomes = scoring_outcomes(score, tasks)
    return members(
        validator=validator, key=key, agent="Shopper", version="1", outcomes=outcomes, race=race, tasks=tasks
    )


def test_a_validators_second_run_of_a_version_in_a_race_is_refused_and_writes_nothing(
    running, submitter, submit, make_validator
):
    """Seed 002: validators evaluate independently and the raw score is the mean of their runs, so
    one validator filing a version five times outweighed another's one run (outside review)."""
    validator, key = make_validator("validator-a")
    first = submit(submitter, _run_of(validator, key, 0.5), name="first")
    again = submit(submitter, _run_of(validator, key, 0.0), name="again")
    assert (first.verdict, again.verdict, again.error_code) == ("attested", "rejected", "race_run_already_filed")
    assert "validator 'validator-a' already filed a counted run of" in again.error_message
    assert list(RaceRun.objects.values_list("submission", flat=True)) == [first.pk]


def test_a_failed_run_is_final_for_its_validator(running, submitter, submit, make_validator):
    """A run with no output "fails and adds nothing" (seed 002) and is not run again: it stands."""
    validator, key = make_validator("validator-a")
    failed = submit(submitter, members(validator=validator, key=key, agent="Shopper", version="1", outcomes=[], race=1))
    assert (failed.verdict, failed.race_run.failed) == ("attested", True)
    again = submit(submitter, _run_of(validator, key, 0.5), name="again")
    assert (again.verdict, again.error_code) == ("rejected", "race_run_already_filed")
    assert "already filed a failed run (no output; it is not run again)" in again.error_message
    assert RaceRun.objects.count() == 1


def test_another_validators_run_of_the_same_version_lands(running, submitter, submit, make_validator):
    validator_a, key_a = make_validator("validator-a")
    validator_b, key_b = make_validator("validator-b")  # the submitter account acts for both
    assert submit(submitter, _run_of(validator_a, key_a, 0.5), name="a").verdict == "attested"
    assert submit(submitter, _run_of(validator_b, key_b, 0.25), name="b").verdict == "attested"
    assert RaceRun.objects.count() == 2


def test_a_validator_runs_a_version_again_after_an_infrastructure_failure_and_then_no_more(
    running, submitter, submit, make_validator
):
    validator, key = make_validator("validator-a")
    broken = members(
        validator=validator, key=key, agent="Shopper", version="1", outcomes=[env_error(t) for t in RACE_TASKS], race=1
    )
    assert submit(submitter, broken, name="broken").verdict == "attested"
    assert submit(submitter, _run_of(validator, key, 0.5), name="rerun").verdict == "attested"
    third = submit(submitter, _run_of(validator, key, 0.9), name="third")
    assert (third.verdict, third.error_code) == ("rejected", "race_run_already_filed")
    assert RaceRun.objects.count() == 2


def test_a_validator_files_a_run_again_after_staff_excluded_its_run(running, submitter, submit, make_validator):
    validator, key = make_validator("validator-a")
    first = submit(submitter, _run_of(validator, key, 0.5), name="first")
    race_runs_exclude(user=None, reason="signed by a compromised key", run_ids=[first.race_run_id])
    assert submit(submitter, _run_of(validator, key, 0.25), name="again").verdict == "attested"
    assert RaceRun.objects.filter(excluded_at__isnull=True).count() == 1


def test_a_validators_second_qualifying_run_of_a_version_is_refused(
    race_benchmark, race_release, submitter, submit, make_validator
):
    validator, key = make_validator("validator-a")
    first = submit(submitter, _run_of(validator, key, 0.5, race=None), name="first")
    again = submit(submitter, _run_of(validator, key, 0.5, race=None), name="again")
    assert (first.verdict, again.verdict, again.error_code) == ("attested", "rejected", "race_run_already_filed")
    assert "qualifying on release" in again.error_message
    assert RaceRun.objects.count() == 1


def test_a_podium_bundle_1_race_run_filed_by_an_account_not_acting_for_its_validator_is_refused(
    running, submit, make_validator
):
    """A v1 run carries no challenge, so the challenge's not_a_validator check never runs: the
    agent's owner, handed the validator's signed receipt, would file it (as often as they like,
    the mean of their runs leaning on it) and spend the validator's daily limit."""
    validator, key = make_validator("validator-a")
    receipt = members(
        validator=validator,
        key=key,
        agent="Shopper",
        version="1",
        outcomes=scoring_outcomes(0.9),
        race=1,
        challenge=None,
    )
    first = submit(entrant(), receipt, name="a.age")
    again = submit(entrant(), receipt, name="b.age")
    assert [(s.verdict, s.error_code) for s in (first, again)] == [("rejected", "validator_not_yours")] * 2
    assert not RaceRun.objects.exists()


def test_a_race_run_filed_by_the_account_of_another_validator_is_refused(running, submit, make_validator, make_user):
    """A challenge needs an account acting for *a* validator; the run counts only from one acting
    for the validator whose key signed it."""
    validator, key = make_validator("validator-a")
    other = make_user("other-filer")
    Validator.objects.create(slug="validator-b", name="B").accounts.add(other)
    enter("Shopper", "1", 1)
    token = challenge_for("Shopper", "1", 1, user=other)
    assert token is not None  # the challenge is issued: other acts for validator-b
    bundle = members(
        validator=validator,
        key=key,
        agent="Shopper",
        version="1",
        outcomes=scoring_outcomes(0.5),
        race=1,
        challenge=token,
    )
    submission = submit(other, bundle)
    assert (submission.verdict, submission.error_code) == ("rejected", "validator_not_yours")
    assert not RaceRun.objects.exists()
    assert not SubmissionChallenge.objects.filter(used_at__isnull=False).exists()


def test_a_validator_does_not_score_an_agent_owned_by_one_of_its_own_accounts(running, submit, make_validator):
    conflicted, conflicted_key = make_validator("validator-a")
    independent, independent_key = make_validator("validator-b")
    enter("Shopper", "1", 1)
    conflicted.accounts.add(entrant())  # the agent's owner acts for validator-a
    run = {"agent": "Shopper", "version": "1", "outcomes": scoring_outcomes(0.9), "race": 1}
    token = challenge_for("Shopper", "1", 1, user=entrant())
    refused = submit(entrant(), members(validator=conflicted, key=conflicted_key, challenge=token, **run))
    assert (refused.verdict, refused.error_code) == ("rejected", "validator_conflict")
    assert "a validator does not score its own agents" in refused.error_message
    assert not RaceRun.objects.exists()
    # Filed by another of validator-a's accounts, it is still validator-a's signature: refused too.
    also_refused = submit(
        User.objects.get(username="submitter"),
        members(validator=conflicted, key=conflicted_key, **run),
        name="again.age",
    )
    assert also_refused.error_code == "validator_conflict"
    accepted = submit(
        User.objects.get(username="submitter"),
        members(validator=independent, key=independent_key, **run),
        name="independent.age",
    )
    assert accepted.verdict == "attested"
    assert list(RaceRun.objects.values_list("validator__slug", flat=True)) == ["validator-b"]


def test_an_owner_enters_a_race_over_the_api_and_another_account_cannot_enter_their_agent(running, make_user):
    owner, other = make_user("alice"), make_user("bob")
    body = {"benchmark": "shop-race", "race": 1, "agent_name": "Alice Shopper", "agent_version": "1"}
    first = api_for(owner).post("/api/v1/race-entries/", body, format="json")
    assert (first.status_code, first.json()["agent"]) == (201, "alice-shopper")
    stolen = api_for(other).post("/api/v1/race-entries/", {**body, "agent_name": "alice-shopper"}, format="json")
    assert (stolen.status_code, stolen.json()["error"]["code"]) == (403, "agent_not_yours")
    assert list(RaceEntry.objects.values_list("entered_by__username", flat=True)) == ["alice"]


@pytest.mark.parametrize("race", [None, 1, 2])
def test_a_race_benchmark_with_only_a_draft_release_takes_entries_like_one_that_does_not_exist(
    race_benchmark, make_user, race
):
    # Its name and races are staff's until a release is published: an outsider's entry must not
    # tell it (or its race numbers) from a slug nobody uses, nor land.
    from leaderboard.models import Race, Release

    draft = Release.objects.create(
        benchmark=race_benchmark, version="q0", required_task_set_hash="0" * 64, manifest_sha256="0" * 64
    )
    Race.objects.create(benchmark=race_benchmark, release=draft, number=1, status=Race.Status.SCHEDULED, task_ids=["t"])
    outsider = api_for(make_user("outsider"))
    body = {"race": race, "agent_name": "Probe", "agent_version": "1"}
    answers = [
        outsider.post("/api/v1/race-entries/", {**body, "benchmark": slug}, format="json")
        for slug in ("shop-race", "no-such-race")
    ]
    assert [(a.status_code, a.json()["error"]["code"]) for a in answers] == [(400, "unknown_benchmark")] * 2
    assert not RaceEntry.objects.exists() and not QualifyingEntry.objects.exists()
    staff = make_user("staffer")
    staff.is_staff = True
    staff.save()
    if race != 2:  # staff see the draft: their entry lands
        assert (
            api_for(staff).post("/api/v1/race-entries/", {**body, "benchmark": "shop-race"}, format="json").status_code
            == 201
        )


def test_only_validator_accounts_get_race_run_challenges(running, make_user, make_validator):
    make_validator("validator-a")  # the "submitter" account acts for it
    enter("Shopper", "1", 1)
    body = {"benchmark": "shop-race", "release": "q1", "race": 1, "agent_name": "Shopper", "agent_version": "1"}
    refused = api_for(make_user("nobody")).post("/api/v1/challenges/", body, format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "not_a_validator")
    from django.contrib.auth import get_user_model

    validator_account = get_user_model().objects.get(username="submitter")
    issued = api_for(validator_account).post("/api/v1/challenges/", body, format="json")
    assert (issued.status_code, issued.json()["race"]) == (201, 1)
    not_entered = api_for(validator_account).post("/api/v1/challenges/", {**body, "agent_version": "2"}, format="json")
    assert (not_entered.status_code, not_entered.json()["error"]["code"]) == (400, "not_entered")


def test_runs_owed_after_an_infrastructure_failure_are_listed_to_validators_until_filed(
    running, submitter, submit, make_validator, make_user, client
):
    validator, key = make_validator("validator-a")
    broken = members(
        validator=validator, key=key, agent="Shopper", version="1", outcomes=[env_error(t) for t in RACE_TASKS], race=1
    )
    assert submit(submitter, broken, name="broken").verdict == "attested"
    listed = api_for(submitter).get("/api/v1/owed-runs/").json()
    assert [(r["race"], r["validator"], r["agent"], r["agent_version"]) for r in listed["results"]] == [
        (1, "validator-a", "shopper", "1")
    ]
    stranger = api_for(make_user("stranger")).get("/api/v1/owed-runs/")
    assert (stranger.status_code, stranger.json()["error"]["code"]) == (403, "not_a_validator")
    client.force_login(submitter)
    page = client.get(reverse("owed_runs")).content.decode()
    assert "validator-a" in page and "shopper 1" in page
    race_close(race=running)
    rerun = members(validator=validator, key=key, agent="Shopper", version="1", outcomes=scoring_outcomes(0.6), race=1)
    assert submit(submitter, rerun, name="rerun").verdict == "attested"
    assert api_for(submitter).get("/api/v1/owed-runs/").json()["count"] == 0
    assert "No runs are owed" in client.get(reverse("owed_runs")).content.decode()


def test_the_owed_runs_page_is_not_found_for_an_account_that_is_no_validator(client, make_user, race_benchmark):
    client.force_login(make_user("nobody"))
    assert client.get(reverse("owed_runs")).status_code == 404
    assert Benchmark.objects.filter(slug="shop-race").exists()
    assert entrant().username == "entrant"


def test_the_race_entry_page_enters_the_owners_version_and_refuses_another_accounts_agent(running, client, make_user):
    body = {"benchmark": "shop-race", "race": "1", "agent_name": "Page Shopper", "agent_version": "1"}
    client.force_login(make_user("owner-page"))
    entered = client.post(reverse("race_entries"), body)
    assert entered.status_code == 201
    assert "Page Shopper 1 in shop-race race 1" in entered.content.decode()
    client.force_login(make_user("other-page"))
    refused = client.post(reverse("race_entries"), {**body, "agent_version": "2"})
    assert (refused.status_code, "agent_not_yours" in refused.content.decode()) == (403, True)
    assert list(RaceEntry.objects.values_list("entered_by__username", flat=True)) == ["owner-page"]
    client.logout()
    assert client.get(reverse("race_entries")).status_code == 302


def test_the_race_entry_page_with_no_race_registers_the_version_for_qualifying(race_release, client, make_user):
    body = {"benchmark": "shop-race", "race": "", "agent_name": "Page Qualifier", "agent_version": "1"}
    client.force_login(make_user("owner-page"))
    entered = client.post(reverse("race_entries"), body)
    assert entered.status_code == 201
    assert "Page Qualifier 1 in the qualifying runs of" in entered.content.decode()
    assert list(QualifyingEntry.objects.values_list("agent_version__agent__slug", "entered_by__username")) == [
        ("page-qualifier", "owner-page")
    ]
    assert not RaceEntry.objects.exists()


@pytest.mark.parametrize("race", [1, None], ids=["race-run", "qualifying-run"])
def test_a_race_run_uploaded_as_private_is_refused_and_writes_nothing(
    running, submitter, site_identity, make_validator, race
):
    """Races rank every entry by name in public: a private upload would be ranked anyway."""
    validator, key = make_validator("validator-a")
    bundle = members(
        validator=validator, key=key, agent="Shopper", version="1", outcomes=scoring_outcomes(0.5), race=race
    )
    sealed = scheme_bundles.seal_members(bundle, str(site_identity.to_public()))
    submission, _ = submission_create(
        user=submitter, uploaded_file=io.BytesIO(sealed), original_name="private.age", is_private=True
    )
    submission_verify(submission_id=submission.pk)
    submission.refresh_from_db()
    assert (submission.verdict, submission.error_code) == ("rejected", "race_run_private")
    assert not RaceRun.objects.exists()
    assert SubmissionChallenge.objects.filter(used_at__isnull=False).count() == 0


def test_staff_file_race_runs_for_any_validator_only_with_the_race_permission(running, make_user):
    """Filing a race run is a write: staff status alone (which reads) gets no race-run challenge,
    staff with leaderboard.change_race act for every validator."""
    enter("Shopper", "1", 1)
    body = {"benchmark": "shop-race", "release": "q1", "race": 1, "agent_name": "Shopper", "agent_version": "1"}
    helper = make_user("helper")
    helper.is_staff = True
    helper.save()
    refused = api_for(helper).post("/api/v1/challenges/", body, format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "not_a_validator")
    assert not SubmissionChallenge.objects.exists()
    maintainer = staff_grant(helper, CHANGE_RACE)
    issued = api_for(maintainer).post("/api/v1/challenges/", body, format="json")
    assert (issued.status_code, issued.json()["race"]) == (201, 1)
    assert SubmissionChallenge.objects.filter(user=maintainer).count() == 1


def test_a_validators_challenge_reads_the_same_for_a_private_agent_and_one_that_does_not_exist(
    running, make_user, make_validator
):
    """The challenge endpoint answered 201 (with the agent's display name) for a qualifying
    challenge of a version known only privately, and unknown_race only once the agent existed."""
    from django.contrib.auth import get_user_model

    from submissions.services.agents import agent_version_claim

    make_validator("validator-a")  # the "submitter" account acts for it
    validator_account = get_user_model().objects.get(username="submitter")
    agent_version_claim(name="Secret Shopper", version="1", account=entrant())
    body = {"benchmark": "shop-race", "release": "q1", "agent_version": "1"}
    for race in (None, 1, 99):
        answers = []
        for agent in ("Secret Shopper", "Nobody At All"):
            response = api_for(validator_account).post(
                "/api/v1/challenges/", {**body, "race": race, "agent_name": agent}, format="json"
            )
            error = response.json()["error"]
            answers.append((response.status_code, error["code"], error["message"].replace(agent_slug(agent), "<a>")))
        assert answers[0] == answers[1]
        assert answers[0][:2] == ((400, "unknown_race") if race == 99 else (400, "not_entered"))
    assert not SubmissionChallenge.objects.exists()


def test_a_race_run_naming_the_wrong_release_does_not_tell_the_version_of_a_draft_the_race_is_pinned_to(
    race_benchmark, race_release, submit, make_validator, make_user
):
    # Staff pinned race 2 to the next qualifying release while it is still a draft. A fresh
    # account's race run naming the published release reaches the race check (load comes
    # before the challenge) and was told "belongs to release 'q2-draft'": the version of an
    # unpublished release, which is staff's (an unpublished release and a nonexistent one get
    # the same answer). The refusal names only a published release, as unknown_release does.
    from leaderboard.models import Release
    from leaderboard.services.races import race_start

    draft = Release.objects.create(
        benchmark=race_benchmark, version="q2-draft", required_task_set_hash="0" * 64, manifest_sha256="0" * 64
    )
    race_start(race=race_schedule(benchmark=race_benchmark, number=2, task_ids=RACE_TASKS, release=draft))
    validator, _ = make_validator("validator-a")
    probe = submit(
        make_user("outsider"),
        members(
            validator=validator,
            key=generate_signing_key(),  # an outsider holds no registered key
            agent="Probe",
            version="1",
            outcomes=scoring_outcomes(0.5),
            race=2,
            entered=False,
            challenge=None,
        ),
    )
    assert (probe.verdict, probe.error_code) == ("rejected", "race_release_mismatch")
    assert "q2-draft" not in probe.error_message
    assert probe.error_message == (
        "race run: shop-race race 2 takes no runs of release 'q1' (a race takes runs of the one release it is "
        "pinned to)"
    )
    assert not RaceRun.objects.exists()


@pytest.mark.services
@on_postgresql_committing
@pytest.mark.django_db(transaction=True)
def test_two_runs_of_one_version_by_one_validator_recorded_at_once_are_serialized_and_the_second_is_refused(
    running, make_validator
):
    """The one-run check holds a lock per validator, version and race until the verdict commits:
    while the first run is uncommitted the second check waits, then sees it (PostgreSQL)."""
    from types import SimpleNamespace

    from submissions.bundle.errors import BundleError
    from submissions.services.races import _refuse_second_run
    from tests.concurrency import second_waits_for_first

    validator, _ = make_validator("validator-a")
    enter("Shopper", "1", 1)
    version = AgentVersion.objects.get(agent__slug="shopper", version="1")
    context = SimpleNamespace(race=running, release=running.release, agent_version=version)

    def first() -> None:
        _refuse_second_run(validator=validator, context=context)
        RaceRun.objects.create(validator=validator, agent_version=version, release=running.release, race=running)

    refused = second_waits_for_first(first, lambda: _refuse_second_run(validator=validator, context=context))
    assert isinstance(refused, BundleError) and refused.code == "race_run_already_filed"
    assert RaceRun.objects.count() == 1
