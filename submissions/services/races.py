"""The race_run scheme's recording service (seed 002, layers 1 and 2).

Two halves of the verification contract (``submissions.services.verification``):

* ``race_run_load`` reads what the pure evaluator needs and refuses what only the
  database can tell: the release, the race (running, or embargoed for an owed
  re-run), the agent version's entry by its owning account, the validator keys.
  It reads only: a bundle refused here (a race that is not running, a version
  nobody entered) writes no Agent, AgentVersion or run row.
* ``race_run_record`` writes the RaceRun and its outcomes once the verdict is
  accepted, inside the verification transaction.

The recomputation itself is ``submissions.bundle.evaluate_race.evaluate_race_run``.
Failure categories are stored for every episode but shown only where
leaderboard.selectors.race allows it (the embargo).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet

from leaderboard.models import (
    AgentVersion,
    Benchmark,
    QualifyingEntry,
    Race,
    RaceEntry,
    RaceRun,
    RaceTaskOutcome,
    Release,
    SigningKey,
    Validator,
)
from leaderboard.permissions import CHANGE_RACE, staff_may
from leaderboard.selectors.releases import unknown_release_message
from leaderboard.selectors.visibility import benchmarks_visible, viewer_is_staff
from leaderboard.services.race_run_slots import RaceRunSlot, race_run_slot_holder, race_run_slot_lock
from leaderboard.services.race_standings import race_standings_update
from scoring import race as race_scoring
from submissions.bundle.contract import ValidatorKey
from submissions.bundle.errors import BundleError
from submissions.bundle.evaluate_race import RaceOutcome, RaceSpec, evaluate_race_run
from submissions.models import Submission
from submissions.quotas import QuotaExceeded, quota_refund, quota_scope, utc_day, validator_quota_consume
from submissions.services.agents import agent_slug, agent_version_claim, agent_version_find

if TYPE_CHECKING:
    from submissions.bundle.bundle import Bundle


@dataclass(frozen=True)
class RaceContext:
    release: Release
    race: Race | None
    agent_version: AgentVersion
    spec: RaceSpec


def scheme_release(*, benchmark_slug: str, version: str, scheme: str) -> Release:
    """The published release a scheme bundle names, or a rejection saying what was expected."""
    release = (
        Release.objects.select_related("benchmark").filter(benchmark__slug=benchmark_slug, version=version).first()
    )
    if release is None or not release.published:
        raise BundleError("unknown_release", unknown_release_message(benchmark_slug[:64], version[:50]))
    if release.benchmark.scheme != scheme:
        raise BundleError(
            "wrong_scheme",
            f"manifest: benchmark {benchmark_slug!r} is a {release.benchmark.scheme} benchmark; "
            f"this bundle is a {scheme} bundle",
        )
    return release


def expected_task_ids(*, release: Release, race: Race | None) -> list[str]:
    """The race's pinned hidden set, or the qualifying release's public frozen set
    (Release.qualifying_task_ids as synced from the manifest, else the release's task slugs)."""
    if race is not None:
        return list(race.task_ids)
    if release.qualifying_task_ids:
        return [str(task_id) for task_id in release.qualifying_task_ids]
    return list(release.release_tasks.order_by("position", "task__slug").values_list("task__slug", flat=True))


def _race_for(number: int | None, release: Release, agent_version: AgentVersion | None, uploader: User) -> Race | None:
    if number is None:
        return None
    race = Race.objects.select_related("release").filter(benchmark=release.benchmark, number=number).first()
    if race is None:
        raise BundleError("unknown_race", f"race run: benchmark {release.benchmark.slug!r} has no race number {number}")
    if race.release is not None and race.release_id != release.pk:
        # The race's own release is not named: it may be a draft (staff pin a race to the next
        # release before publishing it), whose version is staff's, and naming it only when it is
        # published would tell a draft apart by the wording.
        raise BundleError(
            "race_release_mismatch",
            f"race run: {race} takes no runs of release {release.version!r} "
            "(a race takes runs of the one release it is pinned to)",
        )
    if race.status == Race.Status.RUNNING:
        return race
    if agent_version is not None and _lands_as_owed_rerun(race, agent_version, owed_runs_for(user=uploader)):
        return race
    raise _not_running(race)


def _lands_as_owed_rerun(race: Race, agent_version: AgentVersion, owed: QuerySet[RaceRun]) -> bool:
    """Whether a run of ``agent_version`` may land in a race that is no longer running: only
    during the embargo, as a re-run one of the ``owed`` runs (needs_rerun) calls for.

    Checked twice with narrower ``owed`` each time: at load, the runs the uploading account's
    validators owe (owed_runs_for), and at record, those the signing key's validator owes.
    Whether *some* validator owes one says its run was an infrastructure failure, a category the
    embargo withholds, so any other account must get the refusal a version whose runs all counted
    gets; and another validator's run landing during the embargo would show a visitor a new run
    (leaderboard.selectors.race.race_runs_shown lists a validator's first run of a version)."""
    return (
        race.status == Race.Status.EMBARGOED
        and owed.filter(race=race, agent_version=agent_version, needs_rerun=True).exists()
    )


def _not_running(race: Race) -> BundleError:
    return BundleError(
        "race_not_running",
        f"race run: {race} is {race.status}; results are accepted only while a race is running",
    )


def validator_keys() -> dict[str, ValidatorKey]:
    """key_id -> scope of every registered, unrevoked validator key."""
    keys = {}
    for key in SigningKey.objects.select_related("validator", "benchmark").filter(
        owner_kind=SigningKey.Owner.VALIDATOR, revoked_at__isnull=True
    ):
        assert key.validator is not None  # signing_key_has_one_owner: a validator key names its validator
        keys[key.key_id] = ValidatorKey(
            public_key=base64.b64decode(key.public_key),
            validator=key.validator.slug,
            benchmark=key.benchmark.slug if key.benchmark is not None else None,
        )
    return keys


def race_run_load(*, submission: Submission, bundle: Bundle) -> RaceContext:
    """Everything the pure evaluator needs, and the refusals only the database can make. Reads only."""
    run = bundle.race_run
    assert run is not None  # the dispatcher sends only race_run bundles here, and those carry their run
    # A race is a public competition (seed 002): every run is listed and ranked by its agent's name
    # on the race and qualifying boards, and no board honours a private flag. A private upload is
    # refused rather than ranked in public against its submitter's choice.
    if submission.is_private:
        raise BundleError(
            "race_run_private",
            "race_run.json: a race run is public (races rank every entry by name); upload it without 'private'",
        )
    release = scheme_release(
        benchmark_slug=bundle.manifest.benchmark, version=bundle.manifest.release, scheme=Benchmark.Scheme.RACE
    )
    submission.release = release
    agent_version = agent_version_find(name=run.agent.name, version=run.agent.version)
    race = _race_for(run.race, release, agent_version, submission.submitter)
    submission.race = race
    # Race entries are owned: a version runs only when its owning account entered it, in the
    # race or (a qualifying run) for the benchmark's qualifying runs. One message whether the
    # version exists or not: a refusal must not tell a validator that a private agent exists.
    if not race_version_entered(agent_version, race=race, benchmark=release.benchmark):
        where = str(race) if race is not None else f"the qualifying runs of {release.benchmark.slug}"
        raise BundleError(
            "not_entered",
            f"race_run.json: agent {agent_slug(run.agent.name)!r} version {run.agent.version[:100]!r} is not "
            f"entered in {where} by the account that owns it; its owner enters it first",
        )
    assert agent_version is not None  # _entered is False for a version that does not exist
    spec = RaceSpec(
        benchmark=release.benchmark.slug,
        race=race.number if race is not None else None,
        expected_task_ids=expected_task_ids(release=release, race=race),
        validator_keys=validator_keys(),
        filed_for=validators_acted_for(submission.submitter),
    )
    return RaceContext(release=release, race=race, agent_version=agent_version, spec=spec)


def race_version_entered(agent_version: AgentVersion | None, *, race: Race | None, benchmark: Benchmark) -> bool:
    """Whether the owner of ``agent_version`` entered it in ``race`` (a RaceEntry) or, with no
    race, registered it for ``benchmark``'s qualifying runs (a QualifyingEntry)."""
    if agent_version is None or agent_version.agent.owner_id is None:
        return False
    if race is None:
        return QualifyingEntry.objects.filter(benchmark=benchmark, agent_version=agent_version).exists()
    return RaceEntry.objects.filter(race=race, agent_version=agent_version).exists()


def race_run_evaluate(bundle: Bundle, context: RaceContext) -> RaceOutcome:
    return evaluate_race_run(bundle, context.spec)


def _refuse_own_agent(validator: Validator, agent_version: AgentVersion) -> None:
    """A validator does not score its own agents: seed 002's runs are evaluated independently,
    and the validator's signature is the whole of a race run's provenance, so a run of an agent
    owned by one of the validator's own accounts would be the entrant attesting itself."""
    owner_id = agent_version.agent.owner_id
    if owner_id is not None and validator.accounts.filter(pk=owner_id).exists():
        raise BundleError(
            "validator_conflict",
            f"race_run.json: agent {agent_version.agent.slug!r} belongs to an account that acts for validator "
            f"{validator.slug!r}, which signed this run; a validator does not score its own agents -- another "
            "validator runs it",
        )


def race_run_record(*, submission: Submission, outcome: RaceOutcome, context: RaceContext) -> RaceRun:
    """Write the accepted run, then refresh the race standings. Idempotent: ``submission`` is the
    row verification locked (select_for_update), so its ``race_run_id`` is current and a second
    run of the task finds the race run instead of writing another."""
    score = outcome.score
    assert score is not None
    key = SigningKey.objects.select_related("validator").get(key_id=outcome.key_id)
    if submission.race_run is not None:  # a null one-to-one reads no row
        return submission.race_run
    assert key.validator is not None  # a validator key (signing_key_has_one_owner), as the evaluator checked
    _refuse_own_agent(key.validator, context.agent_version)
    race = context.race
    if race is not None and race.status != Race.Status.RUNNING:
        # Past the load's check (the account's validators owe a re-run): the signer must owe it.
        owed_by_signer = RaceRun.objects.filter(validator=key.validator)
        if not _lands_as_owed_rerun(race, context.agent_version, owed_by_signer):
            raise _not_running(race)
    _refuse_second_run(validator=key.validator, context=context)
    try:
        _charge_validator(submission=submission, key=key, benchmark=context.release.benchmark)
    except QuotaExceeded as exc:
        # Raised inside the verdict's transaction: nothing of this run is written.
        raise BundleError("validator_daily_limit_reached", exc.message) from None
    run = RaceRun.objects.create(
        validator=key.validator,
        agent_version=context.agent_version,
        release=context.release,
        race=context.race,
        score=score.score,
        infrastructure_failure=score.status == race_scoring.RUN_INFRASTRUCTURE_FAILURE,
        needs_rerun=score.status == race_scoring.RUN_INFRASTRUCTURE_FAILURE,
        failed=score.status == race_scoring.RUN_FAILED,
        expected_tasks=score.expected,
        infrastructure_errors=score.infrastructure_errors,
        signing_key=key,
    )
    # Linked in the same transaction; the one-to-one's unique constraint is the backstop.
    submission.race_run = run
    submission.save(update_fields=["race_run", "updated_at"])
    rows = []
    for outcome_row in outcome.outcomes:
        category = race_scoring.failure_category(outcome_row)
        rows.append(
            RaceTaskOutcome(
                run=run,
                task_id=outcome_row.task_id,
                reward=outcome_row.reward if outcome_row.reward is not None else 0.0,
                paid_reward=race_scoring.paid_reward(outcome_row),
                verdict_status=outcome_row.verdict_status or "",
                order_placed=outcome_row.order_placed,
                agent_error=outcome_row.agent_error,
                failure_category=category.code if category else "",
                step_limit_hit=outcome_row.step_limit_hit,
                time_limit_hit=outcome_row.time_limit_hit,
                env_error=outcome_row.env_error,
                verifier_error=outcome_row.verifier_error,
            )
        )
    RaceTaskOutcome.objects.bulk_create(rows)
    if score.status != race_scoring.RUN_INFRASTRUCTURE_FAILURE:
        # A counted run settles the re-runs this validator owed this version on this race.
        RaceRun.objects.filter(
            release=context.release,
            race=context.race,
            agent_version=context.agent_version,
            validator=key.validator,
            needs_rerun=True,
        ).exclude(pk=run.pk).update(needs_rerun=False)
    race_standings_update(race=context.race)
    return run


def _refuse_second_run(*, validator: Validator, context: RaceContext) -> None:
    """One standing run per validator, agent version and race (or qualifying release):
    leaderboard.services.race_run_slots says which runs stand and why. Checked in the verdict's
    transaction under the slot's lock, so two uploads of runs of one version by one validator
    cannot both pass."""
    slot = RaceRunSlot(
        validator.pk, context.agent_version.pk, context.release.pk, context.race.pk if context.race else None
    )
    race_run_slot_lock(slot)
    standing = race_run_slot_holder(slot)
    if standing is not None:
        where = str(context.race) if context.race is not None else f"qualifying on release {context.release.version}"
        kind = "a failed run (no output; it is not run again)" if standing.failed else "a counted run"
        raise BundleError(
            "race_run_already_filed",
            f"race run: validator {validator.slug!r} already filed {kind} of {context.agent_version} in {where}; "
            "a validator runs a version once, and again only after an infrastructure failure",
        )


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


# ------------------------------------------------------------ entries and owed runs


@transaction.atomic
def race_entry_create(
    *, user: User, benchmark_slug: str, race_number: int | None, agent_name: str, agent_version: str
) -> tuple[AgentVersion, RaceEntry | None]:
    """Enter ``user``'s agent version in a race (None: register it for the benchmark's qualifying
    runs, a QualifyingEntry).

    The agent becomes ``user``'s on first use; another account's agent is ``agent_not_yours``.
    Entering twice returns the existing entry. A race that has ended takes no new entries.
    """
    # Through visibility: a benchmark with only draft releases is staff's, so an outsider is told
    # it does not exist (as its pages 404) and can probe neither it nor its race numbers.
    visible = benchmarks_visible(staff=viewer_is_staff(user))
    benchmark = visible.filter(slug=benchmark_slug, scheme=Benchmark.Scheme.RACE).first()
    if benchmark is None:
        raise BundleError("unknown_benchmark", f"benchmark: no race benchmark with slug {benchmark_slug[:64]!r}")
    race = None
    if race_number is not None:
        race = Race.objects.filter(benchmark=benchmark, number=race_number).first()
        if race is None:
            raise BundleError("unknown_race", f"race: benchmark {benchmark.slug!r} has no race number {race_number}")
        if race.status not in (Race.Status.SCHEDULED, Race.Status.RUNNING):
            raise BundleError("race_closed", f"race: {race} is {race.status}; it takes no new entries")
    version = agent_version_claim(name=agent_name, version=agent_version, account=user, where="agent_name")
    if race is None:
        QualifyingEntry.objects.get_or_create(benchmark=benchmark, agent_version=version, defaults={"entered_by": user})
        return version, None
    entry, _ = RaceEntry.objects.get_or_create(race=race, agent_version=version, defaults={"entered_by": user})
    return version, entry


def validators_acted_for(user: User) -> frozenset[str] | None:
    """Slugs of the validators whose race runs ``user`` may file. None for staff who may change
    races (``leaderboard.change_race``), who act for every validator: filing is a write, so staff
    status alone, which only reads, does not give it (leaderboard.permissions)."""
    if staff_may(user, CHANGE_RACE):
        return None
    return frozenset(user.validators.values_list("slug", flat=True))


def may_file_race_runs(user: User) -> bool:
    """Whether ``user`` may ask for race-run challenges: it acts for some validator (``validators_acted_for``)."""
    return validators_acted_for(user) != frozenset()


def acts_for_a_validator(user: User) -> bool:
    """Whether ``user`` may see owed runs at all (a read: staff see every one, ``owed_runs_for``)."""
    return viewer_is_staff(user) or user.validators.exists()


def owed_runs_for(*, user: User) -> QuerySet[RaceRun]:
    """Runs owed after an infrastructure failure and not yet filed again: every one for staff,
    else those of the validators ``user`` acts for."""
    owed = RaceRun.objects.filter(needs_rerun=True).select_related(
        "validator", "agent_version__agent", "race", "release__benchmark"
    )
    if not viewer_is_staff(user):
        owed = owed.filter(validator__accounts=user)
    return owed.order_by("race__benchmark__slug", "race__number", "agent_version__agent__slug", "pk")
