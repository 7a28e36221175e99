"""`manage.py rebuild_standings [--benchmark SLUG]`: rewrite every precomputed board from the run rows.

For repairs only: verification keeps the boards up to date incrementally (only what a
run changes). Rebuilds every release of a paper-gap or scorecard benchmark and every race
of a race benchmark, each in its own transaction (a board stays readable meanwhile), and
prints what it wrote. Safe to run any number of times, and while workers verify: each
rebuild takes the same lock as the incremental updates.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.models import Benchmark, Release
from leaderboard.services.paper_gap_standings import standings_refresh
from leaderboard.services.race_standings import race_standings_refresh
from leaderboard.services.scorecard_standings import scorecard_standings_refresh


class Command(BaseCommand):
    help = "Rebuild the precomputed leaderboards (standings) of every benchmark, or of one, from the runs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--benchmark", default="", help="only this benchmark (its slug)")

    def handle(self, *args: Any, **options: Any) -> None:
        benchmarks = Benchmark.objects.order_by("slug")
        if options["benchmark"]:
            benchmarks = benchmarks.filter(slug=options["benchmark"])
            if not benchmarks.exists():
                raise CommandError(f"--benchmark {options['benchmark']!r}: no benchmark has this slug")
        for benchmark in benchmarks:
            if benchmark.scheme == Benchmark.Scheme.RACE:
                race_standings_refresh(benchmark=benchmark)
                self.stdout.write(f"{benchmark.slug}: every started race rebuilt")
                continue
            for release in Release.objects.filter(benchmark=benchmark).order_by("pk"):
                if benchmark.scheme == Benchmark.Scheme.PAPER_GAP:
                    rows = standings_refresh(release=release)
                else:
                    rows = scorecard_standings_refresh(release=release)
                self.stdout.write(f"{benchmark.slug} {release.version}: {rows} standing rows")
