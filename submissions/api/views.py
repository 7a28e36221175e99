"""Submitter endpoints: upload a bundle, follow its verification, fetch the site key.

Upload order, and why:
1. The size limit is installed before authentication reads anything (session
   auth's CSRF check parses the body), so an oversized body is cut off while it
   streams and answered 413 with the upload service's own refusal.
2. The view validates the form and delegates to ``submission_upload`` (the
   website's upload calls it too): one loop limits and hashes the file, an
   identical retry of one's own bundle is answered 200 with the existing
   submission and costs no quota, and the daily quota is consumed once and given
   back if the bundle is refused, so only accepted uploads count.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api.errors import ErrorSerializer
from leaderboard.api_errors import LIST_PARAMETERS, ApiError, refuse_unread_parameters
from leaderboard.request_text import StrictMultiPartParser
from leaderboard.selectors.visibility import benchmarks_visible, viewer_is_staff
from leaderboard.uploads import SizeLimitUploadHandler, install_size_limit
from leaderboard.users import signed_in_user
from submissions.api.serializers import SiteKeySerializer, SubmissionSerializer, SubmissionUploadSerializer
from submissions.models import ApiKey, Submission
from submissions.quotas import QuotaExceeded, next_reset, quota_overview, validator_quota_overview
from submissions.services.submissions import (
    SubmissionRejected,
    bundle_too_large,
    submission_upload,
    upload_fields_check,
    upload_private_flag,
)
from submissions.site_keys import SiteKeyError, current_public_key

logger = logging.getLogger("podium.api")

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Invalid request"),
    401: OpenApiResponse(ErrorSerializer, description="Not authenticated"),
    403: OpenApiResponse(ErrorSerializer, description="Not allowed"),
    404: OpenApiResponse(ErrorSerializer, description="Not found"),
    429: OpenApiResponse(ErrorSerializer, description="Rate limited"),
}


def _refuse_unread_upload_fields(data: Any) -> None:
    """The upload's form holds UPLOAD_FIELDS only, each once (the page's rule too)."""
    try:
        upload_fields_check({name: len(data.getlist(name)) if hasattr(data, "getlist") else 1 for name in data})
    except SubmissionRejected as exc:
        raise _rejection_error(exc) from None


def _rejection_error(exc: SubmissionRejected) -> ApiError:
    extra = {"fields": {exc.field: ["Unknown field."]}} if exc.field else None
    return ApiError(code=exc.code, message=exc.message, status_code=exc.status, extra=extra)


class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """A submitter's own submissions: upload, list, status."""

    serializer_class = SubmissionSerializer
    permission_classes = [permissions.IsAuthenticated]
    lookup_value_regex = "[0-9a-fA-F-]{32,36}"

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        if request.method == "POST":
            self.upload_guard: SizeLimitUploadHandler | None = install_size_limit(
                request, max_bytes=settings.PODIUM_MAX_BUNDLE_BYTES
            )
        return super().initialize_request(request, *args, **kwargs)

    def get_parsers(self) -> list[Any]:
        if self.request is not None and self.request.method == "POST":
            # The site's multipart parser: a NUL in a field (the benchmark's slug) is 400
            # invalid_text, not a PostgreSQL DataError (a 500) at the benchmark lookup.
            return [StrictMultiPartParser()]
        return super().get_parsers()

    def get_queryset(self) -> QuerySet[Submission]:
        user = signed_in_user(self.request)
        queryset = Submission.objects.select_related("release__benchmark", "run")
        if self.action == "retrieve" and viewer_is_staff(user):
            return queryset
        queryset = queryset.filter(submitter=user)
        if self.action == "list":
            refuse_unread_parameters(self.request, LIST_PARAMETERS | {"status", "verdict"})
            # A parameter that is present must be valid, even when empty: "?verdict=" is
            # not a filter the schema allows, so it is refused rather than ignored.
            status_filter = self.request.query_params.get("status")
            if status_filter is not None:
                if status_filter not in Submission.Status.values:
                    raise ApiError(
                        code="invalid_query",
                        message=f"status: expected one of {', '.join(Submission.Status.values)}, "
                        f"got {status_filter[:20]!r}.",
                    )
                queryset = queryset.filter(status=status_filter)
            verdict = self.request.query_params.get("verdict")
            if verdict is not None:
                allowed = [v for v in Submission.Verdict.values if v]
                if verdict not in allowed:
                    raise ApiError(
                        code="invalid_query",
                        message=f"verdict: expected one of {', '.join(allowed)}, got {verdict[:20]!r}.",
                    )
                queryset = queryset.filter(verdict=verdict)
        return queryset

    @extend_schema(
        summary="Upload a sealed bundle",
        request={"multipart/form-data": SubmissionUploadSerializer},
        responses={
            201: SubmissionSerializer,
            200: OpenApiResponse(SubmissionSerializer, description="Identical retry: the existing submission"),
            413: OpenApiResponse(ErrorSerializer, description="Upload too large"),
            **ERRORS,
            503: OpenApiResponse(
                ErrorSerializer,
                description="storage_unavailable, broker_unavailable, site_key_unavailable or database_unavailable "
                "(with Retry-After); nothing is recorded",
            ),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        guard = getattr(self, "upload_guard", None)
        if guard is not None and guard.too_large:
            raise _rejection_error(bundle_too_large())
        data = request.data  # parses the body through the guard
        if guard is not None and guard.too_large:
            raise _rejection_error(bundle_too_large())
        _refuse_unread_upload_fields(data)
        upload = request.FILES.get("bundle")
        if upload is None:
            raise ApiError(code="bundle_missing", message="bundle: expected a file field named 'bundle'.")
        try:
            is_private = upload_private_flag(data.get("private", "false"))
        except SubmissionRejected as exc:
            raise _rejection_error(exc) from None
        slug = str(data.get("benchmark", "")).strip()
        if not slug:
            raise ApiError(
                code="benchmark_missing",
                message="benchmark: expected the slug of the benchmark this bundle is for (e.g. 'ale-robotics').",
            )
        benchmark = benchmarks_visible(staff=viewer_is_staff(request.user)).filter(slug=slug).first()
        if benchmark is None:
            raise ApiError(code="benchmark_unknown", message=f"benchmark: no benchmark with slug {slug[:64]!r}.")

        user = signed_in_user(request)
        api_key = request.auth if isinstance(request.auth, ApiKey) else None
        try:
            result = submission_upload(
                user=user,
                api_key=api_key,
                benchmark=benchmark,
                file=upload,
                original_name=upload.name or "",
                is_private=is_private,
            )
        except QuotaExceeded as exc:
            raise ApiError(
                code="daily_limit_reached",
                message=exc.message,
                status_code=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(exc.retry_after)},
            ) from None
        except SubmissionRejected as exc:
            raise _rejection_error(exc) from None
        submission, created, quota = result.submission, result.created, result.quota
        headers = {
            "X-RateLimit-Limit": str(quota.limit),
            "X-RateLimit-Remaining": str(quota.remaining),
            "X-RateLimit-Reset": quota.resets_at.isoformat(),
        }
        return Response(
            self.get_serializer(submission).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
            headers=headers,
        )

    @extend_schema(
        summary="Your submissions, newest first",
        parameters=[
            OpenApiParameter("status", OpenApiTypes.STR, enum=list(Submission.Status.values)),
            OpenApiParameter("verdict", OpenApiTypes.STR, enum=[v for v in Submission.Verdict.values if v]),
        ],
        responses={200: SubmissionSerializer(many=True), 304: OpenApiResponse(description="Not modified"), **ERRORS},
    )
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="One of your submissions: status, verdict, error code, message and diff",
        responses={200: SubmissionSerializer, 304: OpenApiResponse(description="Not modified"), **ERRORS},
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().retrieve(request, *args, **kwargs)


class SiteKeyView(APIView):
    """The age recipient bundles must be encrypted to, with its key id."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        summary="The site's current public age key", responses={200: SiteKeySerializer, 503: ErrorSerializer}
    )
    def get(self, request: Request) -> Response:
        try:
            key_id, public_key = current_public_key()
        except SiteKeyError:
            # The reason names server paths: log it, tell the client only that the key is missing.
            logger.exception("site key unavailable for the API")
            raise ApiError(
                code="site_key_unavailable",
                message="The site has no encryption key configured yet; ask the site's administrators.",
                status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
            ) from None
        return Response({"key_id": key_id, "public_key": public_key})


class LimitsView(APIView):
    """The caller's daily limits with what remains today: per benchmark for the account (all its
    keys and the browser together), and the validator keys it files race runs with."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        summary="Your daily limits and what remains today",
        responses={200: {"type": "object", "additionalProperties": True}, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        benchmarks = list(benchmarks_visible(staff=viewer_is_staff(request.user)).order_by("slug"))
        user = signed_in_user(request)
        rows = quota_overview(user=user, benchmarks=benchmarks)
        body = {
            "resets_at": next_reset().isoformat(),
            "benchmarks": [
                {"benchmark": row.benchmark.slug, "limit": row.limit, "used": row.used, "remaining": row.remaining}
                for row in rows
            ],
            "validator_keys": [
                {"key_id": row.key_id, "limit": row.limit, "used": row.used, "remaining": row.remaining}
                for row in validator_quota_overview(user=user)
            ],
        }
        response = Response(body)
        response["Cache-Control"] = "no-store"
        return response
