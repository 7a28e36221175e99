"""`manage.py exclude_race_runs (--run ID ... | --signed-by KEY_ID) --reason TEXT [--reinstate]`.

A run is named by the id in its address, /races/runs/<ID>/ (its public id, not a row number).

After a validator key is compromised (revoke it first: a revoked key signs no later run), its
race runs stop counting: every race run it signed, or the runs named, are excluded from every
score with a public reason, and the races they belong to are recomputed from the earliest one
on (leaderboard.services.race_exclusions). ``--reinstate`` counts them again. Prints what
changed; runs already in the asked state are left as they are.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.models import RaceRun
from leaderboard.selectors.race import race_run_row_id
from leaderboard.services.race_exclusions import RaceExclusionError, race_runs_exclude, race_runs_reinstate


class Command(BaseCommand):
    help = "Exclude race runs from every score (a compromised validator key), or reinstate them."

    def add_arguments(self, parser: CommandParser) -> None:
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument(
            "--run", action="append", dest="runs", metavar="ID", help="a race run, by the ID in /races/runs/ID/"
        )
        target.add_argument("--signed-by", metavar="KEY_ID", help="every race run this validator key signed")
        parser.add_argument("--reason", default="", help="shown publicly on each run's page (required to exclude)")
        parser.add_argument("--reinstate", action="store_true", help="count the runs again")

    def handle(self, *args: Any, **options: Any) -> None:
        target: dict[str, Any] = {"run_ids": _row_ids(options["runs"]), "signed_by": options["signed_by"]}
        try:
            if options["reinstate"]:
                changed = race_runs_reinstate(user=None, **target)
                verb = "reinstated"
            else:
                changed = race_runs_exclude(user=None, reason=options["reason"], **target)
                verb = "excluded"
        except RaceExclusionError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        addresses = RaceRun.objects.filter(pk__in=changed).order_by("pk").values_list("public_id", flat=True)
        ids = ", ".join(addresses) or "none (every run named was already so)"
        self.stdout.write(f"{verb} {len(changed)} race run(s): {ids}")


def _row_ids(addresses: list[str] | None) -> list[int] | None:
    """The row ids of the runs named by their public ids; refuses one that names no run."""
    if addresses is None:
        return None
    ids = {address: race_run_row_id(public_id=address) for address in addresses}
    missing = [address for address, pk in ids.items() if pk is None]
    if missing:
        raise CommandError(f"not_found: no race run with id {', '.join(missing)}")
    return [pk for pk in ids.values() if pk is not None]
