"""Recording a validator's race run (seed 002, layers 1 and 2).

A race_run bundle carries one validator's run of one agent version, on the
qualifying release's public frozen task set (no race) or on a race's hidden
task set, signed by the validator's registered Ed25519 key. The server
re-derives each task's paid reward and failure category from the receipt
(scoring.race), scores the run over the whole expected task set, and marks a
run with more than 30% environment/verifier errors as an infrastructure
failure: excluded from the race score and flagged for a re-run. Failure
categories are stored for every episode but shown only where
leaderboard.selectors.schemes allows it (the embargo).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.db import transaction

from leaderboard.models import Benchmark, Race, Release
from leaderboard.services.scheme_standings import race_standings_update
from scoring import compare as compare_scoring
from scoring import race as race_scoring
from scoring.errors import ScoringError
from submissions.bundle.errors import BundleError
from submissions.bundle.signatures import VALID, check_signature
from submissions.models import RaceRun, RaceTaskOutcome, SigningKey, Submission
from submissions.quotas import QuotaExceeded, quota_refund, quota_scope, utc_day, validator_quota_consume
from submissions.services.scorecards import (
    COMPARE_TOLERANCE,
    SchemeRejection,
    agent_version_for,
    scheme_release,
)


@dataclass(frozen=True)
class OutcomeClaim:
    """One task's runtime receipt plus what the validator says it paid."""

    outcome: race_scoring.TaskOutcome
    claimed_paid_reward: float | None = None
    claimed_failure_category: str | None = None


@dataclass(frozen=True)
class RaceRunClaim:
    """What a race_run bundle says, independent of how the archive spells it.

    No outcome at all means the sandbox produced no output (a failed run).
    ``signed`` is the race_run.json document with its ``signature`` field, as
    submissions.bundle.signatures.check_signature expects it.
    """

    benchmark: str
    release: str
    race: int | None
    validator: str
    agent_name: str
    agent_version: str
    outcomes: Sequence[OutcomeClaim]
    signed: Mapping[str, Any]
    claimed_status: str | None = None
    claimed_score: float | None = None


def race_run_claim_from_bundle(bundle: Any) -> RaceRunClaim:
    """Read the race_run members of an opened bundle (submissions.bundle.Bundle)."""
    run = bundle.race_run
    return RaceRunClaim(
        benchmark=bundle.manifest.benchmark,
        release=bundle.manifest.release,
        race=run.race,
        validator=run.validator,
        agent_name=run.agent.name,
        agent_version=run.agent.version,
        outcomes=[
            OutcomeClaim(
                outcome=item.to_scoring(),
                claimed_paid_reward=item.claimed_paid_reward,
                # "" stands for a claimed null (full reward, no category) so it is still compared.
                claimed_failure_category=item.claimed_failure or "",
            )
            for item in run.outcomes
        ],
        signed=run.raw,
        claimed_status=run.claimed_status,
        claimed_score=run.claimed_run_score,
    )


def expected_task_ids(*, release: Release, race: Race | None) -> list[str]:
    """The race's pinned hidden set, or the qualifying release's public frozen set
    (Release.qualifying_task_ids as synced from the manifest, else the release's task slugs)."""
    if race is not None:
        return list(race.task_ids)
    if release.qualifying_task_ids:
        return [str(task_id) for task_id in release.qualifying_task_ids]
    return list(release.release_tasks.order_by("position", "task__slug").values_list("task__slug", flat=True))


def _validator_key(claim: RaceRunClaim) -> SigningKey:
    """The registered, unrevoked validator key that signed the run, or a rejection."""
    keys = {
        key.key_id: key
        for key in SigningKey.objects.select_related("validator").filter(
            owner_kind=SigningKey.Owner.VALIDATOR, revoked_at__isnull=True
        )
    }
    try:
        check = check_signature(
            claim.signed, {key_id: key.public_key for key_id, key in keys.items()}, where="race_run.json"
        )
    except BundleError as exc:
        raise SchemeRejection(exc.code, exc.message) from exc
    if check.status != VALID:
        raise SchemeRejection(
            "validator_key_unknown",
            f"race_run.json signature: key {check.key_id!r} is not a registered, unrevoked validator key on "
            "this server; a race run counts only when signed by a registered validator",
        )
    key = keys[check.key_id]
    if key.validator.slug != claim.validator:
        raise SchemeRejection(
            "validator_mismatch",
            f"race_run.json: validator {claim.validator!r} but the run is signed by the key of validator "
            f"{key.validator.slug!r}",
        )
    return key


def _race_for(claim: RaceRunClaim, release: Release, agent_version_id: int | None) -> Race | None:
    if claim.race is None:
        return None
    race = Race.objects.select_related("release").filter(benchmark=release.benchmark, number=claim.race).first()
    if race is None:
        raise SchemeRejection(
            "unknown_race", f"race run: benchmark {release.benchmark.slug!r} has no race number {claim.race}"
        )
    if race.release_id is not None and race.release_id != release.pk:
        raise SchemeRejection(
            "race_release_mismatch",
            f"race run: {race} belongs to release {race.release.version!r}, not {release.version!r}",
        )
    if race.status == Race.Status.RUNNING:
        return race
    rerun_owed = (
        race.status == Race.Status.EMBARGOED
        and agent_version_id is not None
        and RaceRun.objects.filter(race=race, agent_version_id=agent_version_id, needs_rerun=True).exists()
    )
    if rerun_owed:
        return race  # the re-run of an infrastructure failure may land during the embargo
    raise SchemeRejection(
        "race_not_running",
        f"race run: {race} is {race.status}; results are accepted only while a race is running",
    )


def _check_outcomes(claim: RaceRunClaim, expected: list[str]) -> race_scoring.RunScore:
    if not expected:
        raise SchemeRejection("release_not_ready", "race run: the expected task set is not configured on this server")
    outcomes = [item.outcome for item in claim.outcomes]
    return race_scoring.run_score(outcomes, expected, run_id=f"{claim.agent_name} {claim.agent_version}")


def _recomputed(claim: RaceRunClaim, score: race_scoring.RunScore) -> tuple[dict[str, Any], dict[str, Any]]:
    """(claimed, recomputed) in the same shape, for the fields the bundle claims."""
    claimed: dict[str, Any] = {"tasks": {}}
    recomputed: dict[str, Any] = {"tasks": {}}
    for item in claim.outcomes or ():
        category = race_scoring.failure_category(item.outcome)
        mine: dict[str, Any] = {}
        theirs: dict[str, Any] = {}
        if item.claimed_paid_reward is not None:
            theirs["paid_reward"] = item.claimed_paid_reward
            mine["paid_reward"] = race_scoring.paid_reward(item.outcome)
        if item.claimed_failure_category is not None:
            theirs["failure_category"] = item.claimed_failure_category or None
            mine["failure_category"] = category.code if category else None
        if theirs:
            claimed["tasks"][item.outcome.task_id] = theirs
            recomputed["tasks"][item.outcome.task_id] = mine
    if claim.claimed_status is not None:
        claimed["status"] = claim.claimed_status
        recomputed["status"] = score.status
    if claim.claimed_score is not None or score.score is not None:
        claimed["run_score"] = claim.claimed_score
        recomputed["run_score"] = score.score
    return claimed, recomputed


def _finish(submission: Submission, *, verdict: str, code: str = "", message: str = "", diff: Any = None) -> None:
    submission.verdict = verdict
    submission.error_code = code
    submission.error_message = message
    submission.diff = diff if diff is not None else []
    submission.save(
        update_fields=["verdict", "error_code", "error_message", "diff", "release", "race", "kind", "updated_at"]
    )


def _store(
    *,
    submission: Submission,
    claim: RaceRunClaim,
    key: SigningKey,
    release: Release,
    race: Race | None,
    agent_version: Any,
    score: race_scoring.RunScore,
) -> RaceRun:
    run, created = RaceRun.objects.get_or_create(
        submission=submission,
        defaults={
            "validator": key.validator,
            "agent_version": agent_version,
            "release": release,
            "race": race,
            "score": score.score,
            "infrastructure_failure": score.status == race_scoring.RUN_INFRASTRUCTURE_FAILURE,
            "needs_rerun": score.status == race_scoring.RUN_INFRASTRUCTURE_FAILURE,
            "failed": score.status == race_scoring.RUN_FAILED,
            "expected_tasks": score.expected,
            "infrastructure_errors": score.infrastructure_errors,
            "signing_key": key,
        },
    )
    if not created:
        return run
    outcomes = []
    for item in claim.outcomes or ():
        outcome = item.outcome
        category = race_scoring.failure_category(outcome)
        outcomes.append(
            RaceTaskOutcome(
                run=run,
                task_id=outcome.task_id,
                reward=outcome.reward if outcome.reward is not None else 0.0,
                paid_reward=race_scoring.paid_reward(outcome),
                verdict_status=outcome.verdict_status or "",
                order_placed=outcome.order_placed,
                agent_error=outcome.agent_error,
                failure_category=category.code if category else "",
                step_limit_hit=outcome.step_limit_hit,
                time_limit_hit=outcome.time_limit_hit,
                env_error=outcome.env_error,
                verifier_error=outcome.verifier_error,
            )
        )
    RaceTaskOutcome.objects.bulk_create(outcomes)
    if score.status != race_scoring.RUN_INFRASTRUCTURE_FAILURE:
        # A counted run settles the re-runs this validator owed this version on this race.
        RaceRun.objects.filter(
            release=release, race=race, agent_version=agent_version, validator=key.validator, needs_rerun=True
        ).exclude(pk=run.pk).update(needs_rerun=False)
    return run


def _charge_validator(*, submission: Submission, key: SigningKey, benchmark: Benchmark) -> None:
    """Count the run against its validator key's own daily limit and give the uploading
    account back the unit its upload cost: a validator's runs are limited per validator
    key (set by staff), not by the account's small per-benchmark limit. Runs in the
    caller's transaction, so the counts commit or roll back with the verdict."""
    validator_quota_consume(signing_key=key)
    charged = submission.declared_benchmark or benchmark
    quota_refund(
        user=submission.submitter, api_key=None, scope=quota_scope(charged), day=utc_day(submission.created_at)
    )


@transaction.atomic
def race_run_submission_verify(*, submission: Submission, bundle: Any) -> None:
    """Verify and record one validator run (idempotent: get_or_create on the submission).

    Verdicts: rejected (unknown release or race, race not running, unsigned or
    badly signed, outcomes outside the expected set, inconsistent receipts),
    mismatch (a claimed paid reward, category or score differs from the
    recomputation), attested (signed by a registered validator key and
    consistent). An infrastructure-failed or failed run is attested too: it
    is recorded, excluded from the race score, and (infrastructure) marked
    needs_rerun; error_message says so.
    """
    submission.kind = Submission.Kind.RACE_RUN
    existing = RaceRun.objects.filter(submission=submission).select_related("release", "race").first()
    if existing is not None:
        submission.release = existing.release
        submission.race = existing.race
        _finish(submission, verdict=Submission.Verdict.ATTESTED, message=submission.error_message)
        return
    try:
        claim = race_run_claim_from_bundle(bundle)
        release = scheme_release(benchmark_slug=claim.benchmark, version=claim.release, scheme=Benchmark.Scheme.RACE)
        submission.release = release
        key = _validator_key(claim)
        agent_version = agent_version_for(name=claim.agent_name, version=claim.agent_version, owner=None)
        race = _race_for(claim, release, agent_version.pk)
        submission.race = race
        score = _check_outcomes(claim, expected_task_ids(release=release, race=race))
        claimed, recomputed = _recomputed(claim, score)
    except SchemeRejection as exc:
        _finish(submission, verdict=Submission.Verdict.REJECTED, code=exc.code, message=exc.message)
        return
    except ScoringError as exc:
        _finish(submission, verdict=Submission.Verdict.REJECTED, code="race_run_invalid", message=str(exc))
        return
    diffs = compare_scoring.compare_claims(claimed, recomputed, tol=COMPARE_TOLERANCE)
    diff_rows = [asdict(diff) for diff in diffs]
    if race is not None:
        # The embargo: a race episode's category must not come back out through the stored
        # diff (shown on "my submissions" and by the API) before the race is released.
        diff_rows = [row for row in diff_rows if not row["path"].endswith(".failure_category")]
    if compare_scoring.has_mismatch(diffs):
        wrong = ", ".join(diff.path for diff in diffs if diff.status != compare_scoring.MATCH)
        _finish(
            submission,
            verdict=Submission.Verdict.MISMATCH,
            code="race_run_mismatch",
            message=f"the claimed values differ from the server's recomputation in: {wrong}",
            diff=diff_rows,
        )
        return
    try:
        _charge_validator(submission=submission, key=key, benchmark=release.benchmark)
    except QuotaExceeded as exc:
        code = "validator_daily_limit_reached"
        _finish(submission, verdict=Submission.Verdict.REJECTED, code=code, message=exc.message)
        return
    _store(
        submission=submission,
        claim=claim,
        key=key,
        release=release,
        race=race,
        agent_version=agent_version,
        score=score,
    )
    message = ""
    if score.status == race_scoring.RUN_INFRASTRUCTURE_FAILURE:
        message = (
            f"infrastructure failure: {score.infrastructure_errors} of {score.expected} tasks ended in an "
            "environment or verifier error (more than 30%); this run does not count and is marked for a re-run"
        )
    elif score.status == race_scoring.RUN_FAILED:
        message = "the run produced no output at all; it failed and adds nothing to the score"
    _finish(submission, verdict=Submission.Verdict.ATTESTED, message=message, diff=diff_rows)
    race_standings_update(race=race)
