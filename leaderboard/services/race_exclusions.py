"""Staff exclusion of race-scheme validator runs (seed 002), the remedy for a compromised
validator key.

A paper-gap run signed by a compromised key is lowered (``run_level_change``); a race run has
no level, so before this its scores kept counting after the key's revocation. Excluding a run
keeps it listed (its page and its race's run list say "excluded by staff" with the public
reason) and takes it out of everything computed from runs: the race's raw scores, its field
baseline (the median moves), the vs-Field deltas, every Overall from that race on (the rolling
window reads those results), the qualifying score, and the validator keys a raw score names.
Reinstating undoes it. Both recompute through ``race_standings_update``, from the earliest race
they touch, so the rows are those a full rebuild (``race_standings_refresh``) writes.

Who: staff holding ``CHANGE_RUN`` (as hiding or lowering a run), or a script (``manage.py
exclude_race_runs``, no actor). docs/security-model.md; tests/schemes/test_race_exclusions.py.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard.api_query import MAX_ID
from leaderboard.models import Race, RaceRun, SigningKey
from leaderboard.permissions import CHANGE_RUN, staff_write_actor
from leaderboard.reasons import public_reason
from leaderboard.services.race_run_slots import RaceRunSlot, race_run_slot_holder, race_run_slot_lock
from leaderboard.services.race_standings import race_standings_update


class RaceExclusionError(Exception):
    """A refused exclusion or reinstatement: a stable ``code`` and a message saying what to fix."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _refuse_live_key(key_id: str) -> None:
    """Excluding by key is the race side of a compromise: only a revoked validator key's runs.
    A live key would go on filing runs that count while its earlier ones did not (the admin's
    action and ``manage.py exclude_race_runs`` both come here)."""
    key = SigningKey.objects.filter(key_id=key_id).values_list("owner_kind", "revoked_at").first()
    if key is not None and (key[0] != SigningKey.Owner.VALIDATOR or key[1] is None):
        raise RaceExclusionError(
            "key_not_revoked",
            f"key {key_id}: only a revoked validator key's race runs are excluded by key; revoke it first",
        )


def _locked(run_ids: list[int] | None, signed_by: str | None) -> list[RaceRun]:
    """The runs named (by id, or every run a validator key signed), locked, in id order;
    refuses ids that do not exist and a key that signed nothing, so a typo changes nothing."""
    if (run_ids is None) == (signed_by is None):
        raise RaceExclusionError("target_missing", "name the runs: either run ids or the key id that signed them")
    # The runs' own rows only: the key lookup's join must not lock the signing key's row.
    runs = RaceRun.objects.select_for_update(of=("self",)).order_by("pk")
    if signed_by is not None:
        found = list(runs.filter(signing_key__key_id=signed_by))
        if not found:
            raise RaceExclusionError("no_runs", f"validator key {signed_by!r} signed no race run on this site")
        return found
    assert run_ids is not None
    # An id no column can hold names no run: handed to the database it is an overflow (a 500).
    found = list(runs.filter(pk__in=[pk for pk in run_ids if 0 < pk <= MAX_ID]))
    missing = sorted(set(run_ids) - {run.pk for run in found})
    if missing:
        raise RaceExclusionError("not_found", f"no race run with id {', '.join(str(pk) for pk in missing)}")
    return found


def _recompute(runs: list[RaceRun]) -> None:
    """Recompute each benchmark's races from the earliest race ``runs`` belong to (that race's
    results and every Overall from it on). Qualifying runs (no race) are scored when read."""
    earliest: dict[int, Race] = {}
    races = Race.objects.filter(pk__in={run.race_id for run in runs if run.race_id is not None})
    for race in races.select_related("benchmark"):
        current = earliest.get(race.benchmark_id)
        if current is None or race.number < current.number:
            earliest[race.benchmark_id] = race
    for race in earliest.values():
        race_standings_update(race=race)


@transaction.atomic
def race_runs_exclude(
    *, user: Any, reason: str, run_ids: list[int] | None = None, signed_by: str | None = None
) -> list[int]:
    """Exclude race runs from every score, with a public ``reason``: the runs ``run_ids``, or every
    race run the validator key ``signed_by`` (a key id) signed. Returns the ids newly excluded
    (excluding again changes nothing, not even the reason). ``user`` None: a script."""
    actor = staff_write_actor(user, CHANGE_RUN, doing="exclude race runs from scoring")
    if signed_by is not None:
        _refuse_live_key(signed_by)
    # The runs first: a run that does not exist is not_found whatever the reason says (the page
    # form answers it 404, not a message about the reason on a page that is not there).
    runs = [run for run in _locked(run_ids, signed_by) if run.excluded_at is None]
    reason = public_reason(reason, says="why the runs no longer count", error=RaceExclusionError)
    now = timezone.now()
    for run in runs:
        run.excluded_at, run.excluded_reason, run.excluded_by = now, reason, actor
    RaceRun.objects.bulk_update(runs, ["excluded_at", "excluded_reason", "excluded_by"])
    _recompute(runs)
    return [run.pk for run in runs]


def _refuse_taken_slots(runs: list[RaceRun]) -> None:
    """A run comes back only to a free slot (leaderboard.services.race_run_slots): its validator
    may have filed the version again once it was excluded, and two standing runs of one
    validator would weight the mean. Nothing is reinstated when one of them has no slot."""
    taken, seen = [], set()
    for run in runs:  # in id order (_locked)
        if run.infrastructure_failure:
            continue  # counts nowhere: it never holds a slot
        slot = RaceRunSlot.of(run)
        race_run_slot_lock(slot)
        if slot in seen or race_run_slot_holder(slot, other_than=run.pk) is not None:
            taken.append(run)
        seen.add(slot)
    if taken:
        raise RaceExclusionError(
            "slot_taken",
            "its validator has a standing run of the same version there since (one run per validator, version and "
            f"race): exclude that one first to reinstate race run {', '.join(run.public_id for run in taken)}",
        )


@transaction.atomic
def race_runs_reinstate(*, user: Any, run_ids: list[int] | None = None, signed_by: str | None = None) -> list[int]:
    """Count excluded race runs again (a mistaken exclusion); returns the ids reinstated."""
    staff_write_actor(user, CHANGE_RUN, doing="reinstate excluded race runs")
    runs = [run for run in _locked(run_ids, signed_by) if run.excluded_at is not None]
    _refuse_taken_slots(runs)
    for run in runs:
        run.excluded_at, run.excluded_reason, run.excluded_by = None, "", None
    RaceRun.objects.bulk_update(runs, ["excluded_at", "excluded_reason", "excluded_by"])
    _recompute(runs)
    return [run.pk for run in runs]
