"""Reads for visitor pages. Selectors own select_related/prefetch and annotations."""

from __future__ import annotations

from django.db.models import QuerySet

from leaderboard.models import Benchmark


def benchmark_list_for_home() -> QuerySet[Benchmark]:
    return Benchmark.objects.prefetch_related("releases").order_by("name")
