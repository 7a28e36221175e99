"""Reads of releases: the scoring spec of a release, version order, a benchmark's releases.

``release_spec`` is the only place the database turns anchors into a
``scoring.gap.ReleaseSpec``; the spec stays on the server (worker, bundle
checks) and is never rendered.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.db import connections
from django.db.models import Field, Model
from django.db.models.functions import Coalesce
from django.http import Http404

from leaderboard.models import Benchmark, Release, ReleaseTask, Task
from leaderboard.selectors.visibility import benchmarks_visible, releases_visible
from scoring.errors import ScoringError
from scoring.gap import ReleaseSpec, TaskSpec

__all__ = [
    "benchmark_of_scheme",
    "release_list_for_benchmark",
    "release_previous",
    "release_spec",
    "release_spec_by_id",
    "release_task_simulator",
    "unknown_release_message",
    "version_key",
]


def benchmark_of_scheme(slug: str, scheme: str, *, staff: bool) -> Benchmark:
    """The benchmark ``slug`` of ``scheme`` (a scorecard or race page's address), or 404: also for a
    benchmark this viewer may not see (only draft releases), as for one that does not exist."""
    benchmark = benchmarks_visible(staff=staff).filter(slug=slug, scheme=scheme).first()
    if benchmark is None:
        raise Http404(f"No {scheme} benchmark {slug!r}")
    return benchmark


def unknown_release_message(benchmark_slug: str, version: str, *, where: str = "manifest") -> str:
    """The one answer for a release a submitter may not use: it does not exist, is not
    published, or is of another benchmark. One wording for all, so an error never tells
    an outsider which unpublished versions exist; the published ones, public anyway, are listed
    so a typo can be fixed from the message."""
    published = list(
        Release.objects.filter(benchmark__slug=benchmark_slug, published=True)
        .order_by("-published_at", "-id")
        .values_list("version", flat=True)[:10]
    )
    known = f" (published: {', '.join(published)})" if published else ""
    return f"{where}: benchmark {benchmark_slug!r} has no published release {version!r} on this server{known}"


# The ReleaseTask columns a scoring spec is built from, in the order release_spec_from_rows reads them.
RELEASE_SPEC_COLUMNS = ("task__slug", "genre", "metric_direction", "paper_value", "score_cap", "penalties")


def release_task_simulator() -> Coalesce:
    """A ReleaseTask's simulator as its release snapshotted it (the evaluator whose keys may sign
    its results), for ``.annotate``: the shared Task row's simulator is the newest release's, and
    a newer release moving the task to another simulator must not change who signs an older one.
    Rows written before snapshots fall back to the task's."""
    return Coalesce("simulator__simulator", "task__simulator__simulator")


def release_spec(release: Release) -> ReleaseSpec:
    """The scoring spec of ``release`` from its ReleaseTask rows (one query).

    Raises ScoringError naming the tasks that have no anchor (paper_value
    null): they cannot be scored. The message never carries an anchor.
    """
    return release_spec_from_rows(
        release, ReleaseTask.objects.filter(release=release).values_list(*RELEASE_SPEC_COLUMNS)
    )


# Specs built by release_spec_by_id, per release id: (the policy and the exact rows read, the
# spec built from them). A hit needs the very same rows, so a re-synced or edited release can
# never be served a stale spec; the key is the content, not a version stamp a writer could forget.
_SPEC_MEMO: dict[int, tuple[tuple[Any, ...], ReleaseSpec]] = {}
# More releases than a worker ever scores in one life; past it the memo starts afresh.
_SPEC_MEMO_MAX = 256


def release_spec_by_id(release_id: int, missing_task_policy: str) -> ReleaseSpec:
    """:func:`release_spec` of the release ``release_id`` (whose missing-task policy the caller
    read with it), for the interval follow-up: one plain SQL query, and the spec is built only
    when those rows differ from the ones it was last built from.

    The rows are read on every call (the memo is keyed by their whole content: anchors, caps,
    penalties as stored), so the result is always the release's current spec. The returned
    spec may be shared between calls: treat it as read-only. Raises ScoringError as
    :func:`release_spec` does (nothing is memoised then).
    """
    connection = connections[ReleaseTask.objects.db]
    with connection.cursor() as cursor:
        cursor.execute(_spec_rows_sql(connection), [release_id])
        rows = tuple(cursor.fetchall())
    key = (missing_task_policy, rows)
    memo = _SPEC_MEMO.get(release_id)
    if memo is not None and memo[0] == key:
        return memo[1]
    # The JSON column comes back as text from a plain cursor (both backends): decoded here as
    # the ORM's JSONField would.
    parsed = [(*row[:5], json.loads(row[5]) if isinstance(row[5], str | bytes) else row[5]) for row in rows]
    spec = release_spec_from_rows(Release(pk=release_id, missing_task_policy=missing_task_policy), parsed)
    if len(_SPEC_MEMO) >= _SPEC_MEMO_MAX:
        _SPEC_MEMO.clear()
    _SPEC_MEMO[release_id] = (key, spec)
    return spec


def _spec_rows_sql(connection: Any) -> str:
    """RELEASE_SPEC_COLUMNS of one release's ReleaseTask rows, in slug order, as plain SQL: the ORM
    compile of the same query (a join and the model's ordering) cost more CPU than running it."""
    quote = connection.ops.quote_name

    def column(model: type[Model], name: str) -> str:
        field = model._meta.get_field(name)
        assert isinstance(field, Field)  # concrete fields only, never a reverse relation
        return quote(field.column)

    slug = f"t.{column(Task, 'slug')}"
    return (
        f"SELECT {slug}, "  # noqa: S608 -- identifiers only
        + ", ".join(f"rt.{column(ReleaseTask, field)}" for field in RELEASE_SPEC_COLUMNS[1:])
        + f" FROM {quote(ReleaseTask._meta.db_table)} rt JOIN {quote(Task._meta.db_table)} t"
        f" ON t.{column(Task, 'id')} = rt.{column(ReleaseTask, 'task')}"
        f" WHERE rt.{column(ReleaseTask, 'release')} = %s ORDER BY {slug}"
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
