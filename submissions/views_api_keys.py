"""Web UI for API keys: list, create (shown once), revoke. Sign-in required.

A new key is rendered straight into the POST response (never stored in the
session or a message, never redirected through a URL) with Cache-Control
no-store; after that page only its prefix is ever shown again.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from leaderboard.selectors.visibility import benchmarks_visible, viewer_is_staff
from leaderboard.users import signed_in_user
from submissions.api_keys import api_key_create, api_key_revoke
from submissions.models import ApiKey
from submissions.quotas import quota_overview, validator_quota_overview

MAX_ACTIVE_KEYS = 20


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def api_keys(request: HttpRequest) -> HttpResponse:
    user = signed_in_user(request)
    keys = ApiKey.objects.filter(user=user).order_by("-created_at")
    context: dict[str, object] = {
        "keys": keys,
        "name": "",
        "error": "",
        "new_key": None,
        # One allowance per account: keys share it, so creating or revoking one cannot reset it.
        "limits": quota_overview(
            user=user, benchmarks=list(benchmarks_visible(staff=viewer_is_staff(user)).order_by("name"))
        ),
        "validator_limits": validator_quota_overview(user=user),
    }
    status = 200
    if request.method == "POST":
        name = request.POST.get("name", "").strip()
        context["name"] = name[:100]
        active = keys.filter(revoked_at__isnull=True).count()
        if active >= MAX_ACTIVE_KEYS:
            context["error"] = f"You already have {MAX_ACTIVE_KEYS} active keys; revoke one before creating another."
            status = 400
        else:
            try:
                issued = api_key_create(user=user, name=name)
            except ValueError as exc:
                context["error"] = f"Key {exc}."
                status = 400
            else:
                context["new_key"] = issued
                context["name"] = ""
    return render(request, "accounts/api_keys.html", context, status=status)


@login_required
@require_POST
def api_key_revoke_view(request: HttpRequest, key_id: int) -> HttpResponse:
    # Another user's key id is a 404, never a hint that it exists.
    user = signed_in_user(request)
    key = get_object_or_404(ApiKey, pk=key_id, user=user)
    api_key_revoke(user=user, key_id=key.pk)
    messages.success(request, f"Key “{key.name}” (pdm_{key.prefix}_…) revoked; requests using it now fail.")
    return redirect("api_keys")
