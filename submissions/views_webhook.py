"""Web form for the account's verdict webhook (the API-keys page's "Webhook" section).

Like a new API key, a new or rotated secret is rendered straight into the POST response
(never stored in the session or a message), with Cache-Control no-store."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from leaderboard.users import signed_in_user
from submissions.services import notifications


@never_cache
@login_required
@require_POST
def webhook_update(request: HttpRequest) -> HttpResponse:
    action = request.POST.get("action", "save")
    secret = None
    try:
        if action == "delete":
            notifications.webhook_delete(user=signed_in_user(request))
            messages.success(request, "Webhook removed: verdicts are no longer POSTed anywhere.")
            return redirect("api_keys")
        if action == "rotate":
            secret = notifications.webhook_rotate_secret(user=signed_in_user(request)).secret
        else:
            _, secret = notifications.webhook_set(user=signed_in_user(request), url=request.POST.get("url", ""))
    except notifications.WebhookError as exc:
        # The form again, with the URL as typed and the error beside the field it is about.
        context = {
            "error": exc.message,
            "code": exc.code,
            "error_field": "url" if exc.message.startswith("url: ") else "",
            "url": request.POST.get("url", "")[:500],
        }
        return render(request, "accounts/webhook.html", context, status=400)
    if secret is None:
        messages.success(request, "Webhook URL saved; the signing secret is unchanged.")
        return redirect("api_keys")
    return render(request, "accounts/webhook.html", {"secret": secret})
