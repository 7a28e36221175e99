"""What a scheme board says about where its numbers come from (scorecard and race
boards showed no verification signal although validator runs are signed).

Kept apart from leaderboard.selectors.scorecard and .race so the scheme pages only gain a context entry.
Each function is one query, whatever the number of runs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Max, Q

from leaderboard.models import RaceRun
from leaderboard.selectors.race import race_runs_shown
from leaderboard.users import Viewer


@dataclass(frozen=True)
class SignerKey:
    key_id: str
    revoked_at: dt.datetime | None  # revoked since it signed (its runs count unless staff excluded them)


@dataclass
class ValidatorSigner:
    """One validator behind a race's results: its name, the keys it signed with, its runs."""

    name: str
    keys: list[SignerKey] = field(default_factory=list)
    signed_runs: int = 0
    unsigned_runs: int = 0
    excluded_runs: int = 0  # of those, excluded by staff (leaderboard.services.race_exclusions)


@dataclass
class RaceSignals:
    validators: list[ValidatorSigner]
    signed_runs: int
    unsigned_runs: int
    updated_at: dt.datetime | None  # the newest validator run reported for the race

    @property
    def all_signed(self) -> bool:
        return self.unsigned_runs == 0 and self.signed_runs > 0


def race_signals(*, race: Any, user: Viewer | None = None) -> RaceSignals | None:
    """Who signed the validator runs of ``race`` that ``user`` may know of (None without a race).
    Names and key ids only: nothing of a run's outcome, so an embargoed race shows no more than
    its run list does (the same runs: ``race_runs_shown``)."""
    if race is None:
        return None

    return _signals(race_runs_shown(RaceRun.objects.filter(race=race), race=race, user=user))


def qualifying_signals(*, release: Any) -> RaceSignals | None:
    """The same for the qualifying runs of a race benchmark's release (runs outside any race)."""
    if release is None:
        return None

    return _signals(RaceRun.objects.filter(release=release, race__isnull=True))


def _signals(runs: Any) -> RaceSignals:
    rows = (
        runs.values("validator__name", "signing_key__key_id", "signing_key__revoked_at")
        .annotate(runs=Count("id"), excluded=Count("id", filter=Q(excluded_at__isnull=False)), newest=Max("created_at"))
        .order_by("validator__name", "signing_key__key_id")
    )
    by_name: dict[str, ValidatorSigner] = {}
    newest: dt.datetime | None = None
    for row in rows:
        signer = by_name.setdefault(row["validator__name"], ValidatorSigner(name=row["validator__name"]))
        if row["signing_key__key_id"]:
            signer.keys.append(SignerKey(row["signing_key__key_id"], row["signing_key__revoked_at"]))
            signer.signed_runs += row["runs"]
        else:
            signer.unsigned_runs += row["runs"]
        signer.excluded_runs += row["excluded"]
        if row["newest"] is not None and (newest is None or row["newest"] > newest):
            newest = row["newest"]
    validators = list(by_name.values())
    return RaceSignals(
        validators=validators,
        signed_runs=sum(v.signed_runs for v in validators),
        unsigned_runs=sum(v.unsigned_runs for v in validators),
        updated_at=newest,
    )


def scorecard_updated_at(rows: list[Any]) -> dt.datetime | None:
    """The newest card on a scorecard board (from the rows already read: no query)."""
    stamps = [getattr(row.card, "created_at", None) for row in rows]
    return max((s for s in stamps if s is not None), default=None)
