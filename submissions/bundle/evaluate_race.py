"""The verdict on a race_run bundle (seed 002, layers 1 and 2): pure, no database.

The server re-derives each task's paid reward and failure category from the
runtime receipt (:mod:`scoring.race`), scores the run over the expected task
set, and compares the validator's claims. The run must be signed by a
registered validator key scoped to the run's benchmark, for the validator the
run names; in podium-bundle/2 the signed document carries the challenge.

Verdicts: ``rejected`` (code and message), ``mismatch`` (diff), ``attested``
(podium-bundle/2, signed by a registered validator and consistent) or
``validated`` (a podium-bundle/1 run: consistent and signed, but not bound to a
challenge). An infrastructure-failed or failed run is accepted too: it is
recorded, excluded from the race score and (infrastructure) owed again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from scoring import compare as compare_scoring
from scoring import race as race_scoring
from scoring.errors import ScoringError
from submissions.bundle.bundle import Bundle
from submissions.bundle.contract import ValidatorKey, check_challenge, results_digests
from submissions.bundle.errors import BundleError
from submissions.bundle.evaluate import ATTESTED, MISMATCH, REJECTED, VALIDATED
from submissions.bundle.schema import RACE_RUN
from submissions.bundle.signatures import VALID, check_signature

COMPARE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class RaceSpec:
    """The server's view of what the run is for: the benchmark, the race (None: qualifying),
    the expected task set and the registered validator keys."""

    benchmark: str
    race: int | None
    expected_task_ids: Sequence[str]
    validator_keys: Mapping[str, ValidatorKey]
    # The validators (slugs) the uploading account acts for; None: any (staff, the offline tool).
    filed_for: frozenset[str] | None = None


@dataclass(frozen=True)
class RaceOutcome:
    verdict: str
    error_code: str = ""
    message: str = ""
    agent_name: str = ""
    agent_version: str = ""
    validator: str = ""
    key_id: str | None = None
    score: race_scoring.RunScore | None = None
    outcomes: tuple[race_scoring.TaskOutcome, ...] = ()
    diff: list[dict[str, Any]] = field(default_factory=list)
    results_digest: str = ""
    legacy_results_digest: str = ""
    # A race bundle is one signed receipt, whose digest is results_digest itself: no per-file digests
    # (the field keeps the verdict's contract one shape for both schemes).
    signed_digests: tuple[str, ...] = ()
    challenge: str | None = None

    @property
    def accepted(self) -> bool:
        return self.verdict in (VALIDATED, ATTESTED)

    @property
    def signed_unbound(self) -> bool:
        """Signed by a validator key, and no challenge binds the signature to this run (podium-bundle/1)."""
        return self.challenge is None and self.key_id is not None

    @property
    def signer_key_ids(self) -> frozenset[str]:
        """The registered validator key this outcome counted (its revocation refuses the run)."""
        return frozenset({self.key_id} if self.key_id else ())


def _claimed_and_recomputed(run: Any, score: race_scoring.RunScore) -> tuple[dict[str, Any], dict[str, Any]]:
    """(claimed, recomputed) in the same shape, for the fields the bundle claims."""
    claimed: dict[str, Any] = {"tasks": {}}
    recomputed: dict[str, Any] = {"tasks": {}}
    for item in run.outcomes:
        outcome = item.to_scoring()
        category = race_scoring.failure_category(outcome)
        claimed["tasks"][item.task_id] = {
            "paid_reward": item.claimed_paid_reward,
            "failure_category": item.claimed_failure or None,
        }
        recomputed["tasks"][item.task_id] = {
            "paid_reward": race_scoring.paid_reward(outcome),
            "failure_category": category.code if category else None,
        }
    claimed["status"] = run.claimed_status
    recomputed["status"] = score.status
    if run.claimed_run_score is not None or score.score is not None:
        claimed["run_score"] = run.claimed_run_score
        recomputed["run_score"] = score.score
    return claimed, recomputed


def _validator_key(bundle: Bundle, spec: RaceSpec) -> tuple[str, ValidatorKey]:
    run = bundle.race_run
    assert run is not None
    check_challenge(run.challenge, bundle.manifest.challenge, where="race_run.json")
    public = {key_id: key.public_key for key_id, key in spec.validator_keys.items()}
    check = check_signature(run.raw, public, where="race_run.json")
    if check.status != VALID:
        raise BundleError(
            "validator_key_unknown",
            f"race_run.json signature: key {check.key_id!r} is not a registered, unrevoked validator key on "
            "this server; a race run counts only when signed by a registered validator",
        )
    key = spec.validator_keys[str(check.key_id)]
    if key.validator != run.validator:
        raise BundleError(
            "validator_mismatch",
            f"race_run.json: validator {run.validator!r} but the run is signed by the key of validator "
            f"{key.validator!r}",
        )
    if key.benchmark != spec.benchmark:
        scope = repr(key.benchmark) if key.benchmark else "no benchmark"
        raise BundleError(
            "key_out_of_scope",
            f"race_run.json: validator key {check.key_id} signs race runs of {scope}, not of {spec.benchmark!r}",
        )
    # Checked here, not only when the challenge is issued: a podium-bundle/1 run has no challenge,
    # and a challenge proves only that its account acts for *some* validator. Without it a receipt
    # handed to the agent's owner, or another validator's account, would be filed (and re-filed)
    # by them, spending the signing validator's daily limit and weighting the agent's mean.
    if spec.filed_for is not None and key.validator not in spec.filed_for:
        raise BundleError(
            "validator_not_yours",
            f"race_run.json: the run is signed by validator {key.validator!r}'s key, and the uploading account "
            "does not act for that validator; a race run is filed by an account of the validator that ran it",
        )
    return str(check.key_id), key


def evaluate_race_run(bundle: Bundle, spec: RaceSpec) -> RaceOutcome:
    """Recompute and judge a race_run bundle; never raises for bad bundle content."""
    run = bundle.race_run
    if bundle.kind != RACE_RUN or run is None:
        return RaceOutcome(REJECTED, "wrong_kind", f"manifest.json: kind is {bundle.kind!r}, expected 'race_run'")
    outcome = partial(
        RaceOutcome,
        agent_name=run.agent.name,
        agent_version=run.agent.version,
        validator=run.validator,
        challenge=bundle.manifest.challenge,
    )
    try:
        key_id, _ = _validator_key(bundle, spec)
        if not spec.expected_task_ids:
            raise BundleError("release_not_ready", "race run: the expected task set is not configured on this server")
        outcomes = tuple(item.to_scoring() for item in run.outcomes)
        try:
            score = race_scoring.run_score(
                outcomes, list(spec.expected_task_ids), run_id=f"{run.agent.name} {run.agent.version}"
            )
        except ScoringError as exc:
            raise BundleError("race_run_invalid", str(exc)) from None
    except BundleError as exc:
        return outcome(REJECTED, exc.code, exc.message)
    claimed, recomputed = _claimed_and_recomputed(run, score)
    diffs = compare_scoring.compare_claims(claimed, recomputed, tol=COMPARE_TOLERANCE)
    rows = [asdict(diff) for diff in diffs]
    if spec.race is not None:
        # The embargo: a race episode's category must not come back out through the stored
        # diff (shown on "my submissions" and by the API) before the race is released.
        rows = [row for row in rows if not row["path"].endswith(".failure_category")]
    digest, legacy_digest = results_digests([("race_run.json", run.raw)])
    outcome = partial(
        outcome,
        key_id=key_id,
        score=score,
        outcomes=outcomes,
        # The validator, race and agent stay in: two validators' identical receipts are two runs.
        results_digest=digest,
        legacy_results_digest=legacy_digest,
    )
    if compare_scoring.has_mismatch(diffs):
        wrong = ", ".join(diff.path for diff in diffs if diff.status != compare_scoring.MATCH)
        return outcome(
            MISMATCH,
            "race_run_mismatch",
            f"the claimed values differ from the server's recomputation in: {wrong}",
            diff=rows,
        )
    message = ""
    if score.status == race_scoring.RUN_INFRASTRUCTURE_FAILURE:
        message = (
            f"infrastructure failure: {score.infrastructure_errors} of {score.expected} tasks ended in an "
            "environment or verifier error (more than 30%); this run does not count and is marked for a re-run"
        )
    elif score.status == race_scoring.RUN_FAILED:
        message = "the run produced no output at all; it failed and adds nothing to the score"
    if not bundle.manifest.bound:
        message = (message + "; " if message else "") + (
            f"not attested: {bundle.manifest.format} bundles carry no submission challenge"
        )
    verdict = ATTESTED if bundle.manifest.bound else VALIDATED
    return outcome(verdict, "", message, diff=rows)
