"""Website forms for excluding one race run from every score, and reinstating it
(leaderboard.services.race_exclusions): the page form beside ``manage.py exclude_race_runs
--run ID`` and the signing keys' admin action, for staff holding ``leaderboard.change_run``.
The service checks the permission; these views parse the form and say what happened."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from leaderboard.selectors.race import race_run_row_id
from leaderboard.services.race_exclusions import RaceExclusionError, race_runs_exclude, race_runs_reinstate


def _act(
    request: HttpRequest, public_id: str, action: Callable[..., list[int]], done: str, **kwargs: Any
) -> HttpResponse:
    """Run ``action`` on the race run at ``public_id`` as the signed-in account. A PermissionDenied
    it raises reaches the site's 403 page with its sentence; an unknown run is a 404; any other
    refusal (a blank or too long reason) is said on the run's page, where the form is."""
    pk = race_run_row_id(public_id=public_id)
    if pk is None:
        raise Http404("No such race run")
    try:
        changed = action(user=request.user, run_ids=[pk], **kwargs)
    except RaceExclusionError as exc:
        if exc.code == "not_found":
            raise Http404("No such race run") from None
        messages.error(request, exc.message)
        return redirect("race_run_detail", public_id=public_id)
    messages.success(request, done if changed else "Nothing changed: the run was already in that state.")
    return redirect("race_run_detail", public_id=public_id)


@login_required
@require_POST
def race_run_exclude_view(request: HttpRequest, public_id: str) -> HttpResponse:
    return _act(
        request,
        public_id,
        race_runs_exclude,
        "Run excluded from every score; its page and its race show the reason.",
        reason=request.POST.get("reason", ""),
    )


@login_required
@require_POST
def race_run_reinstate_view(request: HttpRequest, public_id: str) -> HttpResponse:
    return _act(request, public_id, race_runs_reinstate, "Run reinstated: it counts in every score again.")
