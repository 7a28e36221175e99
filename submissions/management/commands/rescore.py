"""`manage.py rescore propose <benchmark> <version> [--onto <version>] [--reason ...] [--wait] | show | apply`.

Re-verify a release's stored bundles (submissions.services.rescoring): ``propose`` records the
before/after of every run without changing any (on the workers; ``--wait`` polls until the
proposal is ready, and in-process mode it is ready at once), ``show`` prints the per-run diff,
``apply`` writes the changed runs and refreshes the boards. The acting staff account is
``--as <username>`` (a staff user; actions are logged under it). ``--onto <version>`` carries the
release's runs onto a newer release of the same benchmark (corrected inputs published as a new
version) instead of rescoring them in place: ``show`` then lists the runs that cannot be carried
and why, and ``apply`` creates one run per carried run on that release.
"""

from __future__ import annotations

import time
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from leaderboard.models import Release
from submissions.models import Rescore, RescoreItem
from submissions.services.rescoring import RescoreError, rescore_apply, rescore_propose, rescore_summary


class Command(BaseCommand):
    help = "Rescore a release's stored bundles: propose (dry run), show the diff, apply."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--as", dest="username", required=True, help="the staff account acting")
        sub = parser.add_subparsers(dest="action", required=True)
        propose = sub.add_parser("propose", help="recompute every run of a release; change nothing yet")
        propose.add_argument("benchmark")
        propose.add_argument("version")
        propose.add_argument("--reason", default="", help="why (shown in each run's verification log)")
        propose.add_argument(
            "--onto", default="", metavar="VERSION", help="carry the runs onto this newer release of the benchmark"
        )
        propose.add_argument("--wait", type=int, default=0, metavar="SECONDS", help="wait for the proposal")
        show = sub.add_parser("show", help="print a rescore's per-run before/after diff")
        show.add_argument("rescore_id", type=int)
        apply = sub.add_parser("apply", help="write a proposed rescore's changes and refresh the boards")
        apply.add_argument("rescore_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"], is_staff=True, is_active=True).first()
        if user is None:
            raise CommandError(f"--as {options['username']!r}: no active staff account with that username")
        try:
            if options["action"] == "propose":
                release = (
                    Release.objects.select_related("benchmark")
                    .filter(benchmark__slug=options["benchmark"], version=options["version"])
                    .first()
                )
                if release is None:
                    raise CommandError(f"no release {options['version']!r} of benchmark {options['benchmark']!r}")
                target = None
                if options["onto"]:
                    target = Release.objects.filter(benchmark=release.benchmark, version=options["onto"]).first()
                    if target is None:
                        raise CommandError(
                            f"--onto: no release {options['onto']!r} of benchmark {options['benchmark']!r}"
                        )
                rescore = rescore_propose(release=release, user=user, reason=options["reason"], target_release=target)
                # Every item, whatever its state: with no broker the items were computed in-process
                # before this line, and counting the pending ones said "0 run(s)".
                runs = sum(rescore_summary(rescore).values())
                self.stdout.write(f"rescore {rescore.pk}: proposing for {runs} run(s)")
                deadline = time.monotonic() + options["wait"]
                while True:
                    rescore.refresh_from_db()
                    if rescore.state != Rescore.State.PROPOSING or time.monotonic() >= deadline:
                        break
                    time.sleep(1)
                self._show(rescore)
            elif options["action"] == "show":
                self._show(self._get(options["rescore_id"]))
            else:
                rescore = rescore_apply(rescore_id=options["rescore_id"], user=user)
                counts = rescore_summary(rescore)
                verb = "carried" if rescore.target_release_id else "rewritten"
                self.stdout.write(
                    f"rescore {rescore.pk} applied: {counts['applied']} run(s) {verb}, "
                    f"{counts['unchanged']} unchanged, {counts['failed']} failed or stale"
                )
        except RescoreError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from None

    def _get(self, rescore_id: int) -> Rescore:
        rescore = Rescore.objects.select_related("release", "target_release").filter(pk=rescore_id).first()
        if rescore is None:
            raise CommandError(f"rescore {rescore_id}: no such rescore")
        return rescore

    def _show(self, rescore: Rescore) -> None:
        counts = rescore_summary(rescore)
        target = rescore.target_release
        onto = f" onto release {target.version}" if target is not None else ""
        self.stdout.write(
            f"rescore {rescore.pk} of release {rescore.release.version}{onto}: {rescore.state}; "
            + ", ".join(f"{count} {state}" for state, count in counts.items() if count)
        )
        items = RescoreItem.objects.filter(rescore=rescore)
        if target is None:  # carrying lists every run: an unchanged one is still created on the target
            items = items.exclude(state=RescoreItem.State.UNCHANGED)
        for item in items:
            carried = f" -> run {item.carried_run_id}" if item.carried_run_id else ""
            self.stdout.write(f"  run {item.run_id}: {item.state}{carried}{' — ' + item.error if item.error else ''}")
            for row in item.diff:
                self.stdout.write(f"    {row['path']}: {row['before']!r} -> {row['after']!r}")
        if rescore.state == Rescore.State.PROPOSED:
            self.stdout.write(f"apply with: manage.py rescore --as <staff> apply {rescore.pk}")
