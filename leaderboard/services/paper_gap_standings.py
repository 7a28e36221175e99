"""Precomputed paper-gap standings (seed 000's Overall / Reproduction / Open tabs).

Two writers, one result:

* ``standings_update_version`` -- the one verification, attestation and the
  confidence follow-up call: it brings one agent version's rows of a release
  up to date and writes only those rows (at most one per tab), so its cost
  follows what changed, not how many runs the release holds. No rank is
  stored: readers compute it from the row's columns
  (leaderboard.selectors.standing_ranks), so a new best run moves the ranks
  below it without a write to any of their rows. It runs inside the caller's
  transaction: a verdict and its board row commit together, so the board
  never shows a run whose verification rolled back nor misses one that
  committed; the release row lock it takes is held only for the last few
  milliseconds of that transaction.
* ``standings_refresh`` -- the full rebuild, for repairs (``manage.py
  rebuild_standings``): rewrites every row of a release from its Run rows.

A tab that includes a withheld-anchor task (leaderboard.disclosure.withheld_tabs) stores its
score and interval at display precision (``published_score``) and picks each version's best
run by that published value too: the exact mean would give the withheld task's final away
(``mean * n - the others``), and so would an order the published values do not explain.

Both take the release row's lock first, so writers of one release serialize;
a board read computes its ranks in the same SELECT as its rows (one snapshot),
so it never sees half-moved ranks. Both
land on the same rows (tests/submissions/test_standings.py checks the
incremental path against the rebuild after every step). Pages read these
rows and never aggregate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from django.db import connections, transaction
from django.db.models import Exists, Field, Model

from leaderboard.disclosure import (
    EVALUATOR_SIGNED,
    PUBLISHED_PLACES,
    published_bounds,
    published_score,
    withheld_tabs,
)
from leaderboard.models import Baseline, Release, ReleaseTask, Run, Standing
from scoring.leaderboard import rank_key

# Verification levels that enter a leaderboard; mismatch and rejected never do.
LEADERBOARD_LEVELS = (Run.Level.VALIDATED, Run.Level.ATTESTED, Run.Level.VERIFIED)
TABS = (Standing.Tab.OVERALL, Standing.Tab.REPRODUCTION, Standing.Tab.OPEN)
RUN_FIELDS = (
    "id",
    "agent_version",
    "level",
    "overall",
    "reproduction",
    "open",
    "pass_rate",
    "confidence",
    "covered",
    "required",
    "complete",
    "runtime_seconds",
    "tokens_in",
    "tokens_out",
    "effort_tier",
    "created_at",
)


def _tab_score(run: Run, tab: str) -> float | None:
    return {"overall": run.overall, "reproduction": run.reproduction, "open": run.open}[tab]


def standing_sort_key(run: Run, tab: str, *, rounded: bool = False) -> tuple[Any, ...]:
    """Best first, by the one ranking rule (scoring.leaderboard.rank_key): complete coverage,
    score desc, pass rate desc (None last), earlier verified, then id. ``rounded``: by the
    published score (a tab with a withheld anchor, ``release_lock_withheld_tabs``)."""
    score = _tab_score(run, tab)
    return rank_key(
        complete=run.complete,
        score=published_score(score) if rounded else score,
        pass_rate=run.pass_rate,
        verified_at=run.created_at,
        run_id=run.pk,
    )


def _column(model: type[Model], name: str) -> str:
    """The database column of ``model``'s concrete field ``name``."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field)  # every name passed here is a concrete field, not a reverse relation
    return field.column


def _related(model: type[Model], name: str) -> type[Model]:
    """The model ``model``'s relation ``name`` points at."""
    related = model._meta.get_field(name).related_model
    assert isinstance(related, type)  # a resolved model class once the app registry is ready
    return related


def release_lock_withheld_tabs(release: Release) -> frozenset[str]:
    """Lock the release row and return the tabs whose scores are published at display precision
    (a withheld anchor), read in the same statement.

    The lock is ``Release.objects.select_for_update().filter(pk=...)``'s (FOR UPDATE where the
    backend has it; SQLite locks the whole database on the first write), on the release row
    only (FOR UPDATE OF it: the joined task rows are read, not locked); ``published`` is the
    locked row's. One written-out statement: every standings writer takes the lock and then
    needs these tabs, on every verification and interval, and two statements (or the ORM's
    compile) cost more CPU than the join."""
    connection = connections[Release.objects.db]
    quote = connection.ops.quote_name
    features = connection.features
    lock = (
        " FOR UPDATE OF r"
        if features.has_select_for_update_of
        else " FOR UPDATE"
        if features.has_select_for_update
        else ""
    )
    genre, anchor_published = (quote(_column(ReleaseTask, name)) for name in ("genre", "anchor_published"))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT r.{quote(_column(Release, 'published'))}, t.{genre}, t.{anchor_published} "  # noqa: S608 -- identifiers only
            f"FROM {quote(Release._meta.db_table)} r LEFT JOIN {quote(ReleaseTask._meta.db_table)} t "
            f"ON t.{quote(_column(ReleaseTask, 'release'))} = r.{quote(Release._meta.pk.column)} "
            f"WHERE r.{quote(Release._meta.pk.column)} = %s{lock}",
            [release.pk],
        )
        rows = cursor.fetchall()
    published = bool(rows[0][0]) if rows else bool(release.published)
    return withheld_tabs(
        {_TaskFlags(genre=str(name), anchor_published=bool(flag)) for _, name, flag in rows if name is not None},
        release_published=published,
    )


@dataclass(frozen=True)
class _TaskFlags:
    """What ``withheld_tabs`` reads of a ReleaseTask."""

    genre: str
    anchor_published: bool


def tab_withheld_exists(release: Release, tab: str) -> Exists:
    """``release_lock_withheld_tabs``'s rule for one tab, as a subquery a read can annotate its rows
    with (no query of its own): a task of the tab whose anchor is not public exists."""
    tasks = ReleaseTask.objects.filter(release_id=release.pk)
    if release.published:  # a draft release shows no anchor (withheld_tabs)
        tasks = tasks.filter(anchor_published=False)
    if tab != "overall":
        tasks = tasks.filter(genre=tab)
    return Exists(tasks)


# The SQLite function standing in for PostgreSQL's round(x::numeric, 2) (registered on every
# SQLite connection by leaderboard.apps), so both backends order by ``published_score``'s value.
SQLITE_PUBLISHED_SCORE = "podium_published_score"


def _published_sql(connection: Any, expression: str) -> str:
    """SQL for ``published_score(expression)`` on ``connection``'s backend."""
    if connection.vendor == "postgresql":
        return f"ROUND(CAST({expression} AS numeric), {PUBLISHED_PLACES})"
    return f"{SQLITE_PUBLISHED_SCORE}({expression})"


def _best_runs_sql(connection: Any, *, one_version: bool = False, rounded: frozenset[str] = frozenset()) -> str:
    """The query behind ``_best_runs_by_tab``, written out (see there), for ``connection``'s quoting;
    with ``one_version``, restricted to one agent version (its id the second parameter), for
    ``_version_runs``; the tabs in ``rounded`` order by the published score.

    Plain SQL accepted by PostgreSQL and SQLite (>= 3.30 for NULLS LAST). Hand-written because
    this runs on every verification, and building the equivalent ORM query (three windows,
    filtered through Django's QUALIFY emulation, with select_related and only) cost more CPU
    than running it. Tables and columns come from the models, quoted by the backend.
    """
    quote = connection.ops.quote_name
    run = {name: quote(_column(Run, name)) for name in (*RUN_FIELDS, "release")}
    run["is_private"] = quote(_column(Run, "is_private"))
    submission_model = _related(Run, "submission")
    result_model = _related(Run, "task_results")
    release_task_model = _related(result_model, "release_task")
    result = {name: quote(_column(result_model, name)) for name in ("run", "release_task", "signature")}
    version_model = _related(Run, "agent_version")
    agent_model = _related(version_model, "agent")
    scores = {tab: _published_sql(connection, f"r.{run[tab]}") if tab in rounded else f"r.{run[tab]}" for tab in TABS}
    positions = ",\n".join(
        f"ROW_NUMBER() OVER (PARTITION BY r.{run['agent_version']} ORDER BY r.{run['complete']} DESC, "
        f"{scores[tab]} DESC NULLS LAST, r.{run['pass_rate']} DESC NULLS LAST, r.{run['created_at']} ASC, "
        f"r.{run['id']} ASC) AS {quote('position_' + tab)}"
        for tab in TABS
    )
    columns = ", ".join(f"r.{run[name]}" for name in RUN_FIELDS)
    # Only quoted identifiers from the models are formatted in; every value is a parameter.
    return f"""
        SELECT * FROM (
            SELECT {columns},
                   av.{quote(_column(version_model, "version"))} AS {quote("standing_version")},
                   a.{quote(_column(agent_model, "name"))} AS {quote("standing_agent_name")},
                   a.{quote(_column(agent_model, "slug"))} AS {quote("standing_agent_slug")},
                   {positions}
            FROM {quote(Run._meta.db_table)} r
            JOIN {quote(submission_model._meta.db_table)} s
              ON s.{quote(_column(submission_model, "run"))} = r.{run["id"]}
            JOIN {quote(version_model._meta.db_table)} av
              ON av.{quote(version_model._meta.pk.column)} = r.{run["agent_version"]}
            JOIN {quote(agent_model._meta.db_table)} a
              ON a.{quote(agent_model._meta.pk.column)} = av.{quote(_column(version_model, "agent"))}
            WHERE r.{run["release"]} = %s{f" AND r.{run['agent_version']} = %s" if one_version else ""}
              AND r.{run["level"]} IN ({", ".join(["%s"] * len(LEADERBOARD_LEVELS))})
              AND r.{run["is_private"]} = %s
              AND s.{quote(_column(submission_model, "is_private"))} = %s
              AND (r.{run["overall"]} IS NOT NULL OR r.{run["reproduction"]} IS NOT NULL OR r.{run["open"]} IS NOT NULL)
              -- leaderboard.disclosure: a run with an unsigned result on a withheld-anchor task is
              -- never ranked (its scores, and so its place among others, would reveal the anchor).
              AND NOT EXISTS (
                  SELECT 1 FROM {quote(result_model._meta.db_table)} tr
                  JOIN {quote(release_task_model._meta.db_table)} rt
                    ON rt.{quote(release_task_model._meta.pk.column)} = tr.{result["release_task"]}
                  WHERE tr.{result["run"]} = r.{quote(Run._meta.pk.column)}
                    AND rt.{quote(_column(release_task_model, "anchor_published"))} = %s
                    AND tr.{result["signature"]} <> %s
              )
              -- A reference baseline (leaderboard.models.Baseline) is shown apart, never ranked.
              AND NOT EXISTS (
                  SELECT 1 FROM {quote(Baseline._meta.db_table)} bl
                  WHERE bl.{quote(_column(Baseline, "agent_version"))} = r.{run["agent_version"]}
              )
        ) ranked
        WHERE {" OR ".join(f"{quote('position_' + tab)} = 1" for tab in TABS)}
    """  # noqa: S608


_SQL_BY_VENDOR: dict[tuple[str, bool, frozenset[str]], str] = {}


def _best_runs_by_tab(release: Release, rounded: frozenset[str]) -> dict[str, list[Run]]:
    """For each tab, each agent version's best public run with a score in that tab, ranked by
    ``standing_sort_key``.

    Public: validated, attested or verified, neither the run nor its submission private, and no
    result whose scores leaderboard.disclosure withholds (unsigned, on a withheld-anchor task).
    One query for the three tabs: a window per tab numbers each agent version's runs in that
    tab's order (``standing_sort_key``'s, a run without a score in the tab last), and a run is
    loaded when it is first in at least one tab. The first run of a partition has a score in
    the tab whenever any run of that version does, so "first and scored" picks the same run
    as filtering the scored runs first. A release with thousands of runs still loads at most
    one row per agent version and tab, and only the columns a standing shows (never the
    large per-task breakdown).
    """
    connection = connections[Run.objects.db]
    sql = _best_runs_query(connection, one_version=False, rounded=rounded)
    params = [release.pk, *(str(level) for level in LEADERBOARD_LEVELS), False, False, False, EVALUATOR_SIGNED]
    candidates = list(Run.objects.raw(sql, params))
    return {
        tab: sorted(
            (run for run in candidates if getattr(run, f"position_{tab}") == 1 and _tab_score(run, tab) is not None),
            key=partial(standing_sort_key, tab=tab, rounded=tab in rounded),
        )
        for tab in TABS
    }


def _best_runs_query(connection: Any, *, one_version: bool, rounded: frozenset[str]) -> str:
    """``_best_runs_sql``, built once per backend and shape."""
    key = (connection.vendor, one_version, rounded)
    sql = _SQL_BY_VENDOR.get(key)
    if sql is None:
        sql = _SQL_BY_VENDOR[key] = _best_runs_sql(connection, one_version=one_version, rounded=rounded)
    return sql


def _interval(run: Run, tab: str, *, rounded: bool = False) -> tuple[float | None, float | None]:
    bounds = (run.confidence or {}).get(tab)
    if not bounds or len(bounds) != 2:
        return None, None
    low, high = published_bounds(bounds) if rounded else bounds
    return low, high


# No savepoint when nested (callers hold a transaction: verification, attestations): a failure
# here aborts the caller's whole transaction, which is what they want, for two fewer round trips.
@transaction.atomic(savepoint=False)
def standings_refresh(*, release: Release) -> int:
    """Rewrite the release's Standing rows; returns the number of rows written.

    Rows: for each tab, each agent version's best public run (validated,
    attested or verified, not private) with a score in that tab (readers rank them
    by ``standing_sort_key``'s order). A version shows once per tab, with its best run,
    so resubmitting cannot crowd the board. Bumps Release.generation (cache
    keys include it). A constant number of queries whatever the run count (five);
    the release row is locked first so concurrent refreshes serialize.
    """
    rounded = release_lock_withheld_tabs(release)
    generation = _bump_generation(release)
    best_by_tab = _best_runs_by_tab(release, rounded)
    rows: list[Standing] = []
    for tab in TABS:
        rows.extend(
            Standing(release=release, tab=tab, **_standing_fields(run, tab, rounded=tab in rounded))
            for run in best_by_tab[tab]
        )
    Standing.objects.filter(release=release).delete()
    Standing.objects.bulk_create(rows)
    release.generation = generation
    return len(rows)


def _standing_fields(run: Run, tab: str, *, rounded: bool) -> dict[str, Any]:
    """Every column of a run's Standing row in ``tab`` except release and tab; ``rounded``: the
    score and interval at display precision (``release_lock_withheld_tabs``).

    ``run`` carries ``standing_agent_name``, ``standing_agent_slug`` and ``standing_version``
    (the raw query's columns, or set by ``_version_runs``)."""
    low, high = _interval(run, tab, rounded=rounded)
    score = _tab_score(run, tab)
    tokens = None if run.tokens_in is None and run.tokens_out is None else (run.tokens_in or 0) + (run.tokens_out or 0)
    return {
        "run_id": run.pk,
        "agent_version_id": run.agent_version_id,
        "score": published_score(score) if rounded else score,
        "ci_low": low,
        "ci_high": high,
        "pass_rate": run.pass_rate,
        "covered": run.covered,
        "required": run.required,
        "complete": run.complete,
        # Columns the raw query adds to each Run (see _best_runs_sql), unknown to the model.
        "agent_name": run.standing_agent_name,  # type: ignore[attr-defined]
        "agent_slug": run.standing_agent_slug,  # type: ignore[attr-defined]
        "version": run.standing_version,  # type: ignore[attr-defined]
        "runtime_seconds": run.runtime_seconds,
        "tokens": tokens,
        "effort_tier": run.effort_tier,
        "verification": run.level,
        "verified_at": run.created_at,
    }


# The columns of a Standing row that decide its rank (standing_sort_key's, as stored).
_ORDER_FIELDS = ("complete", "score", "pass_rate", "verified_at", "run_id")


def _version_runs(release: Release, agent_version_id: int, rounded: frozenset[str]) -> list[Run]:
    """One agent version's best public, rankable scored run per tab in a release (a run first in at
    least one tab: ``_best_runs_by_tab``'s query, restricted to the version; ``position_<tab>`` set).

    The same written-out SQL as the full rebuild: building the equivalent ORM query (an Exists
    subquery, select_related, only) on every verification cost more CPU than running it.
    """
    connection = connections[Run.objects.db]
    sql = _best_runs_query(connection, one_version=True, rounded=rounded)
    params = [
        release.pk,
        agent_version_id,
        *(str(level) for level in LEADERBOARD_LEVELS),
        False,
        False,
        False,
        EVALUATOR_SIGNED,
    ]
    return list(Run.objects.raw(sql, params))


def standings_update_version(*, release: Release, agent_version_id: int) -> int:
    """Bring one agent version's Standing rows of a release up to date (after one of its runs was
    recorded, attested, given its interval, or hidden); returns how many rows changed.

    For each tab: the version's best public run (as ``standings_refresh`` picks it) replaces its
    row, or its row leaves the board when it has none, and nothing else is written (ranks are
    computed when read, so the rows a new place moves are not touched). A row identical to what
    it would be is not written at all. Release.generation is bumped only
    when something changed, so a run that changes nothing shown leaves every cached page valid.
    A constant number of queries per tab whatever the number of runs in the release.
    """
    with transaction.atomic(savepoint=False):
        # The release row lock: concurrent writers of this release's standings serialize. Plain
        # SQL: the ORM query's compile (and its default ordering's joins) cost more than the lock.
        rounded = release_lock_withheld_tabs(release)
        runs = _version_runs(release, agent_version_id, rounded)
        # No ordering: a version has one row per tab (this module writes them so), and the rank
        # order's compile (its expressions, the release's joins) cost more than the query.
        current = {
            row.tab: row
            for row in Standing.objects.filter(release=release, agent_version_id=agent_version_id).order_by()
        }
        changed = 0
        for tab in TABS:
            # Position 1 in the tab's order (the query's window) and a score in the tab: the
            # version's best run there, as _best_runs_by_tab picks it.
            best = next(
                (run for run in runs if getattr(run, f"position_{tab}") == 1 and _tab_score(run, tab) is not None),
                None,
            )
            fields = None if best is None else _standing_fields(best, tab, rounded=tab in rounded)
            changed += _move_row(release, tab, current.get(tab), fields)
        if changed:
            release.generation = _bump_generation(release)
        return changed


def standings_set_interval(*, release: Release, run: Run) -> int:
    """Put ``run``'s (new) interval on its own Standing rows of ``release``; returns how many changed.

    The interval follow-up's write: an interval never decides a rank (``_ORDER_FIELDS``), so
    only the rows showing this run change, and only their ci columns: one UPDATE instead of
    re-deriving the version's best runs (``standings_update_version`` lands on the same rows).
    The release row lock is taken first, as every standings writer does, so a concurrent
    ``standings_update_version`` either ran before (its row is updated here) or runs after and
    reads the committed interval. Release.generation is bumped only when a row changed.
    """
    if not run.confidence:
        return 0  # no interval: no row changes (checked before the lock, which it would not need)
    with transaction.atomic(savepoint=False):
        rounded = release_lock_withheld_tabs(release)
        bounds = {str(tab): _interval(run, tab, rounded=tab in rounded) for tab in TABS}
        changing = {tab: pair for tab, pair in bounds.items() if pair != (None, None)}
        if not changing:
            return 0
        # Plain SQL, here too: the ORM's Case/When compile, and that of the lock's query, cost
        # more CPU than the statements themselves.
        connection = connections[Standing.objects.db]
        quote = connection.ops.quote_name
        table, tab, low, high = (quote(name) for name in (Standing._meta.db_table, "tab", "ci_low", "ci_high"))
        when = " ".join(f"WHEN {tab} = %s THEN %s" for _ in changing)
        placeholders = ", ".join(["%s"] * len(changing))
        params: list[Any] = []
        for name, (value, _) in changing.items():
            params += [name, value]
        for name, (_, value) in changing.items():
            params += [name, value]
        params += [release.pk, run.pk, *changing]
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET {low} = CASE {when} END, {high} = CASE {when} END "  # noqa: S608 -- identifiers only
                f"WHERE {quote(_column(Standing, 'release'))} = %s "
                f"AND {quote(_column(Standing, 'run'))} = %s AND {tab} IN ({placeholders})",
                params,
            )
            changed = cursor.rowcount
        if changed:
            release.generation = _bump_generation(release)
        return int(changed)


def _move_row(release: Release, tab: str, row: Standing | None, fields: dict[str, Any] | None) -> int:
    """Make a version's row of one tab show ``fields`` (None: off the board); returns 0 or 1.

    One statement at most: no other row changes, since no rank is stored."""
    if fields is None:
        if row is None:
            return 0
        row.delete()
        return 1
    if row is None:
        Standing.objects.create(release=release, tab=tab, **fields)
        return 1
    if all(getattr(row, name) == value for name, value in fields.items()):
        return 0  # nothing shown changes
    Standing.objects.filter(pk=row.pk).update(**fields)
    return 1


def _bump_generation(release: Release) -> int:
    """Add one to Release.generation and return the new value, in one statement.

    Run first: the UPDATE takes the release row's lock until the caller's transaction
    ends, so concurrent refreshes of one release serialize (PostgreSQL; SQLite writes
    one transaction at a time anyway). UPDATE ... RETURNING: PostgreSQL, SQLite >= 3.35.
    """
    quote = connections[Release.objects.db].ops.quote_name
    column = quote(_column(Release, "generation"))
    with connections[Release.objects.db].cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(Release._meta.db_table)} SET {column} = {column} + 1 "  # noqa: S608 -- identifiers only
            f"WHERE {quote(Release._meta.pk.column)} = %s RETURNING {column}",
            [release.pk],
        )
        row = cursor.fetchone()
    if row is None:
        raise Release.DoesNotExist(f"release {release.pk} does not exist")
    return int(row[0])
