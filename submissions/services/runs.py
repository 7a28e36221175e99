"""Runs: the paper-gap scheme's recording service (what a validated paper-gap
submission produces), and the append-only verification log maintainers add to.

Two halves of the verification contract (``submissions.services.verification``):
``paper_gap_load`` reads the release and the scoped evaluator and judge keys the
pure ``submissions.bundle.evaluate.evaluate_paper_gap`` needs (reads only), and
``run_record_paper_gap`` writes the accepted run.

``run_record_paper_gap`` is called by verification inside its row-locked
transaction; it is idempotent (it returns ``submission.run`` when set: the
one-to-one lives on the locked Submission row, unique), so a second
verification of the same submission never writes a second Run.

The bootstrap confidence intervals are not on the verification path: they cost
several times the rest of verifying a bundle. ``run_record_paper_gap`` enqueues
``submissions.tasks.compute_run_confidence`` on commit, which calls
``run_confidence_compute``: it reads the evaluator's episodes that verification
stored (RunEpisodes: one row, no decryption, no JSON parsing of a thousand
episodes), recomputes the same seeded intervals, writes Run.confidence and the
interval of the run's own Standing rows, and deletes the RunEpisodes row (a
hand-off, not an archive). A run recorded before episodes were
stored falls back to re-opening its stored bundle (never deleted, and the site
keys still decrypt it after a rotation). Until then a run and its standings
carry no interval (pages show the score without one).

Longer than 500 lines on purpose: the paper-gap scheme's load, record, intervals and their
sweeper share the run's columns and one set of reads; split, each half would re-derive them.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard.models import (
    Benchmark,
    Release,
    ReleaseTask,
    Run,
    RunEpisodes,
    SigningKey,
    TaskResult,
    VerificationEvent,
)
from leaderboard.selectors.releases import (
    RELEASE_SPEC_COLUMNS,
    release_spec_by_id,
    release_spec_from_rows,
    release_task_simulator,
    unknown_release_message,
)
from leaderboard.services.declarations import run_cost_refresh
from leaderboard.services.paper_gap_standings import standings_set_interval, standings_update_version
from scoring import gap
from scoring.errors import ScoringError
from scoring.uncertainty import run_intervals, run_intervals_from_columns, unpack_run_columns
from submissions.bundle.contract import EvaluatorKey, JudgeKey
from submissions.bundle.errors import BundleError
from submissions.bundle.evaluate import Outcome, evaluate_paper_gap, scoring_results
from submissions.models import RescoreItem, Submission
from submissions.services.agents import agent_version_claim
from submissions.services.enqueue import enqueue_on_commit
from submissions.services.stored_bundles import bundle_local_path, open_stored_bundle

if TYPE_CHECKING:
    from submissions.bundle.bundle import Bundle


logger = logging.getLogger(__name__)

SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")

# What each automatic level means, as recorded in the event log.
AUTOMATIC_METHOD = {
    Run.Level.VALIDATED: "server recomputation: every claimed value matches (consistency only)",
    Run.Level.ATTESTED: (
        "server recomputation matches, every evaluator result carries a registered signature for its task "
        "and every faithfulness verdict a calibrated judge's"
    ),
}


class RunError(Exception):
    """A maintainer action on a run that cannot be done as asked."""


@dataclass(frozen=True)
class PaperGapContext:
    """What the pure evaluator is given: the release, its scoring contract and the scoped keys."""

    release: Release
    spec: gap.ReleaseSpec
    withheld: frozenset[str]
    task_simulators: dict[str, str]
    evaluator_keys: dict[str, EvaluatorKey]
    judge_keys: dict[str, JudgeKey]
    # For the record step (read here, with the rest, so recording adds no reads of its own):
    # task slug -> ReleaseTask pk, and key_id -> SigningKey pk of the keys above.
    release_task_ids: dict[str, int] = dataclasses.field(default_factory=dict)
    key_pks: dict[str, int] = dataclasses.field(default_factory=dict)


def _active_keys(
    kind: str, benchmark_id: int, owner_column: str
) -> list[tuple[int, str, str, Any, dict[str, str], bool]]:
    """(pk, key_id, public key, ``owner_column``'s value, {task slug: rubric version} within
    ``benchmark_id``, narrowed to any task at all) of every registered, unrevoked key of ``kind``.

    One query: the keys LEFT JOINed to their task scopes (a key with no scope is its one row,
    with NULL scope columns), where the scopes and the keys were two reads on every signed
    verification. One statement also reads both from one snapshot (two could straddle a
    registration). A revocation after this read is caught inside the verdict's transaction,
    under the keys' locks (verification._signers_unrevoked), as before.

    A scope names a Task row, and a task's slug is unique only within its benchmark: a scope
    read by slug alone let a key narrowed to one benchmark's task sign another benchmark's task
    of the same name (the demo keys, whose private halves are public, for a real benchmark
    reusing a demo task's name). So only this benchmark's tasks are kept, and a key narrowed to
    other benchmarks' tasks only is returned as narrowed with no task here: it signs nothing."""
    rows = (
        SigningKey.objects.filter(owner_kind=kind, revoked_at__isnull=True)
        .order_by()
        .values_list(
            "pk",
            "key_id",
            "public_key",
            owner_column,
            "task_scopes__task__benchmark_id",
            "task_scopes__task__slug",
            "task_scopes__rubric_version",
        )
    )
    keys: dict[int, tuple[int, str, str, Any, dict[str, str], bool]] = {}
    for pk, key_id, public_key, owner, task_benchmark_id, slug, rubric in rows:
        key = keys.get(pk)
        if key is None:
            key = keys[pk] = (pk, key_id, public_key, owner, {}, slug is not None)
        if slug is not None and task_benchmark_id == benchmark_id:
            key[4][slug] = rubric
    return list(keys.values())


def scoped_evaluator_keys(*, benchmark_id: int, pks: dict[str, int] | None = None) -> dict[str, EvaluatorKey]:
    """key_id -> scope, for a release of ``benchmark_id``, of every registered, unrevoked
    evaluator key (``pks``, when given, gets each key's SigningKey pk by key_id)."""
    keys: dict[str, EvaluatorKey] = {}
    for pk, key_id, public_key, simulator, scopes, narrowed in _active_keys(
        SigningKey.Owner.EVALUATOR, benchmark_id, "evaluator__simulator"
    ):
        keys[key_id] = EvaluatorKey(
            public_key=base64.b64decode(public_key),
            simulator=simulator,
            tasks=frozenset(scopes),
            narrowed=narrowed,
        )
        if pks is not None:
            pks[key_id] = pk
    return keys


def scoped_judge_keys(
    *, benchmark_id: int, calibrated: Mapping[str, str], pks: dict[str, int] | None = None
) -> dict[str, JudgeKey]:
    """key_id -> identity and calibrated tasks of ``benchmark_id`` of every registered, unrevoked
    judge key (``pks``, when given, gets each key's SigningKey pk by key_id).

    A key's (task, rubric) pair counts only where the release recorded that very calibration
    (``calibrated``: task slug -> the rubric version its faithfulness gate passed with): the
    rubric a key was registered with is what an administrator typed, and seed 003's verdict is
    trusted only from a rubric that was authored and dry-run for the release."""
    keys: dict[str, JudgeKey] = {}
    for pk, key_id, public_key, name, scopes, _ in _active_keys(SigningKey.Owner.JUDGE, benchmark_id, "judge_name"):
        rubrics = {slug: rubric for slug, rubric in scopes.items() if calibrated.get(slug) == rubric}
        keys[key_id] = JudgeKey(
            public_key=base64.b64decode(public_key),
            name=name,
            rubrics=rubrics,
            registered=dict(scopes),
            calibrated=calibrated,
        )
        if pks is not None:
            pks[key_id] = pk
    return keys


def paper_gap_load(*, submission: Submission, bundle: Bundle) -> PaperGapContext:
    """The published release the manifest names, its scoring contract and the keys. Reads only."""
    # selectors import the boards' models: import late

    benchmark, version = str(bundle.manifest.benchmark), str(bundle.manifest.release)
    release = (
        Release.objects.select_related("benchmark")
        .filter(
            benchmark__slug=benchmark, version=version, benchmark__scheme=Benchmark.Scheme.PAPER_GAP, published=True
        )
        .order_by()  # one row at most (a version is unique per benchmark): no ordering to compile
        .first()
    )
    if release is None:
        # One message for unpublished and nonexistent: which versions exist is not told.
        raise BundleError(
            "unknown_release", unknown_release_message(benchmark[:64], version[:50], where="manifest.json")
        )
    submission.release = release
    # One read of the release's tasks: the scoring spec's columns, then what verification and
    # the record step need besides (withheld anchors, simulators, the ReleaseTask pks).
    rows = list(
        ReleaseTask.objects.filter(release=release)
        .annotate(release_simulator=release_task_simulator())
        .values_list(
            *RELEASE_SPEC_COLUMNS,
            "faithfulness_rubric_version",
            "faithfulness_calibrated_at",
            "anchor_published",
            "release_simulator",
            "pk",
        )
    )
    try:
        spec = release_spec_from_rows(release, rows)
    except ScoringError:
        # A published release with a task that has no anchor: ours to fix, not the submitter's.
        logger.exception("release %s cannot be scored", release.pk)
        raise BundleError(
            "release_not_scorable",
            f"release {benchmark!r} {version!r} cannot be scored on this site yet (a task has no anchor); "
            "the maintainers have been told, please resubmit later",
        ) from None
    withheld = frozenset(row[0] for row in rows if not row[-3])
    rubric_at = len(RELEASE_SPEC_COLUMNS)  # faithfulness_rubric_version, then its calibration time
    calibrated = {row[0]: row[rubric_at] for row in rows if row[rubric_at] and row[rubric_at + 1] is not None}
    simulators = {row[0]: row[-2] for row in rows}
    # Keys are only consulted for what is signed: an unsigned bundle skips the queries.
    key_pks: dict[str, int] = {}
    return PaperGapContext(
        release=release,
        spec=spec,
        withheld=withheld,
        task_simulators=simulators,
        evaluator_keys=scoped_evaluator_keys(benchmark_id=release.benchmark_id, pks=key_pks)
        if any(r.signed for r in bundle.results.values())
        else {},
        judge_keys=scoped_judge_keys(benchmark_id=release.benchmark_id, calibrated=calibrated, pks=key_pks)
        if any(v.signed for v in bundle.faithfulness.values())
        else {},
        release_task_ids={row[0]: row[-1] for row in rows},
        key_pks=key_pks,
    )


def paper_gap_evaluate(bundle: Bundle, context: PaperGapContext) -> Outcome:
    """The pure evaluator with the server's inputs."""
    return evaluate_paper_gap(
        bundle,
        release_spec=context.spec,
        required_task_set_hash=context.release.required_task_set_hash,
        evaluator_keys=context.evaluator_keys,
        judge_keys=context.judge_keys,
        withheld=context.withheld,
        task_simulators=context.task_simulators,
        # The confidence intervals are computed after commit by submissions.tasks.compute_run_confidence
        # (several times the cost of the rest of verification); run_record_paper_gap enqueues it.
        bootstrap_resamples=0,
    )


def paper_gap_record(
    *, submission: Submission, outcome: Outcome, context: PaperGapContext, verdict_fields: Sequence[str] = ()
) -> Run:
    return run_record_paper_gap(
        submission=submission,
        release=context.release,
        outcome=outcome,
        release_task_ids=context.release_task_ids,
        key_pks=context.key_pks,
        verdict_fields=verdict_fields,
    )


def run_record_paper_gap(
    *,
    submission: Submission,
    release: Release,
    outcome: Outcome,
    release_task_ids: dict[str, int] | None = None,
    key_pks: dict[str, int] | None = None,
    verdict_fields: Sequence[str] = (),
) -> Run:
    """Create the Run, its TaskResults and the first VerificationEvent of a validated/attested
    outcome (submissions.bundle.evaluate.Outcome), then update its agent version's standings
    (only the rows and ranks that change).

    Returns the existing Run untouched when the submission already has one. The caller holds
    the submission's row lock (select_for_update) and ``submission`` is that locked row, so its
    ``run_id`` is current: a second worker or a retry waits for the lock, then finds the run.
    ``release_task_ids``
    (slug -> ReleaseTask pk) and ``key_pks`` (key_id -> SigningKey pk of every key the outcome
    names) come from the load step when it read them; otherwise they are read here.
    ``verdict_fields``: columns of ``submission`` the caller (verification) set and has not
    written yet; they are written in the same UPDATE as the run link, before the standings.
    """
    if submission.run is not None:  # a null one-to-one reads no row
        if verdict_fields:
            submission.save(update_fields=verdict_fields)
        return submission.run
    breakdown = outcome.breakdown or {}
    aggregates = breakdown["aggregates"]
    coverage = aggregates["coverage"]
    # The one ownership rule: raises agent_not_yours (the caller's transaction rolls back).
    agent_version = agent_version_claim(
        name=outcome.agent_name, version=outcome.agent_version, account=submission.submitter
    )
    level = Run.Level(outcome.verdict)
    # The caller holds the submission row lock and we checked above: no concurrent Run can appear.
    run = Run.objects.create(
        release=release,
        agent_version=agent_version,
        level=level,
        overall=aggregates["overall"],
        reproduction=aggregates["reproduction"],
        open=aggregates["open"],
        pass_rate=aggregates["pass_rate"],
        confidence=run_confidence(outcome.confidence),
        covered=coverage["covered"],
        required=coverage["required"],
        complete=coverage["complete"],
        runtime_seconds=outcome.runtime_seconds,
        tokens_in=outcome.tokens_input,
        tokens_out=outcome.tokens_output,
        effort_tier=(outcome.effort_tier or "")[:50],
        breakdown=breakdown,
        is_private=submission.is_private,
    )
    # Linked in the same transaction; the one-to-one's unique constraint is the backstop. Before
    # the standings update, whose query finds a run through its submission's link.
    submission.run = run
    submission.save(update_fields=list(dict.fromkeys(["run", *verdict_fields, "updated_at"])))
    if not release_task_ids:
        release_task_ids = dict(ReleaseTask.objects.filter(release=release).values_list("task__slug", "pk"))
    checks = {check.slug: check for check in outcome.tasks}
    valid_key_ids = {check.key_id for check in outcome.tasks if check.signature == "valid" and check.key_id}
    valid_key_ids |= {check.judge_key_id for check in outcome.tasks if check.judge_key_id}
    keys = {key_id: pk for key_id, pk in (key_pks or {}).items() if key_id in valid_key_ids}
    if not valid_key_ids <= keys.keys():
        keys = dict(SigningKey.objects.filter(key_id__in=valid_key_ids).values_list("key_id", "pk"))
    rows = []
    for slug, entry in breakdown["tasks"].items():
        check = checks.get(slug)
        rows.append(
            TaskResult(
                run=run,
                release_task_id=release_task_ids[slug],
                **task_result_scores(entry),
                episodes=check.episodes if check else 0,
                faithful=check.faithful if check else None,
                signature=check.signature if check else "unsigned",
                signing_key_id=keys.get(check.key_id)
                if check and check.signature == "valid" and check.key_id
                else None,
                faithfulness_source=check.faithfulness_source if check else "",
                judge=(check.judge if check else "")[:100],
                rubric_version=(check.rubric_version if check else "")[:100],
                judge_key_id=keys.get(check.judge_key_id) if check and check.judge_key_id else None,
            )
        )
    TaskResult.objects.bulk_create(rows)
    if outcome.episode_columns and settings.PODIUM_BOOTSTRAP_RESAMPLES > 0:  # read by the follow-up only
        RunEpisodes.objects.create(run=run, columns=outcome.episode_columns)
    VerificationEvent.objects.create(
        run=run, level=level, actor=None, method=AUTOMATIC_METHOD[level], evidence_sha256=submission.sha256
    )
    run_cost_refresh(run=run)  # precomputed, like its standing (the board's cost column)
    standings_update_version(release=release, agent_version_id=agent_version.pk)
    if not run.confidence:
        _enqueue_confidence(run.pk)
    return run


def task_result_scores(entry: dict[str, Any]) -> dict[str, Any]:
    """A TaskResult's recomputed columns from one task of a breakdown (``scoring.gap.score_run``):
    the one mapping from breakdown names to column names, for verification and rescoring."""
    return {
        "measured": entry["measured"],
        "gap": entry["gap"],
        "factors": entry["penalties"],
        "factor": entry["factor"],
        "score": entry["score"],
        "final": entry["final"],
        "pass_rate": entry["pass_rate"],
    }


def _enqueue_confidence(run_id: int) -> None:
    from submissions.tasks import compute_run_confidence  # tasks import the services: import late

    # A lost enqueue is the sweeper's (runs_missing_confidence_ids), never the caller's error.
    enqueue_on_commit(lambda: compute_run_confidence.delay(run_id), what=f"the intervals of run {run_id}")


# Seed of the run intervals: fixed, so a run's interval is the same whoever recomputes it, and
# equal to the one ``submissions.bundle.evaluate.evaluate_paper_gap`` reports for the same resamples.
CONFIDENCE_SEED = 0


def run_confidence_compute(*, run_id: int) -> Run | None:
    """Compute and store a paper-gap run's bootstrap intervals (settings.PODIUM_BOOTSTRAP_RESAMPLES
    resamples, seed ``CONFIDENCE_SEED``), then put them on the run's Standing rows.

    The episodes come from the run's RunEpisodes row (written at verification); a run without
    one (recorded before they were stored), or whose stored columns no longer fit the release's
    tasks, re-opens its stored bundle instead: the same episodes, so the same intervals.
    Safe to run twice or concurrently: a run whose confidence is already set is returned
    untouched (checked again by the conditional UPDATE that writes it). Returns None for a run that
    does not exist (deleted since it was enqueued). With 0 resamples nothing is computed.
    A stored bundle that no longer opens or scores (it did when it was verified) is logged
    and the run is left without an interval rather than retried forever; transient faults
    (database, storage I/O) propagate so the task retries.
    """
    # One query: the run, its release and its stored episodes (a reverse one-to-one join). The
    # run's breakdown (the largest column, decoded on every load) is not needed here: deferred.
    # No ordering: one row by primary key (the model's default ordering only cost its compile).
    run = next(
        iter(Run.objects.select_related("release", "episodes").defer("breakdown").filter(pk=run_id).order_by()), None
    )
    if run is None:
        logger.warning("run %s does not exist; no confidence to compute", run_id)
        return None
    resamples = settings.PODIUM_BOOTSTRAP_RESAMPLES
    if run.confidence or resamples <= 0:
        return run
    # The release's current spec (read on every call; built again only when its rows changed).
    spec = release_spec_by_id(run.release_id, run.release.missing_task_policy)
    try:
        columns = unpack_run_columns(run.episodes.columns)
    except RunEpisodes.DoesNotExist:
        columns = None  # recorded before episodes were stored
    intervals = None
    if columns is not None:
        try:
            intervals = run_intervals_from_columns(spec, columns, resamples=resamples, seed=CONFIDENCE_SEED).to_dict()
        except ScoringError:
            logger.warning("run %s: its stored episodes do not fit the release's tasks; re-opening its bundle", run.pk)
    if intervals is None:
        intervals = _intervals_from_bundle(run, spec, resamples)
        if intervals is None:
            return run
    confidence = run_confidence(intervals)
    if not confidence:
        return run
    with transaction.atomic():
        # Written only if still unset, in one statement: it takes the run's row lock, and a
        # concurrent second computation re-checks the condition after the first commits (0 rows).
        if not Run.objects.filter(pk=run.pk, confidence={}).update(confidence=confidence):
            run.refresh_from_db(fields=["confidence"])
            return run
        run.confidence = confidence
        # A hand-off, not an archive (about 18 KB a standard run): the bundle stays the source.
        # Deleted before the standings write, which takes the release's row lock: that lock is
        # then held only for the standings UPDATE and the commit.
        RunEpisodes.objects.filter(run_id=run.pk).delete()
        standings_set_interval(release=run.release, run=run)
    return run


def _intervals_from_bundle(run: Run, spec: Any, resamples: int) -> dict[str, Any] | None:
    """The run's intervals from its stored bundle (None, logged: it no longer opens or scores)."""
    try:
        with bundle_local_path(run.submission.file.name) as path:
            bundle = open_stored_bundle(path)
        return run_intervals(spec, scoring_results(bundle), resamples=resamples, seed=CONFIDENCE_SEED).to_dict()
    except (BundleError, ScoringError):
        logger.exception("run %s: its stored bundle no longer opens or scores; left without an interval", run.pk)
        return None


# At most this many runs are handed back to compute_run_confidence per sweep, newest first, and
# only runs of the last day: a lost enqueue is found by the next sweep (minutes), while a run whose
# stored bundle no longer opens (logged by run_confidence_compute) stops being retried after a day.
CONFIDENCE_SWEEP_BATCH = 200
CONFIDENCE_SWEEP_WINDOW = timedelta(days=1)


def _rescored_between(since: Any, until: Any) -> Any:
    """Ids of runs rewritten in place by a rescore applied between ``since`` and ``until``."""
    return RescoreItem.objects.filter(
        state=RescoreItem.State.APPLIED,
        rescore__applied_at__gte=since,
        rescore__applied_at__lt=until,
        rescore__target_release__isnull=True,
    ).values("run_id")


def runs_missing_confidence_ids(*, now: Any = None) -> list[Any]:
    """Runs recorded (or rescored in place) longer than settings.PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS
    ago (and less than ``CONFIDENCE_SWEEP_WINDOW``) that still have no interval but a score to put one on: their
    compute_run_confidence was lost (a Redis restart without persistence, a dropped on_commit
    enqueue). Empty when intervals are switched off (0 resamples)."""
    if settings.PODIUM_BOOTSTRAP_RESAMPLES <= 0:
        return []
    now = now or timezone.now()
    since = now - CONFIDENCE_SWEEP_WINDOW
    until = now - timedelta(seconds=settings.PODIUM_CONFIDENCE_STUCK_AFTER_SECONDS)
    return list(
        Run.objects.filter(confidence={})
        # Recorded within the window, or rescored within it (apply clears an older run's
        # intervals, and its follow-up may be lost like any other); either one a while ago.
        .filter(Q(created_at__gte=since, created_at__lt=until) | Q(pk__in=_rescored_between(since, until)))
        .filter(Q(overall__isnull=False) | Q(reproduction__isnull=False) | Q(open__isnull=False))
        .order_by("-created_at", "-pk")
        .values_list("pk", flat=True)[:CONFIDENCE_SWEEP_BATCH]
    )


def run_confidence(confidence: dict[str, Any] | None) -> dict[str, list[float]]:
    """{"overall": [low, high], ...} from the bootstrap intervals (categories without one are left out)."""
    return {
        tab: [interval["low"], interval["high"]] for tab, interval in (confidence or {}).items() if interval is not None
    }


# Maintainer attestations moved to submissions.services.reruns: ``verified`` now takes an
# official re-run whose own results are recomputed and compared (run_rerun_record_bundle /
# run_rerun_record_results), and staff lower a level with run_level_change.
