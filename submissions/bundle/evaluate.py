"""The verdict on a paper-gap bundle (seed 000 "What the runner vs the website does").

The server never trusts a claimed number: it recomputes every score from the
evaluator's per-episode results and the release's scoring contract with
:func:`scoring.gap.score_run`, then compares the claim leaf by leaf with
:func:`scoring.compare.compare_claims`.  Verdicts, weakest first:

* ``rejected``  -- unreadable, tampered or invalid (``error_code`` says why);
* ``mismatch``  -- readable, but some claimed value differs beyond the tolerance
  (``diff`` lists every differing field);
* ``validated`` -- every claim matches the recomputation (consistency only: it
  does not prove the local runner was unmodified);
* ``attested``  -- validated, a podium-bundle/2 bundle (bound to its challenge),
  every evaluator result carries a valid signature by a registered evaluator key
  scoped to the task, and every reproduction task's faithfulness verdict is signed
  by a judge key calibrated for that task. Otherwise the run is capped at
  ``validated`` and the message says why ("self-declared faithfulness", ...).

Trust checks that refuse the bundle outright: a signature by a key
outside its scope (``key_out_of_scope``, ``judge_key_out_of_scope``), a signed
document whose challenge is not the manifest's (``challenge_mismatch``), and an
unsigned result for a task whose anchor is withheld (``unsigned_withheld_task``):
such a task is scored only from the evaluator's own signed results.

Pure: no Django, no database, deterministic; :meth:`Outcome.to_dict` is JSON.

Longer than 500 lines on purpose: the verdict is one contract (what is read, what is trusted,
what is compared), and splitting its checks across modules would hide their order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from scoring import gap
from scoring.compare import DEFAULT_TOLERANCE, DIFF, MATCH, compare_claims
from scoring.errors import ScoringError
from scoring.uncertainty import pack_run_columns, task_columns
from submissions.bundle.bundle import Bundle
from submissions.bundle.contract import (
    DocumentTexts,
    EvaluatorKey,
    JudgeKey,
    check_challenge,
    check_judged_results,
    document_texts,
    results_digests,
)
from submissions.bundle.errors import BundleError
from submissions.bundle.schema import PAPER_GAP
from submissions.bundle.signatures import VALID, SignatureCheck, check_signature

# TaskCheck.faithfulness_source of a reproduction task.
JUDGE_SIGNED = "judge_signed"
SELF_DECLARED = "self_declared"

__all__ = [
    "ATTESTED",
    "MISMATCH",
    "REJECTED",
    "VALIDATED",
    "VERDICTS",
    "Outcome",
    "TaskCheck",
    "evaluate_paper_gap",
    "result_signature",
    "scoring_results",
    "signed_result_digests",
    "unbound_signed_digests",
]

REJECTED = "rejected"
MISMATCH = "mismatch"
VALIDATED = "validated"
ATTESTED = "attested"
VERDICTS = (REJECTED, MISMATCH, VALIDATED, ATTESTED)


@dataclass(frozen=True)
class TaskCheck:
    """What the server established about one submitted task."""

    slug: str
    genre: str
    episodes: int
    faithful: bool | None
    evaluator_id: str
    simulator: str
    # "valid" | "unsigned" | "unregistered" (a forged signature rejects the bundle)
    signature: str
    key_id: str | None
    # Reproduction tasks: "judge_signed" | "self_declared"; "" for open tasks.
    faithfulness_source: str = ""
    judge: str = ""
    rubric_version: str = ""
    judge_key_id: str | None = None
    # A judge-signed verdict that names the results it judged (results_sha256, checked equal to
    # this task's results). False for a verdict signed without it: it could be another attempt's
    # verdict under the same challenge, so it attests nothing (_attestation_caps). Not stored:
    # it only decides the run's level, whose message says why.
    verdict_bound: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "genre": self.genre,
            "episodes": self.episodes,
            "faithful": self.faithful,
            "evaluator_id": self.evaluator_id,
            "simulator": self.simulator,
            "signature": self.signature,
            "key_id": self.key_id,
            "faithfulness_source": self.faithfulness_source,
            "judge": self.judge,
            "rubric_version": self.rubric_version,
            "judge_key_id": self.judge_key_id,
        }


@dataclass(frozen=True)
class Outcome:
    """The server's verdict on one bundle, with everything needed to store a Run."""

    verdict: str
    error_code: str = ""
    message: str = ""
    kind: str = ""
    benchmark: str = ""
    release: str = ""
    agent_name: str = ""
    agent_version: str = ""
    effort_tier: str = ""
    runtime_seconds: float | None = None
    tokens_input: int | None = None
    tokens_output: int | None = None
    # Recomputed score_breakdown (RunBreakdown.to_dict()); None when rejected.
    breakdown: dict[str, Any] | None = None
    # Non-matching fields only: [{"path", "claimed", "recomputed", "status"}], sorted by path.
    diff: list[dict[str, Any]] = field(default_factory=list)
    tasks: tuple[TaskCheck, ...] = ()
    # {"overall": {"low","high","level","resamples"} | None, "reproduction": ..., "open": ...}
    confidence: dict[str, Any] = field(default_factory=dict)
    # SHA-256 of the measured results (signatures and challenge left out): duplicate_results.
    results_digest: str = ""
    # The digest as stored before it read numbers as JCS does (matched against older rows only).
    legacy_results_digest: str = ""
    # podium-bundle/2: the challenge the manifest names (None for v1).
    challenge: str | None = None
    # podium-bundle/1: the SHA-256 of each evaluator-signed result's signed bytes (duplicate_results per file).
    signed_digests: tuple[str, ...] = ()
    # Accepted outcomes: the tasks' episodes as scoring.uncertainty.pack_run_columns bytes, stored
    # with the Run (RunEpisodes) so the interval follow-up never re-opens the bundle. Not in to_dict().
    episode_columns: bytes = field(default=b"", repr=False)

    @property
    def accepted(self) -> bool:
        """True for the verdicts that may enter a leaderboard."""
        return self.verdict in (VALIDATED, ATTESTED)

    @property
    def signed_unbound(self) -> bool:
        """Some result is signed by a registered evaluator key, and no challenge binds the
        signatures to this run (podium-bundle/1): they could be filed again for another one."""
        return self.challenge is None and any(task.signature == VALID for task in self.tasks)

    @property
    def signed_bound(self) -> bool:
        """Every result is signed by a registered evaluator key over this run's challenge
        (podium-bundle/2): the signatures show the results were measured for this account's run."""
        return self.challenge is not None and bool(self.tasks) and all(task.signature == VALID for task in self.tasks)

    @property
    def signer_key_ids(self) -> frozenset[str]:
        """The registered keys this outcome counted: each valid evaluator signature's and each
        calibrated judge's (the keys whose revocation would change the verdict)."""
        evaluators = {task.key_id for task in self.tasks if task.signature == VALID and task.key_id}
        return frozenset(evaluators | {task.judge_key_id for task in self.tasks if task.judge_key_id})

    @classmethod
    def rejected(cls, error: BundleError, bundle: Bundle | None = None) -> Outcome:
        """A rejection, keeping whatever the readable manifest tells (for display)."""
        info = _manifest_fields(bundle) if bundle is not None else {}
        return cls(verdict=REJECTED, error_code=error.code, message=error.message, **info)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, deterministic (same bundle and inputs -> equal dicts)."""
        return {
            "verdict": self.verdict,
            "error_code": self.error_code,
            "message": self.message,
            "kind": self.kind,
            "benchmark": self.benchmark,
            "release": self.release,
            "agent": {"name": self.agent_name, "version": self.agent_version},
            "effort_tier": self.effort_tier,
            "runtime_seconds": self.runtime_seconds,
            "tokens": {"input": self.tokens_input, "output": self.tokens_output},
            "breakdown": self.breakdown,
            "diff": list(self.diff),
            "tasks": [task.to_dict() for task in self.tasks],
            "confidence": dict(self.confidence),
            "results_digest": self.results_digest,
        }


def _manifest_fields(bundle: Bundle) -> dict[str, Any]:
    m = bundle.manifest
    return {
        "challenge": m.challenge,
        "kind": bundle.kind,
        "benchmark": m.benchmark,
        "release": m.release,
        "agent_name": m.agent.name,
        "agent_version": m.agent.version,
        "effort_tier": m.effort_tier or "",
        "runtime_seconds": m.runtime_seconds,
        "tokens_input": m.tokens_input,
        "tokens_output": m.tokens_output,
    }


def scoring_results(bundle: Bundle) -> dict[str, gap.TaskResult]:
    """The bundle's evaluator results as :class:`scoring.gap.TaskResult` inputs."""
    out: dict[str, gap.TaskResult] = {}
    for slug in sorted(bundle.results):
        verdict = bundle.faithfulness.get(slug)
        # The parsed episodes (schema.Episode) already carry exactly the ``metric``, ``rates`` and
        # ``aborted`` that scoring reads (it duck-types them and re-validates every value), so they
        # are passed as they are: copying a thousand of them into gap.Episode cost more than scoring.
        out[slug] = gap.TaskResult(
            episodes=cast(Sequence[gap.Episode], bundle.results[slug].episodes),
            faithful=None if verdict is None else verdict.faithful,
        )
    return out


def result_signature(
    bundle: Bundle, slug: str, public_keys: Mapping[str, bytes | str], *, payload: bytes | None = None
) -> SignatureCheck:
    """The signature check of one evaluator result (a forged signature raises ``bad_signature``;
    in a bound format, a result carrying another challenge raises ``challenge_mismatch``).
    ``payload``: the bytes the signature covers, where the caller already has them."""
    result = bundle.results[slug]
    check_challenge(result.challenge, bundle.manifest.challenge, where=result.member)
    return check_signature(result.raw, public_keys, where=result.member, payload=payload)


def unbound_signed_digests(bundle: Bundle, signatures: Iterable[SignatureCheck]) -> tuple[str, ...]:
    """The digests of the result documents kept as ``SignedResultDigest`` rows (each accepted once):
    the SHA-256 of the bytes each valid signature covers, in a podium-bundle/1 bundle only (a v2
    signature covers its own challenge, so it binds its run)."""
    if bundle.manifest.bound:
        return ()
    return tuple(check.signed_sha256 for check in signatures if check.signed_sha256 is not None)


def signed_result_digests(bundle: Bundle, public_keys: Mapping[str, bytes | str]) -> tuple[str, ...]:
    """``Outcome.signed_digests`` of a paper-gap bundle on its own, without scoring it: what
    ``evaluate_paper_gap`` computes with the same keys (used to backfill the rows of runs
    accepted before they were kept). Raises BundleError as the evaluator's signature checks do.
    The keys' task scope is not checked again: the run was accepted under the scope of its day,
    and keeping a digest only stops that document being accepted a second time."""
    checks = (result_signature(bundle, slug, public_keys) for slug in sorted(bundle.results))
    return unbound_signed_digests(bundle, checks)


def _check_release(bundle: Bundle, release_spec: gap.ReleaseSpec, required_task_set_hash: str) -> None:
    manifest = bundle.manifest
    claimed = manifest.required_task_set_hash
    if claimed != required_task_set_hash.lower():
        raise BundleError(
            "release_hash_mismatch",
            f"manifest.json: required_task_set_hash {claimed} does not match release {manifest.release}'s "
            f"{required_task_set_hash.lower()}; the run was made against another task set",
        )
    for slug in sorted(bundle.results):
        spec = release_spec.tasks.get(slug)
        if spec is None:
            raise BundleError(
                "unknown_task",
                f"{bundle.results[slug].member}: task {slug!r} is not part of release {manifest.release}",
            )
        declared = manifest.genres[slug]
        if declared != spec.genre:
            raise BundleError(
                "genre_mismatch",
                f"manifest.json: tasks[{slug!r}].genre is {declared!r} but release {manifest.release} "
                f"declares {spec.genre!r}",
            )
        if spec.genre == gap.REPRODUCTION and slug not in bundle.faithfulness:
            raise BundleError(
                "missing_faithfulness",
                f"faithfulness.json: reproduction task {slug!r} has no faithfulness verdict "
                '(add {"faithful": true|false, "judge": ...})',
            )


def _intervals(
    release_spec: gap.ReleaseSpec, results: Mapping[str, gap.TaskResult], resamples: int, seed: int
) -> dict[str, Any]:
    if resamples <= 0:
        return {}
    try:
        from scoring.uncertainty import run_intervals  # deferred: numpy, needed only when intervals are asked for
    except ImportError:  # pragma: no cover -- scoring ships it; keep the bundle tool usable without
        return {}
    return run_intervals(release_spec, results, resamples=resamples, seed=seed).to_dict()


def _why_uncalibrated(judge: JudgeKey, slug: str) -> str:
    """Why a judge key registered for ``slug`` does not count for it: the rubric it was registered
    with is not the one the release calibrated (rubric versions are public: run pages show them)."""
    registered = judge.registered.get(slug)
    if registered is None:
        return ""
    release = judge.calibrated.get(slug)
    if release is None:
        return f" (registered for rubric {registered!r}; this release has recorded no faithfulness calibration for it)"
    return f" (registered for rubric {registered!r}; this release calibrated the task for rubric {release!r})"


def _faithfulness_check(
    bundle: Bundle, slug: str, judge_keys: Mapping[str, JudgeKey], result_check: SignatureCheck
) -> tuple[str, str, str, str | None, bool]:
    """(source, judge, rubric_version, judge key id, bound) of a reproduction task's verdict;
    ``bound``: the judge's signed verdict names this task's results (``results_sha256``)."""
    verdict = bundle.faithfulness[slug]
    if not verdict.signed:
        return SELF_DECLARED, verdict.judge, "", None, True
    where = f"faithfulness.json: {slug}"
    check_challenge(verdict.challenge, bundle.manifest.challenge, where=where)
    signature = check_signature(verdict.raw, {k: j.public_key for k, j in judge_keys.items()}, where=where)
    if signature.status != VALID:
        return SELF_DECLARED, verdict.judge, verdict.rubric_version or "", None, True
    judge = judge_keys[str(signature.key_id)]
    calibrated = judge.rubrics.get(slug)
    if calibrated is None or calibrated != verdict.rubric_version:
        raise BundleError(
            "judge_key_out_of_scope",
            f"{where}: judge key {signature.key_id} ({judge.name}) is not calibrated for task {slug!r}"
            + (f" with rubric {verdict.rubric_version!r}" if calibrated is not None else _why_uncalibrated(judge, slug))
            + "; a judge signs only the verdicts of the tasks (and rubric versions) it is registered for",
        )
    if verdict.results_sha256 is None:
        return JUDGE_SIGNED, judge.name, calibrated, signature.key_id, False
    result = bundle.results[slug]
    check_judged_results(
        verdict.results_sha256, result.raw, judged_sha256=result_check.signed_sha256, member=result.member, where=where
    )
    return JUDGE_SIGNED, judge.name, calibrated, signature.key_id, True


def _episode_columns(release_spec: gap.ReleaseSpec, results: Mapping[str, gap.TaskResult]) -> bytes:
    """The tasks' (validated: score_run accepted them) episodes as the bytes the interval follow-up reads."""
    return pack_run_columns(
        {slug: task_columns(result, sorted(release_spec.tasks[slug].penalties)) for slug, result in results.items()}
    )


def unclaimable_paths(
    recomputed: Mapping[str, Any], release_spec: gap.ReleaseSpec, withheld: frozenset[str]
) -> frozenset[str]:
    """Breakdown paths a submitter cannot compute: each anchor-derived field (gap, score, final)
    of a covered task whose anchor the release withholds, and each aggregate averaging such a
    task (overall, and its genre's). The claim may give these as null: the release does not
    publish the anchor they divide by (docs/bundle-format.md section 4.2). A number claimed
    there is compared as any other."""
    hidden = [slug for slug in recomputed.get("tasks", {}) if slug in withheld and slug in release_spec.tasks]
    if not hidden:
        return frozenset()
    paths = {f"tasks.{slug}.{name}" for slug in hidden for name in gap.ANCHOR_DERIVED_TASK_FIELDS}
    paths.add("aggregates.overall")
    paths |= {f"aggregates.{release_spec.tasks[slug].genre}" for slug in hidden}
    return frozenset(paths)


def _claim_diffs(
    claimed: Mapping[str, Any], recomputed: Mapping[str, Any], tolerance: float, unclaimable: frozenset[str]
) -> tuple[list[Any], str]:
    """The claim's differences from the recomputation, and a note on the values claimed as null
    because a withheld anchor derives them (``unclaimable``: not claimed, so not a difference)."""
    diffs, unclaimed = [], 0
    for d in compare_claims(claimed, recomputed, tolerance):
        if d.status == MATCH:
            continue
        if d.status == DIFF and d.claimed is None and d.path in unclaimable:
            unclaimed += 1
            continue
        diffs.append(d)
    note = f" ({unclaimed} value(s) claimed as null: derived from a withheld anchor)" if unclaimed and not diffs else ""
    return diffs, note


def evaluate_paper_gap(
    bundle: Bundle,
    *,
    release_spec: gap.ReleaseSpec,
    required_task_set_hash: str,
    signing_keys: Mapping[str, bytes | str] | None = None,
    evaluator_keys: Mapping[str, EvaluatorKey] | None = None,
    judge_keys: Mapping[str, JudgeKey] | None = None,
    withheld: frozenset[str] = frozenset(),
    claims_withheld: frozenset[str] | None = None,
    task_simulators: Mapping[str, str] | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    bootstrap_resamples: int = 1000,
    bootstrap_seed: int = 0,
) -> Outcome:
    """Recompute and judge a paper-gap bundle; never raises for bad bundle content.

    ``release_spec`` and ``required_task_set_hash`` are the server's view of
    the release the manifest names (the caller resolves benchmark/version;
    an unknown one is ``Outcome.rejected(BundleError("unknown_release", ...))``).
    ``evaluator_keys`` are the registered evaluator keys with their scopes
    (``task_simulators`` gives each release task's simulator); ``signing_keys``
    (key id -> public key, no scope) is the standalone tool's simpler form.
    ``judge_keys`` are the registered judge keys; ``withheld`` the release's
    tasks whose anchor is not published: their results must be signed, and their
    anchor-derived values may be claimed as null. ``claims_withheld`` gives the
    second rule alone (the local ``check``, which trusts unsigned results), and
    defaults to ``withheld``. ``bootstrap_resamples=0`` skips the CIs.
    """
    if evaluator_keys is None:
        evaluator_keys = {}
        public_keys: Mapping[str, bytes | str] = dict(signing_keys or {})
    else:
        public_keys = {key_id: key.public_key for key_id, key in evaluator_keys.items()}
    judge_keys = judge_keys or {}
    task_simulators = task_simulators or {}
    try:
        if bundle.kind != PAPER_GAP:
            raise BundleError("wrong_kind", f"manifest.json: kind is {bundle.kind!r}, expected 'paper_gap'")
        _check_release(bundle, release_spec, required_task_set_hash)
        checks: list[TaskCheck] = []
        signatures: list[SignatureCheck] = []
        # Each result encoded once, for its signature and both results digests.
        texts: dict[str, DocumentTexts] = {}
        for slug in sorted(bundle.results):
            result = bundle.results[slug]
            texts[slug] = document_texts(result.raw)
            signature = result_signature(bundle, slug, public_keys, payload=texts[slug].signed_payload)
            signatures.append(signature)
            key = evaluator_keys.get(str(signature.key_id)) if signature.status == VALID else None
            simulator = task_simulators.get(slug, result.simulator)
            if key is not None and not key.covers(task=slug, simulator=simulator):
                raise BundleError(
                    "key_out_of_scope",
                    f"{result.member}: evaluator key {signature.key_id} is registered for simulator "
                    f"{key.simulator!r}"
                    + (
                        f" (tasks {', '.join(sorted(key.tasks))})"
                        if key.tasks
                        else " (tasks of other benchmarks only)"
                        if key.narrowed
                        else ""
                    )
                    + f", not for task {slug!r} on {simulator!r}",
                )
            if slug in withheld and signature.status != VALID:
                raise BundleError(
                    "unsigned_withheld_task",
                    f"{result.member}: task {slug!r} has a withheld anchor and is scored only from results "
                    f"signed by a registered evaluator key for its simulator; this result is {signature.status}",
                )
            verdict = bundle.faithfulness.get(slug)
            genre = release_spec.tasks[slug].genre
            source, judge, rubric, judge_key_id, verdict_bound = (
                _faithfulness_check(bundle, slug, judge_keys, signature)
                if genre == gap.REPRODUCTION and verdict is not None
                else ("", "", "", None, True)
            )
            checks.append(
                TaskCheck(
                    slug=slug,
                    genre=genre,
                    episodes=len(result.episodes),
                    faithful=None if verdict is None else verdict.faithful,
                    evaluator_id=result.evaluator_id,
                    simulator=result.simulator,
                    signature=signature.status,
                    key_id=signature.key_id,
                    faithfulness_source=source,
                    judge=judge,
                    rubric_version=rubric,
                    judge_key_id=judge_key_id,
                    verdict_bound=verdict_bound,
                )
            )
        results = scoring_results(bundle)
        try:
            recomputed = gap.score_run(release_spec, results).to_dict()
            confidence = _intervals(release_spec, results, bootstrap_resamples, bootstrap_seed)
            episode_columns = _episode_columns(release_spec, results)
        except ScoringError as exc:
            raise BundleError("invalid_value", f"results: {exc}") from None
    except BundleError as error:
        return Outcome.rejected(error, bundle)
    assert bundle.claimed_breakdown is not None
    diffs, null_claims = _claim_diffs(
        bundle.claimed_breakdown,
        recomputed,
        tolerance,
        unclaimable_paths(recomputed, release_spec, withheld if claims_withheld is None else claims_withheld),
    )
    caps = _attestation_caps(bundle, checks)
    if diffs:
        verdict_name = MISMATCH
        first = diffs[0]
        message = (
            f"score_breakdown.json: {len(diffs)} claimed value(s) differ from the recomputation "
            f"(first: {first.path} claimed {first.claimed!r}, recomputed {first.recomputed!r})"
        )
    elif not caps:
        verdict_name = ATTESTED
        message = (
            "every claim matches, every evaluator result is signed by a registered key for its task, "
            "and every faithfulness verdict by a calibrated judge"
        )
    else:
        verdict_name, message = VALIDATED, "every claim matches the recomputation; not attested: " + "; ".join(caps)
    message += null_claims
    digest, legacy_digest = results_digests(((slug, bundle.results[slug].raw) for slug in bundle.results), texts)
    return Outcome(
        verdict=verdict_name,
        message=message,
        breakdown=recomputed,
        diff=[{"path": d.path, "claimed": d.claimed, "recomputed": d.recomputed, "status": d.status} for d in diffs],
        tasks=tuple(checks),
        confidence=confidence,
        results_digest=digest,
        legacy_results_digest=legacy_digest,
        signed_digests=unbound_signed_digests(bundle, signatures),
        episode_columns=episode_columns,
        **_manifest_fields(bundle),
    )


def _attestation_caps(bundle: Bundle, checks: Sequence[TaskCheck]) -> list[str]:
    """Why a consistent run stays at validated (empty: it is attested)."""
    caps = []
    if not bundle.manifest.bound:
        caps.append(f"{bundle.manifest.format} bundles carry no submission challenge")
    if not checks or any(c.signature != VALID for c in checks):
        caps.append("not every evaluator result is signed by a registered key")
    if any(c.faithfulness_source == SELF_DECLARED for c in checks):
        caps.append("self-declared faithfulness")
    unbound = [c.slug for c in checks if not c.verdict_bound]
    if unbound:
        caps.append(
            "a judge's signed verdict does not name the results it judged (no results_sha256): " + ", ".join(unbound)
        )
    return caps
