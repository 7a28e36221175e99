"""Submitter and validator endpoints of the trust boundary:
challenges before a run, race entries by an agent's owner, and the runs
validators owe. Views validate and delegate to services; every refusal is
``{"error": {"code", "message"}}`` with the service's stable code."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api.errors import ErrorSerializer
from leaderboard.api.fields import StrictCharField, StrictSlugField
from leaderboard.api_errors import ApiError, refuse_fields_not_read, refuse_unread_parameters
from leaderboard.users import signed_in_user
from submissions.bundle.errors import BundleError
from submissions.bundle.schema import FORMAT_V2
from submissions.services.challenges import (
    CHALLENGE_TTL,
    REQUEST_FIELD_MAX_CHARS,
    ChallengeRequest,
    TooManyChallenges,
    challenge_issue,
)
from submissions.services.races import acts_for_a_validator, owed_runs_for, race_entry_create

# Refusals that are about who asks, not what was asked.
_STATUS = {
    "not_a_validator": status.HTTP_403_FORBIDDEN,
    "agent_not_yours": status.HTTP_403_FORBIDDEN,
    "too_many_challenges": status.HTTP_429_TOO_MANY_REQUESTS,
}
ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Invalid request (code says what)"),
    401: OpenApiResponse(ErrorSerializer, description="Not authenticated"),
    403: OpenApiResponse(ErrorSerializer, description="agent_not_yours, not_a_validator"),
}


def _refused(exc: BundleError) -> ApiError:
    # A 429 says when to come back, as every other 429 of the API does.
    headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, TooManyChallenges) else None
    return ApiError(
        code=exc.code,
        message=exc.message,
        status_code=_STATUS.get(exc.code, status.HTTP_400_BAD_REQUEST),
        headers=headers,
    )


def _valid(serializer: serializers.Serializer) -> dict[str, Any]:
    if not serializer.is_valid():
        field, messages = next(iter(serializer.errors.items()))
        raise ApiError(code="invalid", message=f"{field}: {messages[0]}", extra={"fields": serializer.errors})
    return dict(serializer.validated_data)


class ChallengeRequestSerializer(serializers.Serializer):
    benchmark = StrictSlugField(max_length=REQUEST_FIELD_MAX_CHARS["benchmark"])
    release = StrictCharField(max_length=REQUEST_FIELD_MAX_CHARS["release"])
    agent_name = StrictCharField(max_length=REQUEST_FIELD_MAX_CHARS["agent_name"])
    agent_version = StrictCharField(max_length=REQUEST_FIELD_MAX_CHARS["agent_version"])
    race = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False, allow_null=True, default=None)


class ChallengeSerializer(serializers.Serializer):
    token = StrictCharField()
    format = StrictCharField()
    benchmark = StrictCharField()
    release = StrictCharField()
    race = serializers.IntegerField(allow_null=True)
    agent_name = StrictCharField()
    agent_version = StrictCharField()
    expires_at = serializers.DateTimeField()


class ChallengeView(APIView):
    """A single-use submission challenge for the run you are about to make."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        summary="Ask for a submission challenge (before the run)",
        request=ChallengeRequestSerializer,
        responses={201: ChallengeSerializer, 429: ErrorSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        refuse_fields_not_read(request.data, ChallengeRequestSerializer)
        data = _valid(ChallengeRequestSerializer(data=request.data))
        try:
            challenge = challenge_issue(user=signed_in_user(request), request=ChallengeRequest(**data))
        except BundleError as exc:
            raise _refused(exc) from None
        body = {
            "token": challenge.token,
            "format": FORMAT_V2,
            "benchmark": challenge.benchmark.slug,
            "release": challenge.release.version,
            "race": challenge.race.number if challenge.race is not None else None,
            "agent_name": challenge.agent_version.agent.name,
            "agent_version": challenge.agent_version.version,
            "expires_at": challenge.expires_at,
        }
        headers = {"Cache-Control": "no-store"}
        return Response(ChallengeSerializer(body).data, status=status.HTTP_201_CREATED, headers=headers)


class RaceEntryRequestSerializer(serializers.Serializer):
    benchmark = StrictSlugField(max_length=REQUEST_FIELD_MAX_CHARS["benchmark"])
    race = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False, allow_null=True, default=None)
    agent_name = StrictCharField(max_length=REQUEST_FIELD_MAX_CHARS["agent_name"])
    agent_version = StrictCharField(max_length=REQUEST_FIELD_MAX_CHARS["agent_version"])


class RaceEntrySerializer(serializers.Serializer):
    benchmark = StrictCharField()
    race = serializers.IntegerField(allow_null=True)
    agent = StrictCharField()
    agent_name = StrictCharField()
    agent_version = StrictCharField()


class RaceEntryView(APIView):
    """Enter your agent version in a race (or register it for qualifying runs: race null)."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        summary="Enter your agent version in a race",
        request=RaceEntryRequestSerializer,
        responses={201: RaceEntrySerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        refuse_fields_not_read(request.data, RaceEntryRequestSerializer)
        data = _valid(RaceEntryRequestSerializer(data=request.data))
        try:
            version, entry = race_entry_create(
                user=signed_in_user(request),
                benchmark_slug=data["benchmark"],
                race_number=data["race"],
                agent_name=data["agent_name"],
                agent_version=data["agent_version"],
            )
        except BundleError as exc:
            raise _refused(exc) from None
        body = {
            "benchmark": data["benchmark"],
            "race": entry.race.number if entry is not None else None,
            "agent": version.agent.slug,
            "agent_name": version.agent.name,
            "agent_version": version.version,
        }
        return Response(RaceEntrySerializer(body).data, status=status.HTTP_201_CREATED)


class OwedRunSerializer(serializers.Serializer):
    benchmark = StrictCharField()
    release = StrictCharField()
    race = serializers.IntegerField(allow_null=True)
    validator = StrictCharField()
    agent = StrictCharField()
    agent_version = StrictCharField()
    failed_run_submitted_at = serializers.DateTimeField()
    infrastructure_errors = serializers.IntegerField()
    expected_tasks = serializers.IntegerField()


def owed_run_rows(user: Any) -> list[dict[str, Any]]:
    """The runs ``user``'s validators owe, as plain rows (page and API)."""
    return [
        {
            "benchmark": run.release.benchmark.slug,
            "release": run.release.version,
            "race": run.race.number if run.race is not None else None,
            "validator": run.validator.slug,
            "agent": run.agent_version.agent.slug,
            "agent_version": run.agent_version.version,
            "failed_run_submitted_at": run.created_at,
            "infrastructure_errors": run.infrastructure_errors,
            "expected_tasks": run.expected_tasks,
        }
        for run in owed_runs_for(user=user)
    ]


class OwedRunsView(APIView):
    """Runs your validators owe after an infrastructure failure, until they are filed again."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        summary="Runs owed after an infrastructure failure (validators and staff)",
        responses={
            200: inline_serializer(
                "OwedRunList",
                fields={"count": serializers.IntegerField(), "results": OwedRunSerializer(many=True)},
            ),
            **ERRORS,
        },
    )
    def get(self, request: Request) -> Response:
        # Every owed run at once (a short list, not paginated): no query parameter is read.
        refuse_unread_parameters(request, frozenset({"format"}))
        user = signed_in_user(request)
        if not acts_for_a_validator(user):
            raise ApiError(
                code="not_a_validator",
                message="this account acts for no validator; owed runs are listed to validators and staff",
                status_code=status.HTTP_403_FORBIDDEN,
            )
        rows = owed_run_rows(user)
        return Response({"count": len(rows), "results": OwedRunSerializer(rows, many=True).data})


__all__ = ["CHALLENGE_TTL", "ChallengeView", "OwedRunsView", "RaceEntryView", "owed_run_rows"]
