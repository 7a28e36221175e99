"""Website forms for withdrawing and hiding runs (submissions.services.visibility), and the
public tombstone of a hidden run."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from submissions.services import visibility


def _act(request: HttpRequest, run_id: int, action: Any, done: str, **kwargs: Any) -> HttpResponse:
    try:
        action(run_id=run_id, user=request.user, **kwargs)
    except visibility.VisibilityError as exc:
        if exc.status == 404:
            raise Http404("No such run") from None
        if exc.status == 403:
            return render(
                request, "leaderboard/run_forbidden.html", {"message": exc.message, "code": exc.code}, status=403
            )
        messages.error(request, exc.message)
        return redirect("run_detail", run_id=run_id)
    messages.success(request, done)
    return redirect("run_detail", run_id=run_id)


@login_required
@require_POST
def run_withdraw_view(request: HttpRequest, run_id: int) -> HttpResponse:
    return _act(request, run_id, visibility.run_withdraw, "Run withdrawn: it no longer appears on any public board.")


@login_required
@require_POST
def run_restore_view(request: HttpRequest, run_id: int) -> HttpResponse:
    return _act(request, run_id, visibility.run_restore, "Run restored to the public boards.")


@login_required
@require_POST
def run_hide_view(request: HttpRequest, run_id: int) -> HttpResponse:
    reason = request.POST.get("reason", "")
    return _act(request, run_id, visibility.run_hide, "Run hidden; its page shows the reason.", reason=reason)


@login_required
@require_POST
def run_unhide_view(request: HttpRequest, run_id: int) -> HttpResponse:
    return _act(request, run_id, visibility.run_unhide, "Run unhidden.")
