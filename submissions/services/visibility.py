"""Withdraw and hide: take a run off the public boards, or put it back.

* The submitter may **withdraw** their own run (and restore it later). A withdrawn run leaves
  every public board, list and export; its page stays visible to its submitter and staff,
  marked withdrawn. To everyone else it is as if it were private (404), because withdrawing
  is the submitter's own choice and owes the public no explanation.
* Staff may **hide** any run with a public **reason** (and unhide it). The run leaves every
  public surface; its page answers everyone else 410 Gone with the reason and nothing of the
  run's scores, so a visitor following an old link learns why it went.

One invariant makes every existing public filter apply: ``Run.is_private`` is True exactly when
the submission is private, or the run is withdrawn, or hidden (``run_is_delisted``). Boards are
then updated through the standings service, like any other change of a run. Every change
appends a RunVisibilityEvent (the audit log); nothing is deleted.
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from leaderboard.api_query import MAX_ID
from leaderboard.models import Run
from leaderboard.permissions import CHANGE_RUN, staff_may
from leaderboard.reasons import public_reason
from leaderboard.selectors.carried import run_carried_copy_ids
from leaderboard.selectors.visibility import run_is_visible
from leaderboard.services.paper_gap_standings import standings_update_version
from submissions.models import RunVisibilityEvent


class VisibilityError(Exception):
    """A withdraw/hide request that cannot be done: ``code`` is the API's error code."""

    def __init__(self, code: str, message: str, *, status: int = 400):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


def run_is_delisted(*, submission_private: bool, withdrawn: bool, hidden: bool) -> bool:
    """The one rule behind Run.is_private (see the module docstring)."""
    return submission_private or withdrawn or hidden


def _get(run_id: object, *, lock: bool) -> Run:
    if not isinstance(run_id, int) or not 0 < run_id <= MAX_ID:
        raise VisibilityError("not_found", f"run {str(run_id)[:30]}: no such run", status=404)
    runs = Run.objects.select_related("submission", "release")
    if lock:
        # The run and its release are locked; the submission (a reverse one-to-one, the nullable
        # side of an outer join) cannot be, and need not: its privacy never changes after the upload.
        runs = runs.select_for_update(of=("self", "release"))
    run = runs.filter(pk=run_id).first()
    if run is None:
        raise VisibilityError("not_found", f"run {run_id}: no such run", status=404)
    return run


def _lock(run_id: object) -> Run:
    return _get(run_id, lock=True)


def _owned_locked(run_id: object, user: User) -> Run:
    """The user's own run, locked with its release. Ownership is checked on a read that locks
    nothing: another account's request (refused) must not take the release's row lock, which
    verifications and standings updates of that release wait for. The submitter of a run never
    changes, so the check made before the lock still holds for the locked row."""
    _check_owner(_get(run_id, lock=False), user)
    return _lock(run_id)


def _save(run: Run, *, action: str, actor: User | None, reason: str = "") -> Run:
    run.is_private = run_is_delisted(
        submission_private=run.submission.is_private,
        withdrawn=run.withdrawn_at is not None,
        hidden=run.hidden_at is not None,
    )
    run.save(update_fields=["withdrawn_at", "hidden_at", "hidden_reason", "is_private"])
    RunVisibilityEvent.objects.create(run=run, action=action, actor=actor, reason=reason)
    # The boards move through the one standings service, incrementally: this run's agent version
    # gets its best remaining public run (or leaves the board), the rows between shift by one.
    standings_update_version(release=run.release, agent_version_id=run.agent_version_id)
    return run


def _check_owner(run: Run, user: User) -> None:
    if not getattr(user, "is_authenticated", False):
        raise VisibilityError("not_authenticated", "sign in or send an API key to change a run", status=401)
    if run.submission.submitter_id != user.pk:
        # A run this account may not see (private, withdrawn, hidden, or on a draft release): the
        # 404 of a run that does not exist, by the one visibility rule, so its id is not confirmed.
        if not run_is_visible(run, user=user):
            raise VisibilityError("not_found", f"run {run.pk}: no such run", status=404)
        raise VisibilityError("not_your_run", f"run {run.pk} was submitted by another account", status=403)


@transaction.atomic
def run_withdraw(*, run_id: int, user: User) -> Run:
    """The submitter takes their run off the public boards (idempotent: withdrawing twice is a no-op)."""
    run = _owned_locked(run_id, user)
    if run.withdrawn_at is not None:
        return run
    run.withdrawn_at = timezone.now()
    return _save(run, action=RunVisibilityEvent.Action.WITHDRAWN, actor=user)


@transaction.atomic
def run_restore(*, run_id: int, user: User) -> Run:
    """The submitter puts a withdrawn run back (it stays off the boards while staff hide it)."""
    run = _owned_locked(run_id, user)
    if run.withdrawn_at is None:
        raise VisibilityError("not_withdrawn", f"run {run.pk} is not withdrawn", status=409)
    run.withdrawn_at = None
    return _save(run, action=RunVisibilityEvent.Action.RESTORED, actor=user)


@transaction.atomic
def run_hide(*, run_id: int, user: User, reason: str) -> Run:
    """Staff hide a run with a public reason (hiding again replaces the reason, logged again)."""
    if not staff_may(user, CHANGE_RUN):
        raise VisibilityError("staff_only", f"only staff with the permission {CHANGE_RUN!r} can hide a run", status=403)
    run = _lock(run_id)  # an unknown run is a 404 whatever the reason says
    reason = public_reason(reason, says="why the run is hidden", error=VisibilityError)
    was_hidden = (run.hidden_at, run.hidden_reason)
    run.hidden_at = run.hidden_at or timezone.now()
    run.hidden_reason = reason
    _save(run, action=RunVisibilityEvent.Action.HIDDEN, actor=user, reason=reason)
    # Its carried copies rest on the same submission: hidden with it, for the same reason. A copy
    # hidden with it carries the source's very hidden_at (and reason): one hidden on its own,
    # whatever its reason says, keeps its own.
    for copy_id in run_carried_copy_ids(run_id=run.pk):
        copy = _lock(copy_id)
        if copy.hidden_at is None or _hidden_with(copy, was_hidden):
            copy.hidden_at = run.hidden_at
            copy.hidden_reason = reason
            _save(copy, action=RunVisibilityEvent.Action.HIDDEN, actor=user, reason=reason)
    return run


def _hidden_with(copy: Run, source_hidden: tuple[dt.datetime | None, str]) -> bool:
    """Whether ``copy`` was hidden by its source's hide (same time and reason), not on its own."""
    hidden_at, reason = source_hidden
    return hidden_at is not None and (copy.hidden_at, copy.hidden_reason) == (hidden_at, reason)


@transaction.atomic
def run_unhide(*, run_id: int, user: User) -> Run:
    if not staff_may(user, CHANGE_RUN):
        raise VisibilityError(
            "staff_only", f"only staff with the permission {CHANGE_RUN!r} can unhide a run", status=403
        )
    run = _lock(run_id)
    if run.hidden_at is None:
        raise VisibilityError("not_hidden", f"run {run.pk} is not hidden", status=409)
    was_hidden = (run.hidden_at, run.hidden_reason)
    run.hidden_at = None
    run.hidden_reason = ""
    _save(run, action=RunVisibilityEvent.Action.UNHIDDEN, actor=user)
    # The copies hidden with it come back with it; one hidden on its own stays hidden.
    for copy_id in run_carried_copy_ids(run_id=run.pk):
        copy = _lock(copy_id)
        if _hidden_with(copy, was_hidden):
            copy.hidden_at = None
            copy.hidden_reason = ""
            _save(copy, action=RunVisibilityEvent.Action.UNHIDDEN, actor=user)
    return run


COPY_HIDDEN_REASON = (
    "Its results are identical to results a registered evaluator signed for another account's run; "
    "this filing carried no such proof, so it is taken as a copy."
)


def runs_hide_copies(*, runs: list[Run]) -> None:
    """Hide ``runs`` as copies of a run just recorded (no actor: verification decides it),
    inside the caller's transaction. Each rests on results another account's evaluator signed
    over that account's own challenge, while the copy carried no such proof
    (submissions.services.challenges.results_duplicate_check); the public reason says so, and
    staff can unhide it. A run already hidden keeps its reason."""
    for copy in runs:
        run = _lock(copy.pk)
        if run.hidden_at is not None:
            continue
        run.hidden_at = timezone.now()
        # Public: the original is not named (it may be private; staff find it by the digest).
        run.hidden_reason = COPY_HIDDEN_REASON
        _save(run, action=RunVisibilityEvent.Action.HIDDEN, actor=None, reason=run.hidden_reason)
