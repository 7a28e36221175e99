"""`manage.py signed_result_digests backfill [--dry-run] [--batch-size N]`.

Stores the ``SignedResultDigest`` rows of podium-bundle/1 runs accepted before verification kept
them (submissions migration 0003), so each of their evaluator-signed result documents is accepted
once like any later one (submissions.services.signed_result_digests). Safe to run again; prints
each skipped submission with its reason code and each signed result already accepted twice, then
one summary line, and exits non-zero when a submission was skipped for an error.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from submissions import site_keys
from submissions.services.signed_result_digests import BackfillReport, signed_result_digests_backfill


class Command(BaseCommand):
    help = "Backfill the signed result digests of podium-bundle/1 runs accepted before they were kept."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        backfill = sub.add_parser(
            "backfill", help="re-open accepted podium-bundle/1 bundles that have no digest rows and store them"
        )
        backfill.add_argument("--dry-run", action="store_true", help="open and check every bundle; write nothing")
        backfill.add_argument(
            "--batch-size", type=int, default=100, help="submissions read from the database at a time (default 100)"
        )

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        batch_size = options["batch_size"]
        if batch_size < 1:
            raise CommandError(f"--batch-size {batch_size}: must be at least 1")
        try:
            site_keys.site_keys()  # no keyring: nothing could be opened, say so once
        except site_keys.SiteKeyError as exc:
            raise CommandError(str(exc)) from None
        report = signed_result_digests_backfill(dry_run=options["dry_run"], batch_size=batch_size)
        self._print(report)
        if report.errors:
            raise CommandError(
                f"{report.errors} submission(s) skipped for an error; fix them (see above) and run it again"
            )

    def _print(self, report: BackfillReport) -> None:
        for skip in report.skipped:
            kind = "error" if skip.error else "skipped"
            detail = f" ({skip.detail})" if skip.detail else ""
            self.stdout.write(f"{kind}: submission {skip.submission_id}: {skip.reason}{detail}")
        for duplicate in report.duplicates:
            others = ", ".join(str(other) for other in duplicate.other_ids)
            self.stdout.write(
                f"already duplicated: submission {duplicate.submission_id}: signed result {duplicate.digest} "
                f"was also accepted for submission {others}"
            )
        stored = "would backfill" if report.dry_run else "backfilled"
        errors = f" ({report.errors} for an error)" if report.errors else ""
        self.stdout.write(
            ("dry run, nothing written: " if report.dry_run else "")
            + f"signed result digests: checked {report.checked}, {stored} {report.backfilled} "
            f"({report.digests} digest(s)), skipped {len(report.skipped)}{errors}, "
            f"already duplicated {report.duplicated_submissions}"
        )
