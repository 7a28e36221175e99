"""Website upload, live status and "my submissions" (signed-in submitters only).

The upload view validates the form and delegates to ``submission_upload``, the
service the API's upload calls too, so the size limit, the daily limit and their
refusals are the same on both and the browser is not a way around either. Another user's submission is
always a 404, never a 403, so ids are not confirmed to strangers.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any
from uuid import UUID

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_safe

from leaderboard.api_query import whole_number
from leaderboard.disclosure import submission_view
from leaderboard.models import Benchmark, QualifyingEntry, RaceEntry
from leaderboard.selectors.visibility import benchmarks_visible, viewer_is_staff
from leaderboard.uploads import declared_too_large
from leaderboard.users import signed_in_user
from submissions.api.trust_views import owed_run_rows
from submissions.bundle.errors import BundleError
from submissions.models import Submission, SubmissionChallenge
from submissions.quotas import QuotaExceeded, quota_overview, validator_quota_overview
from submissions.selectors import submissions as submission_selectors
from submissions.services.challenges import ChallengeRequest, challenge_issue, request_field_too_long
from submissions.services.races import acts_for_a_validator, race_entry_create
from submissions.services.submissions import (
    SubmissionRejected,
    bundle_too_large,
    submission_upload,
    upload_fields_check,
    upload_private_flag,
)
from submissions.site_keys import SiteKeyError, current_public_key

logger = logging.getLogger(__name__)


def _site_key() -> tuple[str, str] | None:
    """(key_id, age recipient) to seal bundles to, or None when the site has no key yet."""
    try:
        return current_public_key()
    except SiteKeyError:
        logger.warning("upload page: the site has no age key configured")
        return None


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def submission_status_payload(submission: Submission, *, user: Any) -> dict[str, Any]:
    """What the upload page shows live: status, verdict, error and diff (the owner's own data),
    with every value that would reveal a withheld anchor named but not shown (leaderboard.disclosure)."""
    run = getattr(submission, "run", None) if submission.verdict in ("validated", "attested") else None
    view = submission_view(submission, user=user)
    return {
        "id": str(submission.pk),
        "status": submission.status,
        "status_label": submission.get_status_display(),
        "verdict": submission.verdict,
        "done": submission.status == Submission.Status.DONE,
        "error_code": submission.error_code,
        "error_message": view.message,
        "diff": view.diff if submission.verdict in ("mismatch", "rejected") else [],
        "run_url": reverse("run_detail", args=[run.pk]) if run is not None else None,
        "detail_url": reverse("submission_detail", args=[submission.pk]),
        "uploaded_at": submission.created_at.strftime("%Y-%m-%d %H:%M UTC") if submission.created_at else None,
    }


def _upload_error(request: HttpRequest, context: dict[str, Any], code: str, message: str, status: int) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse({"error": {"code": code, "message": message}}, status=status)
    context["error"] = {"code": code, "message": message}
    return render(request, "submissions/upload.html", context, status=status)


def _declared_size_error(request: HttpRequest) -> tuple[str, str] | None:
    """(code, message) when the declared body cannot be a bundle within the limit, or None
    (checked before any byte is read)."""
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return "content_length_invalid", "The request's Content-Length is not a number."
    if declared_too_large(declared, max_bytes=settings.PODIUM_MAX_BUNDLE_BYTES):
        refused = bundle_too_large()
        return refused.code, refused.message
    return None


def _csrf_protected(request: HttpRequest) -> HttpResponse | None:
    """Django's CSRF check, run by hand once the size is known to be acceptable (None when it passes)."""
    return CsrfViewMiddleware(lambda _request: HttpResponse()).process_view(request, _csrf_checked, (), {})


def _csrf_checked(request: HttpRequest) -> HttpResponse:  # pragma: no cover - never called, only inspected
    return HttpResponse()


# CSRF is checked inside the view, after the declared size: the middleware would read
# (and spool to disk) the whole multipart body just to find the token in it.
@csrf_exempt
@login_required
@require_http_methods(["GET", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    """GET: the upload form. POST (multipart, field ``bundle``): store the bundle and queue its verification."""
    context = _upload_context(request)
    if request.method == "GET":
        # After the challenge form's redirect: the challenge just issued, shown first.
        issued = request.GET.get("challenge", "")
        context["new_challenge"] = next((c for c in context["open_challenges"] if str(c.pk) == issued), None)
        return render(request, "submissions/upload.html", context)
    size_error = _declared_size_error(request)
    if size_error is not None:
        return _upload_error(request, context, *size_error, 413 if size_error[0] == "too_large" else 400)
    csrf_failure = _csrf_protected(request)
    if csrf_failure is not None:
        return csrf_failure

    try:
        upload_file, benchmark, is_private = _upload_form(request, context)
    except SubmissionRejected as exc:
        return _upload_error(request, context, exc.code, exc.message, exc.status)
    try:
        result = submission_upload(
            user=signed_in_user(request),
            api_key=None,
            benchmark=benchmark,
            file=upload_file,
            original_name=upload_file.name or "",
            is_private=is_private,
        )
    except QuotaExceeded as exc:
        return _upload_error(request, context, "daily_limit_reached", exc.message, 429)
    except SubmissionRejected as exc:
        return _upload_error(request, context, exc.code, exc.message, exc.status)
    submission, created = result.submission, result.created
    if _wants_json(request):
        payload = submission_status_payload(submission, user=request.user)
        payload["created"] = created
        payload["status_url"] = reverse("submission_status", args=[submission.pk])
        return JsonResponse(payload, status=201 if created else 200)
    if not created:
        messages.info(
            request,
            "You uploaded this exact file before: nothing new was submitted; this is the earlier submission.",
        )
    return redirect("submission_detail", submission_id=submission.pk)


def _upload_form(request: HttpRequest, context: dict[str, Any]) -> tuple[Any, Benchmark, bool]:
    """The upload form's bundle, benchmark and private flag, or SubmissionRejected saying what
    is wrong. The API's rule first: an unknown field (private meant as "is_private") or one sent
    twice is refused by name rather than read past. The form also carries its CSRF token."""
    # Text parts and file parts together: "bundle" sent as both is sent twice (the API reads them
    # as one form too).
    fields = Counter({name: len(request.POST.getlist(name)) for name in request.POST})
    fields.update({name: len(request.FILES.getlist(name)) for name in request.FILES})
    upload_fields_check(fields, also=("csrfmiddlewaretoken",))
    is_private = upload_private_flag(request.POST.get("private", "0"))
    upload_file = request.FILES.get("bundle")
    if upload_file is None:
        raise SubmissionRejected("bundle_missing", "Choose a bundle file (.age) to upload.")
    slug = request.POST.get("benchmark", "")
    benchmark = next((b for b in context["visible_benchmarks"] if b.slug == slug), None)
    if benchmark is None:
        message = "Choose the benchmark this bundle is for." if not slug else f"No benchmark with slug {slug[:64]!r}."
        raise SubmissionRejected("benchmark_unknown", message)
    return upload_file, benchmark, is_private


def _race_number(text: str) -> int:
    """A form's race number, or BundleError ``unknown_race``. ASCII digits only, through the one
    integer parser: ``str.isdigit()`` also accepts "²", which ``int()`` refuses (it was a 500)."""
    number = whole_number(text, maximum=999_999_999)
    if number is None:
        raise BundleError("unknown_race", f"race: expected a race number, got {text[:20]!r}")
    return number


def _upload_context(request: HttpRequest) -> dict[str, Any]:
    """What the upload page shows whichever form was sent: the site key, the benchmarks, the
    account's daily limits and its open challenges."""
    user = signed_in_user(request)
    visible = list(benchmarks_visible(staff=viewer_is_staff(user)).order_by("name"))
    return {
        "site_key": _site_key(),
        # The forms offer what takes bundles and challenges: a scorecard benchmark's cards are
        # played over the API. Its daily limit (card openings) is still listed.
        "benchmarks": [b for b in visible if b.scheme != Benchmark.Scheme.SCORECARD],
        "visible_benchmarks": visible,
        "limits": quota_overview(user=user, benchmarks=visible),
        "validator_limits": validator_quota_overview(user=user),
        "open_challenges": _open_challenges(user),
    }


def _open_challenges(user: Any) -> list[Any]:
    """The account's unused, unexpired challenges, newest first (shown on the upload page)."""

    return list(
        SubmissionChallenge.objects.filter(user=user, used_at__isnull=True, expires_at__gt=timezone.now())
        .select_related("benchmark", "release", "race", "agent_version__agent")
        .order_by("-created_at")[:10]
    )


@login_required
@require_http_methods(["POST"])
def challenge_new(request: HttpRequest) -> HttpResponse:
    """Issue a submission challenge from the upload page's form, then show it there: a redirect
    to the upload page (reloadable; the page whole, limits included), or the page with the form's
    error. The POST's own address answered the page before, and reloading it sent the form again."""
    fields = {
        name: request.POST.get(name, "").strip() for name in ("benchmark", "release", "agent_name", "agent_version")
    }
    race_text = request.POST.get("race", "").strip()

    def refused(code: str, message: str, status: int) -> HttpResponse:
        # The page is built only for a refusal: an issued challenge redirects.
        context = {
            **_upload_context(request),
            "challenge_form": fields,
            "challenge_error": {"code": code, "message": message},
        }
        return render(request, "submissions/upload.html", context, status=status)

    missing = [name for name, value in fields.items() if not value]
    if missing:
        return refused("invalid", f"{missing[0]}: this field is required.", 400)
    too_long = request_field_too_long(fields)
    if too_long is not None:
        return refused("invalid", too_long, 400)
    try:
        race = _race_number(race_text) if race_text else None
        request_ = ChallengeRequest(race=race, **fields)
        challenge = challenge_issue(user=signed_in_user(request), request=request_)
    except BundleError as exc:
        return refused(exc.code, exc.message, 403 if exc.code in ("agent_not_yours", "not_a_validator") else 400)
    return redirect(f"{reverse('submission_upload')}?challenge={challenge.pk}#challenge-heading")


def _own(request: HttpRequest, submission_id: UUID) -> Submission:
    return submission_selectors.submission_get_own(submission_id=submission_id, user=signed_in_user(request))


@require_safe
def submission_status(request: HttpRequest, submission_id: UUID) -> HttpResponse:
    """Polled every second by static/js/upload.js. 404 for anyone but the submitter."""
    if not request.user.is_authenticated:
        raise Http404("No such submission")
    response = JsonResponse(submission_status_payload(_own(request, submission_id), user=request.user))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_safe
def submission_detail(request: HttpRequest, submission_id: UUID) -> HttpResponse:
    submission = _own(request, submission_id)
    view = submission_view(submission, user=request.user)
    return render(
        request,
        "submissions/detail.html",
        {"submission": submission, "shown_diff": view.diff, "shown_message": view.message},
    )


def _race_entry_post(request: HttpRequest, fields: dict[str, str]) -> tuple[dict[str, str] | None, int]:
    """Enter the race the form names: (the refusal shown on the page or None, the status)."""
    try:
        # An empty race registers the version for the benchmark's qualifying runs (as race null does on the API).
        race_number = _race_number(fields["race"]) if fields["race"] else None
        if not fields["agent_name"] or not fields["agent_version"]:
            raise BundleError("agent_invalid", "agent name and version: both are required")
        race_entry_create(
            user=signed_in_user(request),
            benchmark_slug=fields["benchmark"],
            race_number=race_number,
            agent_name=fields["agent_name"],
            agent_version=fields["agent_version"],
        )
    except BundleError as exc:
        return {"code": exc.code, "message": exc.message}, 403 if exc.code == "agent_not_yours" else 400
    return None, 201


@login_required
@require_http_methods(["GET", "POST"])
def race_entries(request: HttpRequest) -> HttpResponse:
    """Enter one of your agent versions in a race (seed 002: entries are made by the agent's owner)."""
    context: dict[str, Any] = {
        "benchmarks": list(
            benchmarks_visible(staff=viewer_is_staff(request.user))
            .filter(scheme=Benchmark.Scheme.RACE)
            .order_by("name")
        )
    }
    status = 200
    if request.method == "POST":
        fields = {
            name: request.POST.get(name, "").strip() for name in ("benchmark", "race", "agent_name", "agent_version")
        }
        context["form"] = fields
        too_long = request_field_too_long(fields)
        if too_long is not None:  # what the API's serializer refuses (invalid), before the service
            context["error"], status = {"code": "invalid", "message": too_long}, 400
        else:
            context["error"], status = _race_entry_post(request, fields)
            context["entered"] = status == 201
    context["entries"] = list(
        RaceEntry.objects.filter(entered_by=signed_in_user(request))
        .select_related("race__benchmark", "agent_version__agent")
        .order_by("-created_at")[:50]
    )
    context["qualifying"] = list(
        QualifyingEntry.objects.filter(entered_by=signed_in_user(request))
        .select_related("benchmark", "agent_version__agent")
        .order_by("-created_at")[:50]
    )
    return render(request, "submissions/race_entries.html", context, status=status)


@login_required
@require_safe
def owed_runs(request: HttpRequest) -> HttpResponse:
    """The runs this account's validators owe after an infrastructure failure (staff: all)."""
    user = signed_in_user(request)
    if not acts_for_a_validator(user):
        raise Http404("No such page")
    return render(request, "submissions/owed_runs.html", {"rows": owed_run_rows(user)})


@login_required
@require_safe
def my_submissions(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "submissions/list.html",
        {"submissions": submission_selectors.submissions_of(user=signed_in_user(request))},
    )
