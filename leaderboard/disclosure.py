"""What of a paper-gap run may be shown, and to whom: the one rule every surface applies.

A task's anchor (``paper_value``) may be withheld (seed 003: "The agent never
receives the anchor"). The per-task gap is ``measured / anchor`` (or
``anchor / measured``), so anyone who knows the measured value and sees the gap
can divide and recover the anchor; the run's macro means give the same away
(``mean * n - the other tasks' finals``), and so do the confidence intervals and
the ranks built on them. Two facts decide what is shown:

* **Who knows the measured value.** The run's submitter always does (it is in
  their bundle); staff may see everything. Anyone else learns it only from us,
  so a withheld task's ``measured`` is shown to the submitter and staff only,
  and so are its gap, score and final: a measured value is often guessable
  without being shown (a success rate over N episodes is some k / N, and N is
  public), and then a full-precision gap gives the anchor away to whoever tries
  each whole k (issue note, stop 20: recovered from public gaps of the demo).
* **Who chose it.** When a registered evaluator key signed the result
  (``TaskResult.signature == "valid"``), the measured value came from the
  evaluator on hidden seeds; the submitter can divide, but that is inherent to
  publishing a score at all (docs/security-model.md) and teaches them nothing
  they could steer. When the result is unsigned (or signed by an unknown key) the
  submitter *chose* the measured value, and every anchor-derived number of that
  task (gap, score, final), and every aggregate that includes it (Overall, its
  genre's score, their intervals and ranks), is an anchor oracle: it is shown to
  staff only, to nobody else, the submitter included.

Even a signed run's aggregates are an oracle at full precision: where a tab's mean includes
one withheld-anchor task and the others are public, ``mean * n - others`` is that task's final,
and a guessable measured value (k / N) then gives the anchor. So an aggregate that includes a
task whose scores the viewer may not see is published at display precision
(``published_score``: two decimals, the seeds' own), on the run's pages and API, and on the
boards, which store and rank by that published value (leaderboard.services.paper_gap_standings).

A mismatch diff is the same oracle before any run exists, and the server does
not keep which results were signed for a refused bundle, so a submission's diff
hides the recomputed anchor-derived values of *every* withheld task of its
release (and the aggregates of their genres and Overall), naming the field only.
Pure functions over rows the callers already loaded, except ``submission_disclosure``
(one query for the release's tasks).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Any

from leaderboard.models import ReleaseTask
from leaderboard.selectors.visibility import viewer_is_staff as _is_staff
from leaderboard.selectors.visibility import viewer_is_submitter
from leaderboard.users import Viewer
from scoring import gap

# TaskResult.signature of a result a registered evaluator key signed.
EVALUATOR_SIGNED = "valid"
# Per-task breakdown fields computed from the anchor, and the aggregates that average task
# finals: scoring's facts (verification reads them too, for claims a submitter cannot make).
ANCHOR_DERIVED_TASK_FIELDS = gap.ANCHOR_DERIVED_TASK_FIELDS
SCORE_AGGREGATES = gap.SCORE_AGGREGATES
# Decimals an aggregate that includes a withheld-anchor task is published to: the seeds' display
# precision (seed 000's worked example: 0.90, 0.54, 1.12), which every page shows anyway. Finer
# would narrow the anchor (mean * n - the other finals); coarser would blur the board.
PUBLISHED_PLACES = 2
# What pages and the API say in place of a withheld value.
WITHHELD_SCORE_REASON = (
    "withheld: the task's anchor is not published, and this number would reveal it (measured / gap); "
    "it is shown to the run's submitter (for an evaluator-signed result) and staff only"
)


def round_half_away(value: float, places: int) -> Decimal:
    """A finite ``value`` at ``places`` decimals exactly as PostgreSQL's ``round(value::numeric,
    places)`` computes it: the double's 15 significant digits (``DBL_DIG``, the float8 to numeric
    cast), then half away from zero. Python's ``round`` and format round the double itself, so a
    stored 0.7875 (a hair below) would print 0.787."""
    with localcontext() as context:
        # Enough digits for any finite double (1e308 has 309 before the point): quantize raises
        # rather than round when the result would not fit the context's precision.
        context.prec = 309 + places + 1
        return Decimal(format(value, ".15g")).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def published_score(value: float | None) -> float | None:
    """``value`` at ``PUBLISHED_PLACES`` decimals, exactly as PostgreSQL's
    ``round(value::numeric, 2)`` computes it (the boards order by that in SQL,
    leaderboard.services.paper_gap_standings): the double's 15 significant digits
    (``DBL_DIG``, the float8 to numeric cast), then half away from zero. Python's ``round``
    would differ at ties (0.125 gives 0.12), and a board must never rank by one value and show
    another."""
    if value is None or not math.isfinite(value):
        return value  # nothing to round (a recomputed score is finite; a claim is strict JSON)
    return float(round_half_away(value, PUBLISHED_PLACES))


def published_bounds(bounds: Any) -> Any:
    """An interval (``[low, high]``) with each numeric bound at display precision; anything else
    as it is. A bound is a percentile of resampled means, as telling as the mean itself."""
    if not isinstance(bounds, list | tuple):
        return bounds
    return [published_score(b) if isinstance(b, int | float) and not isinstance(b, bool) else b for b in bounds]


@dataclass(frozen=True)
class Disclosure:
    """What one viewer may not see of one run (or one submission's diff).

    ``measured_hidden``: task slugs whose measured value is hidden; ``scores_hidden``:
    task slugs whose gap/score/final are hidden; ``aggregates_hidden``: which of
    Overall/Reproduction/Open (with their intervals and ranks) are hidden; ``aggregates_rounded``:
    which are shown, with their intervals, only at ``PUBLISHED_PLACES`` (they include a task
    whose scores are hidden, so full precision would give its final away). ``all_tasks``
    hides every task's scores (a diff whose release is unknown: fail closed).
    """

    measured_hidden: frozenset[str] = frozenset()
    scores_hidden: frozenset[str] = frozenset()
    aggregates_hidden: frozenset[str] = frozenset()
    aggregates_rounded: frozenset[str] = frozenset()
    all_tasks: bool = False

    @property
    def anything_hidden(self) -> bool:
        return bool(
            self.measured_hidden
            or self.scores_hidden
            or self.aggregates_hidden
            or self.aggregates_rounded
            or self.all_tasks
        )

    def task_scores_hidden(self, slug: str) -> bool:
        return self.all_tasks or slug in self.scores_hidden

    def hidden_task_fields(self, slug: str) -> list[str]:
        """The per-task fields of ``slug`` this viewer may not see, sorted."""
        fields = set(ANCHOR_DERIVED_TASK_FIELDS) if self.task_scores_hidden(slug) else set()
        if slug in self.measured_hidden:
            fields.add("measured")
        return sorted(fields)

    def aggregate(self, name: str, value: float | None) -> float | None:
        """An aggregate score as this viewer may see it: None when hidden, at display
        precision when it includes a task whose scores are hidden."""
        if name in self.aggregates_hidden:
            return None
        return published_score(value) if name in self.aggregates_rounded else value

    def confidence(self, confidence: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run.confidence without the intervals of hidden aggregates, and with the bounds of
        rounded ones at display precision (``published_bounds``)."""
        return {
            name: published_bounds(bounds) if name in self.aggregates_rounded else bounds
            for name, bounds in (confidence or {}).items()
            if name not in self.aggregates_hidden
        }

    def hides_path(self, path: str) -> bool:
        """True when a breakdown path (``tasks.<slug>.gap``, ``aggregates.overall``...) is, or
        contains, a value this viewer may not see. Ancestors of a hidden leaf count too: a
        diff row for a whole missing subtree carries every leaf below it."""
        parts = path.split(".") if path else []
        if not parts:
            return self.anything_hidden
        head = parts[0]
        if head == "tasks":
            if len(parts) == 1:
                return bool(self.measured_hidden or self.scores_hidden or self.all_tasks)
            slug = parts[1]
            if len(parts) == 2:
                return bool(self.hidden_task_fields(slug))
            return parts[2] in self.hidden_task_fields(slug)
        if head == "aggregates":
            if len(parts) == 1:
                # A whole missing "aggregates" object carries every aggregate at full precision.
                return bool(self.aggregates_hidden or self.aggregates_rounded)
            return parts[1] in self.aggregates_hidden
        # Anything else is outside the breakdown's shape: only the claim has it (the recomputation
        # has nothing there to reveal), so it is shown as it is.
        return False

    def redact_diff(self, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Diff rows with every hidden value replaced: the field is named, its values are not.

        The claimed value is the submitter's own, but a row's claimed value is dropped with the
        recomputed one so no page has to decide which of the two columns is safe.
        """
        out: list[dict[str, Any]] = []
        for row in rows:
            item = dict(row)
            path = str(item.get("path", ""))
            if self.hides_path(path):
                item.update(claimed=None, recomputed=None, withheld=True)
            elif path.startswith("aggregates.") and path.split(".")[1] in self.aggregates_rounded:
                # Both columns: a claim that matched within tolerance is the exact mean too.
                item.update({key: _published_leaf(item.get(key)) for key in ("claimed", "recomputed")})
            out.append(item)
        return out


def _published_leaf(value: Any) -> Any:
    """A diff leaf at display precision when it is a number (a missing one stays None)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None if isinstance(value, Mapping | list) else value
    return published_score(float(value))


NOTHING_HIDDEN = Disclosure()


def anchor_is_public(*, release_published: bool, anchor_published: bool) -> bool:
    """Whether a task's anchor may be shown to anyone but staff: its release is published and
    publishes it. A draft release's anchors count as withheld whatever its tasks' flags say."""
    return release_published and anchor_published


def shown_anchor(release_task: Any, *, release_published: bool, staff: bool) -> float | None:
    """The anchor of ``release_task`` its viewer may see (the run page and its export): the one
    the task publishes, on a published release; staff also see a draft's. A draft's run is
    visible to its submitter (a run carried onto it), but not the draft's anchors."""
    return release_task.public_paper_value if release_published or staff else None


def result_reveals_anchor(*, anchor_published: bool, signature: str) -> bool:
    """True when showing this task result's scores would let whoever chose its measured value
    divide out the anchor: the anchor is withheld and no registered evaluator key signed it."""
    return not anchor_published and signature != EVALUATOR_SIGNED


def run_disclosure(run: Any, *, user: Viewer | None, task_results: Sequence[Any] | None = None) -> Disclosure:
    """What ``user`` may not see of ``run``. ``task_results`` (or ``run.task_results.all()``,
    prefetched with ``release_task__task``) must be the run's complete results."""
    if _is_staff(user):
        return NOTHING_HIDDEN
    results = list(run.task_results.all()) if task_results is None else list(task_results)
    sees_measured = viewer_is_submitter(run.submission.submitter_id, user)
    # A draft release shows no anchor to anyone but staff, whatever its tasks' flags say.
    release_published = bool(run.release.published)
    measured_hidden: set[str] = set()
    scores_hidden: set[str] = set()
    genres: set[str] = set()
    chosen = False
    for result in results:
        release_task = result.release_task
        slug = release_task.task.slug
        anchor_public = anchor_is_public(
            release_published=release_published, anchor_published=release_task.anchor_published
        )
        if not anchor_public and not sees_measured:
            # The task's scores go with its measured value: a success rate over a known number
            # of episodes is k / N, so a full-precision gap (k / N / anchor) pins the anchor for
            # whoever tries each whole k, with no measured value in hand.
            measured_hidden.add(slug)
            scores_hidden.add(slug)
        if result_reveals_anchor(anchor_published=anchor_public, signature=result.signature):
            scores_hidden.add(slug)
            chosen = True
            genres.add(release_task.genre)
    # A chosen measured value makes the aggregates that include it an oracle too (for everyone but
    # staff); an evaluator's keeps them public, as seed 000 publishes a run's score, but only at
    # display precision when they include a task whose final this viewer may not see.
    aggregates = {"overall", *genres} if chosen else set()
    rounded_genres = {result.release_task.genre for result in results if result.release_task.task.slug in scores_hidden}
    rounded = ({"overall", *rounded_genres} if rounded_genres else set()) - aggregates
    return Disclosure(
        measured_hidden=frozenset(measured_hidden),
        scores_hidden=frozenset(scores_hidden),
        aggregates_hidden=frozenset(aggregates),
        aggregates_rounded=frozenset(rounded),
    )


def withheld_tabs(release_tasks: Iterable[Any], *, release_published: bool) -> frozenset[str]:
    """The board tabs (overall and the genres) of a release that include a task whose anchor is
    not public: a board publishes its scores at display precision (``published_score``) and ranks
    by that. ``release_tasks`` need ``genre`` and ``anchor_published`` only."""
    genres = {
        rt.genre
        for rt in release_tasks
        if not anchor_is_public(release_published=release_published, anchor_published=rt.anchor_published)
    }
    return frozenset({"overall", *genres}) if genres else frozenset()


def release_diff_disclosure(release_tasks: Iterable[Any] | None, *, user: Viewer | None) -> Disclosure:
    """What ``user`` may not see of a submission's claimed-versus-recomputed diff.

    ``release_tasks`` are the ReleaseTask rows (with ``task``) of the submission's release,
    or None when the release is unknown (every task's scores are then hidden: fail closed).
    """
    if _is_staff(user):
        return NOTHING_HIDDEN
    if release_tasks is None:
        return Disclosure(all_tasks=True, aggregates_hidden=frozenset(SCORE_AGGREGATES))
    withheld = [rt for rt in release_tasks if not rt.anchor_published]
    if not withheld:
        return NOTHING_HIDDEN
    return Disclosure(
        scores_hidden=frozenset(rt.task.slug for rt in withheld),
        aggregates_hidden=frozenset({"overall", *(rt.genre for rt in withheld)}),
    )


def diff_message(rows: Sequence[Mapping[str, Any]]) -> str:
    """The mismatch message, rebuilt from (redacted) diff rows so it can never carry a hidden
    value whatever the verifier wrote: it names the first differing field and shows its values
    only when they are not withheld."""
    differing = [row for row in rows if row.get("status") != "match"]
    if not differing:
        return ""
    first = differing[0]
    if first.get("withheld"):
        detail = f"first: {first.get('path')}, values withheld because they would reveal a withheld anchor"
    else:
        detail = f"first: {first.get('path')} claimed {first.get('claimed')!r}, recomputed {first.get('recomputed')!r}"
    return f"score_breakdown.json: {len(differing)} claimed value(s) differ from the recomputation ({detail})"


def submission_disclosure(submission: Any, *, user: Viewer | None) -> Disclosure:
    """The diff rule for one submission (one query for its release's tasks)."""
    if _is_staff(user):
        return NOTHING_HIDDEN
    if submission.release_id is None:
        return release_diff_disclosure(None, user=user) if submission.diff else NOTHING_HIDDEN
    release_tasks = ReleaseTask.objects.filter(release_id=submission.release_id).select_related("task")
    return release_diff_disclosure(list(release_tasks), user=user)


@dataclass(frozen=True)
class SubmissionView:
    """A submission's diff and message as its viewer may see them."""

    diff: list[dict[str, Any]]
    message: str


def submission_view(submission: Any, *, user: Viewer | None) -> SubmissionView:
    """The diff (redacted) and the message (rebuilt for a mismatch) of ``submission`` for ``user``:
    what the upload page, its live status JSON and the API show."""
    rows = submission.diff if isinstance(submission.diff, list) else []
    rows = [row for row in rows if isinstance(row, Mapping)]
    if not rows:
        return SubmissionView(diff=[], message=submission.error_message)
    disclosure = submission_disclosure(submission, user=user)
    redacted = disclosure.redact_diff(rows)
    message = submission.error_message
    if submission.verdict == "mismatch" and any(row.get("withheld") for row in redacted):
        # The verifier's message quotes a differing field's values; once any field is withheld the
        # message is rebuilt from the redacted rows so it cannot quote a withheld one.
        message = diff_message(redacted)
    return SubmissionView(diff=redacted, message=message)
