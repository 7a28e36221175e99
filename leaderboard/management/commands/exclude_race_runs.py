"""`manage.py exclude_race_runs (--run ID ... | --signed-by KEY_ID) --reason TEXT [--reinstate]`.

After a validator key is compromised (revoke it first: a revoked key signs no later run), its
race runs stop counting: every race run it signed, or the runs named, are excluded from every
score with a public reason, and the races they belong to are recomputed from the earliest one
on (leaderboard.services.race_exclusions). ``--reinstate`` counts them again. Prints what
changed; runs already in the asked state are left as they are.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.services.race_exclusions import RaceExclusionError, race_runs_exclude, race_runs_reinstate


class Command(BaseCommand):
    help = "Exclude race runs from every score (a compromised validator key), or reinstate them."

    def add_arguments(self, parser: CommandParser) -> None:
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--run", type=int, action="append", dest="runs", metavar="ID", help="a race run id")
        target.add_argument("--signed-by", metavar="KEY_ID", help="every race run this validator key signed")
        parser.add_argument("--reason", default="", help="shown publicly on each run's page (required to exclude)")
        parser.add_argument("--reinstate", action="store_true", help="count the runs again")

    def handle(self, *args: Any, **options: Any) -> None:
        target: dict[str, Any] = {"run_ids": options["runs"], "signed_by": options["signed_by"]}
        try:
            if options["reinstate"]:
                changed = race_runs_reinstate(user=None, **target)
                verb = "reinstated"
            else:
                changed = race_runs_exclude(user=None, reason=options["reason"], **target)
                verb = "excluded"
        except RaceExclusionError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None
        ids = ", ".join(str(pk) for pk in changed) or "none (every run named was already so)"
        self.stdout.write(f"{verb} {len(changed)} race run(s): {ids}")
