"""The one release diff: what changed between two releases of a benchmark.

The admin's release page and the public release page both render
:func:`release_diff`, so they list the same changes; they differ only in
what they may say about anchors. Rules kept here:

* penalties are compared as a set of (metric, limit) pairs: the manifest
  refuses a metric declared twice and scoring reads them as a mapping, so
  listing the same penalties in another order changes nothing;
* an anchor value is printed only to staff (``show_anchors``) or when both
  releases publish it: a withheld anchor is never derivable from a diff;
* nor is whether a withheld anchor changed: "unchanged" would tell a visitor
  that a withheld value equals the previous one (published, or withheld but
  compared by an earlier diff), so for a task whose anchor is withheld in either
  release, or whose release is a draft, the visitor always gets the same row,
  "anchor withheld in <versions>; not compared", whether or not it changed.
  Staff get the exact comparison.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from leaderboard.disclosure import anchor_is_public
from leaderboard.models import Release, ReleaseTask

__all__ = ["AnchorChange", "DiffEntry", "FieldChange", "ReleaseDiff", "TaskChange", "release_diff", "release_diff_rows"]

_ANCHOR_STATE = {True: "published", False: "withheld"}


def _fmt(value: float | None) -> str:
    return "null" if value is None else f"{value:g}"


@dataclass(frozen=True)
class AnchorChange:
    """One task's anchor in the two releases. ``old_published``/``new_published`` are the
    tasks' flags; ``withheld_in`` are the versions (oldest first) whose anchor a visitor may
    not see: the flag is off or the release is a draft."""

    slug: str
    old: float | None
    new: float | None
    old_published: bool
    new_published: bool
    withheld_in: tuple[str, ...] = ()

    def shows_values(self, *, show_anchors: bool) -> bool:
        return show_anchors or not self.withheld_in

    def listed(self, *, show_anchors: bool) -> bool:
        """Whether this viewer gets a row for the anchor. Where the values may be compared only
        a change is listed; where they may not, listing only a change would tell whether a
        withheld value equals the other one, so the row is always there."""
        if not self.shows_values(show_anchors=show_anchors):
            return True
        return self.old != self.new or self.old_published != self.new_published

    def _not_compared(self) -> str:
        return f"anchor withheld in {' and '.join(self.withheld_in)}; not compared"

    def line(self, *, show_anchors: bool) -> str:
        """The admin's wording: "anchor changed: <slug>: old -> new"."""
        if not self.shows_values(show_anchors=show_anchors):
            return f"{self._not_compared()}: {self.slug}"
        if self.old == self.new:
            return f"anchor {_ANCHOR_STATE[self.old_published]} -> {_ANCHOR_STATE[self.new_published]}: {self.slug}"
        return f"anchor changed: {self.slug}: {_fmt(self.old)} -> {_fmt(self.new)}"

    def detail(self, *, show_anchors: bool) -> str:
        """The release page's wording: "anchor changed from old to new"."""
        if not self.shows_values(show_anchors=show_anchors):
            return self._not_compared()
        if self.old == self.new:
            return f"anchor {_ANCHOR_STATE[self.new_published]}"
        return f"anchor changed from {_fmt(self.old)} to {_fmt(self.new)}"


@dataclass(frozen=True)
class FieldChange:
    """A scoring field of one task that changed; ``old``/``new`` are None when not worth printing."""

    slug: str
    name: str
    old: str | None = None
    new: str | None = None

    def line(self) -> str:
        values = f": {self.old} -> {self.new}" if self.old is not None else ""
        return f"{self.name} changed: {self.slug}{values}"

    def detail(self) -> str:
        values = f" from {self.old} to {self.new}" if self.old is not None else ""
        return f"{self.name} changed{values}"


@dataclass
class TaskChange:
    slug: str
    title: str
    change: str  # "added" | "removed" | "changed"
    anchor: AnchorChange | None = None
    fields: list[FieldChange] = field(default_factory=list)

    def listed(self, *, show_anchors: bool) -> bool:
        """Whether this viewer gets a row: an anchor staff see unchanged is no change to them."""
        if self.change != "changed" or self.fields:
            return True
        return self.anchor is not None and self.anchor.listed(show_anchors=show_anchors)

    def label(self, *, show_anchors: bool) -> str:
        """The row's kind; "withheld" when its only news is an anchor this viewer may not
        compare, which may well be unchanged, so "changed" would not be true."""
        if self.change != "changed" or self.fields or self.anchor is None:
            return self.change
        return self.change if self.anchor.shows_values(show_anchors=show_anchors) else "withheld"


@dataclass(frozen=True)
class DiffEntry:
    """One row of the release page's change list."""

    slug: str
    title: str
    change: str  # "added" | "removed" | "changed" | "withheld"
    details: list[str]


@dataclass
class ReleaseDiff:
    """What changed from ``old_version`` to ``new_version`` of one benchmark's release."""

    old_version: str | None
    new_version: str
    tasks: list[TaskChange] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def _slugs(self, change: str) -> list[str]:
        return [task.slug for task in self.tasks if task.change == change]

    @property
    def added(self) -> list[str]:
        return self._slugs("added")

    @property
    def removed(self) -> list[str]:
        return self._slugs("removed")

    @property
    def anchors(self) -> list[AnchorChange]:
        return [task.anchor for task in self.tasks if task.anchor is not None]

    @property
    def is_empty(self) -> bool:
        return not (self.tasks or self.other)

    def lines(self, *, show_anchors: bool = False) -> list[str]:
        """The admin's lines: added, removed, anchors, then the other changes."""
        out = [f"task added: {slug}" for slug in self.added]
        out += [f"task removed: {slug}" for slug in self.removed]
        out += [
            change.line(show_anchors=show_anchors)
            for change in self.anchors
            if change.listed(show_anchors=show_anchors)
        ]
        out += [change.line() for task in self.tasks for change in task.fields]
        return out + self.other

    def entries(self, *, show_anchors: bool = False) -> list[DiffEntry]:
        """The release page's rows, one per task, with the same changes as :meth:`lines`."""
        return [
            DiffEntry(
                slug=task.slug,
                title=task.title,
                change=task.label(show_anchors=show_anchors),
                details=[
                    *(
                        [task.anchor.detail(show_anchors=show_anchors)]
                        if task.anchor and task.anchor.listed(show_anchors=show_anchors)
                        else []
                    ),
                    *(change.detail() for change in task.fields),
                ],
            )
            for task in self.tasks
            if task.listed(show_anchors=show_anchors)
        ]


def _penalties(row: ReleaseTask) -> list[tuple[str, float]]:
    return sorted((p["metric"], float(p["limit"])) for p in row.penalties or [])


def _task_change(old: Release, new: Release, before: ReleaseTask, after: ReleaseTask) -> TaskChange | None:
    slug = after.task.slug
    change = TaskChange(slug=slug, title=after.title, change="changed")
    withheld_in = tuple(
        release.version
        for release, row in ((old, before), (new, after))
        if not anchor_is_public(release_published=release.published, anchor_published=row.anchor_published)
    )
    # Kept even when nothing changed if a visitor may not compare: AnchorChange.listed decides per viewer.
    if withheld_in or before.paper_value != after.paper_value or before.anchor_published != after.anchor_published:
        change.anchor = AnchorChange(
            slug, before.paper_value, after.paper_value, before.anchor_published, after.anchor_published, withheld_in
        )
    if before.score_cap != after.score_cap:
        change.fields.append(FieldChange(slug, "score cap", f"{before.score_cap:g}", f"{after.score_cap:g}"))
    if _penalties(before) != _penalties(after):
        change.fields.append(FieldChange(slug, "penalties"))
    if before.genre != after.genre:
        change.fields.append(FieldChange(slug, "genre", before.genre, after.genre))
    if before.metric_direction != after.metric_direction:
        change.fields.append(FieldChange(slug, "metric direction", before.metric_direction, after.metric_direction))
    return change if change.anchor or change.fields else None


def release_diff_rows(
    old: Release | None, new: Release, *, old_rows: Iterable[ReleaseTask], new_rows: Iterable[ReleaseTask]
) -> ReleaseDiff:
    """The diff over release-task rows already loaded (each with its ``task``)."""
    before = {row.task.slug: row for row in old_rows}
    after = {row.task.slug: row for row in new_rows}
    diff = ReleaseDiff(old_version=old.version if old else None, new_version=new.version)
    diff.tasks += [TaskChange(slug, after[slug].title, "added") for slug in sorted(after.keys() - before.keys())]
    diff.tasks += [TaskChange(slug, before[slug].title, "removed") for slug in sorted(before.keys() - after.keys())]
    if old is None:  # a first release: every task is added, none is compared
        return diff
    for slug in sorted(after.keys() & before.keys()):
        change = _task_change(old, new, before[slug], after[slug])
        if change is not None:
            diff.tasks.append(change)
    if old.missing_task_policy != new.missing_task_policy:
        diff.other.append(f"missing_task_policy changed: {old.missing_task_policy} -> {new.missing_task_policy}")
    return diff


def _rows(release: Release) -> list[ReleaseTask]:
    return list(release.release_tasks.select_related("task"))


def release_diff(old: Release | None, new: Release) -> ReleaseDiff:
    """Tasks added/removed, anchors changed and per-task scoring changes between two releases."""
    return release_diff_rows(old, new, old_rows=_rows(old) if old else [], new_rows=_rows(new))
