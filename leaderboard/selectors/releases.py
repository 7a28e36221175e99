"""Reads of releases: the scoring spec of a release, version order, a benchmark's releases.

``release_spec`` is the only place the database turns anchors into a
``scoring.gap.ReleaseSpec``; the spec stays on the server (worker, bundle
checks) and is never rendered.
"""

from __future__ import annotations

import re
from typing import Any

from django.http import Http404

from leaderboard.models import Benchmark, Release, ReleaseTask
from leaderboard.selectors.visibility import releases_visible
from scoring.errors import ScoringError
from scoring.gap import ReleaseSpec, TaskSpec

__all__ = [
    "benchmark_of_scheme",
    "release_list_for_benchmark",
    "release_previous",
    "release_spec",
    "unknown_release_message",
    "version_key",
]


def benchmark_of_scheme(slug: str, scheme: str) -> Benchmark:
    """The benchmark ``slug`` of ``scheme`` (a scorecard or race page's address), or 404."""
    benchmark = Benchmark.objects.filter(slug=slug, scheme=scheme).first()
    if benchmark is None:
        raise Http404(f"No {scheme} benchmark {slug!r}")
    return benchmark


def unknown_release_message(benchmark_slug: str, version: str, *, where: str = "manifest") -> str:
    """The one answer for a release a submitter may not use: it does not exist, is not
    published, or is of another benchmark. One wording for all, so an error never tells
    an outsider which unpublished versions exist."""
    return f"{where}: benchmark {benchmark_slug!r} has no published release {version!r} on this server"


# The ReleaseTask columns a scoring spec is built from, in the order release_spec_from_rows reads them.
RELEASE_SPEC_COLUMNS = ("task__slug", "genre", "metric_direction", "paper_value", "score_cap", "penalties")


def release_spec(release: Release) -> ReleaseSpec:
    """The scoring spec of ``release`` from its ReleaseTask rows (one query).

    Raises ScoringError naming the tasks that have no anchor (paper_value
    null): they cannot be scored. The message never carries an anchor.
    """
    return release_spec_from_rows(
        release, ReleaseTask.objects.filter(release=release).values_list(*RELEASE_SPEC_COLUMNS)
    )


def release_spec_from_rows(release: Release, rows: Any) -> ReleaseSpec:
    """:func:`release_spec` from rows a caller already read: each starts with RELEASE_SPEC_COLUMNS
    (further columns it asked for in the same query are ignored)."""
    rows = [row[: len(RELEASE_SPEC_COLUMNS)] for row in rows]
    missing = sorted(slug for slug, _, _, value, _, _ in rows if value is None)
    if missing:
        raise ScoringError(f"release {release.pk}: tasks without an anchor cannot be scored: {', '.join(missing)}")
    tasks = {
        slug: TaskSpec(
            slug=slug,
            genre=genre,
            direction=direction,
            paper_value=value,
            cap=cap,
            penalties={entry["metric"]: entry["limit"] for entry in penalties or []},
        )
        for slug, genre, direction, value, cap, penalties in rows
        if value is not None  # every row: `missing` above is empty
    }
    return ReleaseSpec(tasks=tasks, missing_task_policy=release.missing_task_policy)


def version_key(version: str) -> tuple[tuple[int, int | str], ...]:
    """Order versions naturally: "0.4" < "0.5" < "0.10" < "1.0"; words sort after numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"[.\-_+]", version))


def release_list_for_benchmark(benchmark: Benchmark, *, published_only: bool = True) -> list[Release]:
    """The benchmark's releases, newest version first (one query)."""
    releases = Release.objects.filter(benchmark=benchmark).select_related("benchmark")
    if published_only:
        releases = releases.filter(published=True)
    return sorted(releases, key=lambda release: version_key(release.version), reverse=True)


def release_previous(release: Release, *, staff: bool = True) -> Release | None:
    """The release of the same benchmark with the next lower version among those the viewer
    may see (leaderboard.selectors.visibility: a draft is never a visitor's previous release),
    or None: the one rule for "the previous release" of the admin and the public release page.
    One query."""
    candidates = releases_visible(staff=staff).filter(benchmark_id=release.benchmark_id).exclude(pk=release.pk)
    mine = version_key(release.version)
    older = [other for other in candidates if version_key(other.version) < mine]
    return max(older, key=lambda other: version_key(other.version), default=None)
