"""Who may see which release and which run: the one rule, for pages, the API and exports.

* Staff means an **active** staff account (``viewer_is_staff``): a deactivated staff
  account is an ordinary visitor, whichever way it reached the site (a session made
  before the deactivation, an API key).
* Releases: published ones for everyone; staff also see drafts. Benchmarks: those with a
  release the viewer may see (a benchmark with only drafts is staff's, its name included).
* Runs: a run is public when it is not private (``Run.is_private``: the submission is
  private, or the run is withdrawn or hidden; the submission's own flag is checked too,
  so a row written before the invariant cannot leak) and its release is published. Its
  submitter also sees it when it is private or on a draft; staff see every run.

Pages and API views never spell these conditions out: they call the functions below
(tests/leaderboard/test_visibility.py checks each with the owner, another account,
anonymous, staff and inactive staff, on the run page and the API).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.db.models import Exists, Model, OuterRef, Q, QuerySet

from leaderboard.models import Benchmark, Release

M = TypeVar("M", bound=Model)


def viewer_is_staff(user: Any) -> bool:
    """Whether ``user`` (possibly anonymous or None) is an active staff account."""
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and getattr(user, "is_staff", False)
        and getattr(user, "is_active", False)
    )


def viewer_is_submitter(submitter_id: Any, user: Any) -> bool:
    """Whether ``user`` is the signed-in account with id ``submitter_id``."""
    return bool(getattr(user, "is_authenticated", False) and submitter_id == getattr(user, "pk", None))


def releases_visible(*, staff: bool) -> QuerySet[Release]:
    """The releases a viewer may see; ``staff`` is ``viewer_is_staff(user)``."""
    releases = Release.objects.select_related("benchmark")
    return releases if staff else releases.filter(published=True)


def release_is_visible(release: Any, *, user: Any) -> bool:
    """Whether ``user`` may see ``release`` and what is built over every run of it (its board,
    its standings, a run's place in them): published, or staff (``releases_visible``'s rule for
    one row). A draft's run is visible to its submitter (a run carried onto it), its board not."""
    return bool(release.published) or viewer_is_staff(user)


def benchmarks_visible(*, staff: bool) -> QuerySet[Benchmark]:
    """The benchmarks a viewer may see: those with a release it may see. A draft's sync creates
    its benchmark row; the name and description stay staff's until a release is published."""
    if staff:
        return Benchmark.objects.all()
    return Benchmark.objects.filter(Exists(releases_visible(staff=False).filter(benchmark=OuterRef("pk"))))


def runs_public_q(prefix: str = "") -> Q:
    """The condition of a public run, on ``Run`` or through a relation (``prefix="run__"``)."""
    return Q(
        **{f"{prefix}is_private": False, f"{prefix}submission__is_private": False, f"{prefix}release__published": True}
    )


def runs_hidden_publicly_q() -> Q:
    """Runs a visitor is told staff hid (the run page's 410 with the reason): those that would be
    public but for the hide. A private, withdrawn or draft-release run that staff also hid stays
    the 404 of a run that does not exist; a 410 would confirm its id and show the reason."""
    # Not runs_public_q(): hiding sets Run.is_private itself (the invariant every public filter
    # relies on), so "public but for the hide" is the submission's privacy, the release's
    # publication and no withdrawal (which sets it too).
    return Q(hidden_at__isnull=False, withdrawn_at__isnull=True, submission__is_private=False, release__published=True)


def runs_visible_to(runs: QuerySet[M], *, user: Any) -> QuerySet[M]:
    """``runs`` (a Run queryset) narrowed to those ``user`` may see."""
    if viewer_is_staff(user):
        return runs
    if getattr(user, "is_authenticated", False):
        return runs.filter(runs_public_q() | Q(submission__submitter=user))
    return runs.filter(runs_public_q())


def run_is_visible(run: Any, *, user: Any) -> bool:
    """Whether ``user`` may see ``run`` (with its ``release`` and ``submission`` loaded)."""
    if viewer_is_staff(user) or viewer_is_submitter(run.submission.submitter_id, user):
        return True
    return not run.is_private and not run.submission.is_private and run.release.published
