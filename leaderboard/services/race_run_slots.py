"""One standing run per validator, agent version and race (or qualifying release).

Seed 002: "Multiple validators evaluate independently", and a raw score is the mean of the
validators' runs, so a validator's second run of a version would weight that mean with its
own draws. A slot is taken by a run that stands: one that counted, or one that failed (the
sandbox produced no output: seed 002 says it "fails and adds nothing"; it is not run again).
A slot is free again after an infrastructure failure (seed 002: "the evaluation is run
again") or when staff excluded the run (it counts nowhere, as if never filed).

Filing a run (submissions.services.races) and reinstating an excluded one
(leaderboard.services.race_exclusions) both take the slot's lock, then look: two of them
at once on one slot cannot both pass.
"""

from __future__ import annotations

from typing import NamedTuple

from django.db import connection

from leaderboard.models import RaceRun


class RaceRunSlot(NamedTuple):
    validator_id: int
    agent_version_id: int
    release_id: int
    race_id: int | None  # None: qualifying on the release

    @classmethod
    def of(cls, run: RaceRun) -> RaceRunSlot:
        return cls(run.validator_id, run.agent_version_id, run.release_id, run.race_id)


def race_run_slot_lock(slot: RaceRunSlot) -> None:
    """On PostgreSQL, the slot's transaction-scoped advisory lock (SQLite serializes writers)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            ["race-run:{}:{}:{}:{}".format(*slot)],
        )


def race_run_slot_holder(slot: RaceRunSlot, *, other_than: int | None = None) -> RaceRun | None:
    """The run that stands in ``slot`` (``other_than``: a run id left out), or None."""
    runs = RaceRun.objects.filter(
        validator_id=slot.validator_id,
        agent_version_id=slot.agent_version_id,
        release_id=slot.release_id,
        infrastructure_failure=False,
        excluded_at__isnull=True,
    )
    runs = runs.filter(race__isnull=True) if slot.race_id is None else runs.filter(race_id=slot.race_id)
    if other_than is not None:
        runs = runs.exclude(pk=other_than)
    return runs.order_by("pk").first()
