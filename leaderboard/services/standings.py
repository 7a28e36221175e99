"""Precomputed paper-gap standings (seed 000's Overall / Reproduction / Open tabs).

``standings_refresh`` rewrites every Standing row of one release from its Run
rows alone, so running it twice (or after a crash, inside its transaction)
always lands on the same rows. Pages read these rows and never aggregate.
"""

from __future__ import annotations

from typing import Any

from django.db import connections, transaction

from leaderboard.disclosure import EVALUATOR_SIGNED
from leaderboard.models import Release, Standing
from submissions.models import Run

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


def standing_sort_key(run: Run, tab: str) -> tuple[Any, ...]:
    """Best first: complete coverage, score desc, pass rate desc, earlier verified, then id.

    Seed 000: "a run is not comparable to a full run unless coverage is
    complete", so every complete run ranks above every partial one; within
    each group the tab's score decides, then the pass rate (None last), then
    who was verified first. The id only makes the order total.
    """
    score = _tab_score(run, tab)
    return (
        not run.complete,
        -(score or 0.0),
        run.pass_rate is None,
        -(run.pass_rate or 0.0),
        run.created_at,
        run.pk,
    )


def _best_runs_sql(connection: Any) -> str:
    """The query behind ``_best_runs_by_tab``, written out (see there), for ``connection``'s quoting.

    Plain SQL accepted by PostgreSQL and SQLite (>= 3.30 for NULLS LAST). Hand-written because
    this runs on every verification, and building the equivalent ORM query (three windows,
    filtered through Django's QUALIFY emulation, with select_related and only) cost more CPU
    than running it. Tables and columns come from the models, quoted by the backend.
    """
    quote = connection.ops.quote_name
    run = {name: quote(Run._meta.get_field(name).column) for name in (*RUN_FIELDS, "release", "submission")}
    run["is_private"] = quote(Run._meta.get_field("is_private").column)
    submission_model = Run._meta.get_field("submission").related_model
    result_model = Run._meta.get_field("task_results").related_model
    release_task_model = result_model._meta.get_field("release_task").related_model
    result = {name: quote(result_model._meta.get_field(name).column) for name in ("run", "release_task", "signature")}
    version_model = Run._meta.get_field("agent_version").related_model
    agent_model = version_model._meta.get_field("agent").related_model
    positions = ",\n".join(
        f"ROW_NUMBER() OVER (PARTITION BY r.{run['agent_version']} ORDER BY r.{run['complete']} DESC, "
        f"r.{run[tab]} DESC NULLS LAST, r.{run['pass_rate']} DESC NULLS LAST, r.{run['created_at']} ASC, "
        f"r.{run['id']} ASC) AS {quote('position_' + tab)}"
        for tab in TABS
    )
    columns = ", ".join(f"r.{run[name]}" for name in RUN_FIELDS)
    # Only quoted identifiers from the models are formatted in; every value is a parameter.
    return f"""
        SELECT * FROM (
            SELECT {columns},
                   av.{quote(version_model._meta.get_field("version").column)} AS {quote("standing_version")},
                   a.{quote(agent_model._meta.get_field("name").column)} AS {quote("standing_agent_name")},
                   a.{quote(agent_model._meta.get_field("slug").column)} AS {quote("standing_agent_slug")},
                   {positions}
            FROM {quote(Run._meta.db_table)} r
            JOIN {quote(submission_model._meta.db_table)} s
              ON s.{quote(submission_model._meta.pk.column)} = r.{run["submission"]}
            JOIN {quote(version_model._meta.db_table)} av
              ON av.{quote(version_model._meta.pk.column)} = r.{run["agent_version"]}
            JOIN {quote(agent_model._meta.db_table)} a
              ON a.{quote(agent_model._meta.pk.column)} = av.{quote(version_model._meta.get_field("agent").column)}
            WHERE r.{run["release"]} = %s
              AND r.{run["level"]} IN ({", ".join(["%s"] * len(LEADERBOARD_LEVELS))})
              AND r.{run["is_private"]} = %s
              AND s.{quote(submission_model._meta.get_field("is_private").column)} = %s
              AND (r.{run["overall"]} IS NOT NULL OR r.{run["reproduction"]} IS NOT NULL OR r.{run["open"]} IS NOT NULL)
              -- leaderboard.disclosure: a run with an unsigned result on a withheld-anchor task is
              -- never ranked (its scores, and so its place among others, would reveal the anchor).
              AND NOT EXISTS (
                  SELECT 1 FROM {quote(result_model._meta.db_table)} tr
                  JOIN {quote(release_task_model._meta.db_table)} rt
                    ON rt.{quote(release_task_model._meta.pk.column)} = tr.{result["release_task"]}
                  WHERE tr.{result["run"]} = r.{quote(Run._meta.pk.column)}
                    AND rt.{quote(release_task_model._meta.get_field("anchor_published").column)} = %s
                    AND tr.{result["signature"]} <> %s
              )
        ) ranked
        WHERE {" OR ".join(f"{quote('position_' + tab)} = 1" for tab in TABS)}
    """  # noqa: S608


_SQL_BY_VENDOR: dict[str, str] = {}


def _best_runs_by_tab(release: Release) -> dict[str, list[Run]]:
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
    sql = _SQL_BY_VENDOR.get(connection.vendor)
    if sql is None:
        sql = _SQL_BY_VENDOR[connection.vendor] = _best_runs_sql(connection)
    params = [release.pk, *(str(level) for level in LEADERBOARD_LEVELS), False, False, False, EVALUATOR_SIGNED]
    candidates = list(Run.objects.raw(sql, params))
    return {
        tab: sorted(
            (run for run in candidates if getattr(run, f"position_{tab}") == 1 and _tab_score(run, tab) is not None),
            key=lambda run, tab=tab: standing_sort_key(run, tab),
        )
        for tab in TABS
    }


def _interval(run: Run, tab: str) -> tuple[float | None, float | None]:
    bounds = (run.confidence or {}).get(tab)
    if not bounds or len(bounds) != 2:
        return None, None
    return bounds[0], bounds[1]


# No savepoint when nested (callers hold a transaction: verification, attestations): a failure
# here aborts the caller's whole transaction, which is what they want, for two fewer round trips.
@transaction.atomic(savepoint=False)
def standings_refresh(*, release: Release) -> int:
    """Rewrite the release's Standing rows; returns the number of rows written.

    Rows: for each tab, each agent version's best public run (validated,
    attested or verified, not private) with a score in that tab, ranked 1..n by
    ``standing_sort_key``. A version shows once per tab, with its best run,
    so resubmitting cannot crowd the board. Bumps Release.generation (cache
    keys include it). A constant number of queries whatever the run count (four);
    the release row is locked first (by the bump) so concurrent refreshes serialize.
    """
    generation = _bump_generation(release)
    best_by_tab = _best_runs_by_tab(release)
    rows: list[Standing] = []
    for tab in TABS:
        for rank, run in enumerate(best_by_tab[tab], start=1):
            low, high = _interval(run, tab)
            tokens = (
                None
                if run.tokens_in is None and run.tokens_out is None
                else (run.tokens_in or 0) + (run.tokens_out or 0)
            )
            rows.append(
                Standing(
                    release=release,
                    tab=tab,
                    run=run,
                    agent_version_id=run.agent_version_id,
                    rank=rank,
                    score=_tab_score(run, tab),
                    ci_low=low,
                    ci_high=high,
                    pass_rate=run.pass_rate,
                    covered=run.covered,
                    required=run.required,
                    complete=run.complete,
                    agent_name=run.standing_agent_name,
                    agent_slug=run.standing_agent_slug,
                    version=run.standing_version,
                    runtime_seconds=run.runtime_seconds,
                    tokens=tokens,
                    effort_tier=run.effort_tier,
                    verification=run.level,
                    verified_at=run.created_at,
                )
            )
    Standing.objects.filter(release=release).delete()
    Standing.objects.bulk_create(rows)
    release.generation = generation
    return len(rows)


def _bump_generation(release: Release) -> int:
    """Add one to Release.generation and return the new value, in one statement.

    Run first: the UPDATE takes the release row's lock until the caller's transaction
    ends, so concurrent refreshes of one release serialize (PostgreSQL; SQLite writes
    one transaction at a time anyway). UPDATE ... RETURNING: PostgreSQL, SQLite >= 3.35.
    """
    quote = connections[Release.objects.db].ops.quote_name
    column = quote(Release._meta.get_field("generation").column)
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
