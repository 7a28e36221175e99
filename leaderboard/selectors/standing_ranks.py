"""A Standing row's rank, computed when it is read (never stored).

A stored rank made every new best run renumber the rows below it: at 100,000 rows
in a release, one verification updated about 100,000 rows per tab (issue 14). The
rank is the row's place in ``RANK_ORDER`` within its release and tab, which the
columns of the row already decide, so readers compute it in the query that reads
the rows (no extra query, so the pinned query counts hold):

* ``rank_by_window`` numbers the rows with ROW_NUMBER() over the release and tab.
  Only right when nothing but release and tab (and ``complete``) filters the rows:
  a window numbers the rows its query keeps. With the index on ``RANK_ORDER``
  (Standing.Meta.indexes) a page in rank order reads its rows in index order and
  stops at the page's end.
* ``rank_by_count`` is 1 + the number of rows of the same release and tab that
  sort before the row (a correlated count): right whatever else filters the rows
  (search, declared organisation, verification level), at a cost per row that
  grows with its rank, so it serves filtered views.

Both give exactly the order ``leaderboard.services.paper_gap_standings.standing_sort_key``
ranks by (complete first, score desc, pass rate desc with None last, verified
first, run id), so ranks are distinct 1..n in every tab, as when they were stored.
``with_rank`` picks between the two.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, Window
from django.db.models.functions import Coalesce, RowNumber
from django.db.models.lookups import Exact, IsNull

from leaderboard.models import Standing
from leaderboard.models.standings import PASS_RATE_OR_NONE_LAST

# standing_sort_key's order, as Standing columns, written so one index (Standing.Meta.indexes,
# "standing_rank_order") serves it on PostgreSQL and SQLite alike: a row always has a score (a
# run without a score in a tab has no row there), and a pass rate is a fraction in [0, 1], so
# COALESCE(pass_rate, -1) DESC is "pass rate desc, None last" without NULLS LAST, which SQLite
# cannot put in an index. The final run_id makes the order total.
RANK_ORDER = (
    F("complete").desc(),
    F("score").desc(),
    PASS_RATE_OR_NONE_LAST.desc(),
    F("verified_at").asc(),
    F("run_id").asc(),
)


def rank_by_window() -> Window:
    """ROW_NUMBER() over the row's release and tab in ``RANK_ORDER`` (see the module docstring)."""
    return Window(RowNumber(), partition_by=[F("release_id"), F("tab")], order_by=list(RANK_ORDER))


def _sorts_before() -> Q:
    """Rows of the outer row's release and tab that ``RANK_ORDER`` puts before it."""
    outer = {name: OuterRef(name) for name in ("complete", "score", "pass_rate", "verified_at", "run_id")}
    outer_partial = Q(Exact(outer["complete"], False))
    outer_pass_missing = Q(IsNull(outer["pass_rate"], True))
    later = Q(verified_at__lt=outer["verified_at"]) | Q(verified_at=outer["verified_at"], run_id__lt=outer["run_id"])
    # pass rate desc with None last: a row with a pass rate beats one without; two without tie.
    pass_better = Q(pass_rate__gt=outer["pass_rate"]) | (Q(pass_rate__isnull=False) & outer_pass_missing)
    pass_equal = Q(pass_rate=outer["pass_rate"]) | (Q(pass_rate__isnull=True) & outer_pass_missing)
    same_score = Q(score=outer["score"]) & (pass_better | (pass_equal & later))
    return (Q(complete=True) & outer_partial) | (
        Q(complete=outer["complete"]) & (Q(score__gt=outer["score"]) | same_score)
    )


def rank_by_count() -> Any:
    """1 + the rows of the same release and tab sorting before this one (see the module docstring)."""
    before = (
        Standing.objects.filter(release_id=OuterRef("release_id"), tab=OuterRef("tab"))
        .filter(_sorts_before())
        .order_by()
        .values("release_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Coalesce(Subquery(before, output_field=IntegerField()), Value(0)) + 1


def with_rank(rows: QuerySet[Standing], *, whole_tab: bool) -> QuerySet[Standing]:
    """``rows`` with ``rank`` annotated: by window when ``whole_tab`` (nothing but the release, the tab
    and ``complete`` filters them: complete rows rank before every partial one, so keeping only them
    keeps their numbers), else by count. Apply every filter before this call."""
    # no-redef: Standing declares ``rank`` for type checking only; this is where it is set.
    return rows.annotate(rank=rank_by_window() if whole_tab else rank_by_count())  # type: ignore[no-redef]


def standings_ranked() -> QuerySet[Standing]:
    """Every Standing row with its rank by count: right whatever filters follow (a window would
    number only the rows they keep), at a cost per row that grows with its rank; for small reads
    (one run's rows, a test's board)."""
    return Standing.objects.annotate(rank=rank_by_count())  # type: ignore[no-redef]  # see with_rank
