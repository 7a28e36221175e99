"""API for the account's webhook, and withdrawing / hiding runs.

Errors use the API's one shape (leaderboard.api_errors); see docs/api.md for every code.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api.errors import ErrorSerializer
from leaderboard.api.fields import StrictCharField, StrictURLField
from leaderboard.api_errors import ApiError, refuse_body_fields, refuse_fields_not_read
from leaderboard.users import signed_in_user
from submissions.models import WebhookEndpoint
from submissions.services import notifications, visibility


def _run_state(run: Any) -> dict[str, Any]:
    return {
        "id": run.pk,
        "withdrawn": run.withdrawn_at is not None,
        "withdrawn_at": run.withdrawn_at.isoformat() if run.withdrawn_at else None,
        "hidden": run.hidden_at is not None,
        "hidden_at": run.hidden_at.isoformat() if run.hidden_at else None,
        "hidden_reason": run.hidden_reason,
        "on_public_boards": not run.is_private,
    }


RUN_STATE = inline_serializer(
    "RunVisibility",
    {
        "id": serializers.IntegerField(),
        "withdrawn": serializers.BooleanField(),
        "withdrawn_at": serializers.DateTimeField(allow_null=True),
        "hidden": serializers.BooleanField(),
        "hidden_at": serializers.DateTimeField(allow_null=True),
        "hidden_reason": StrictCharField(),
        "on_public_boards": serializers.BooleanField(),
    },
)


# Restoring a run that is not withdrawn (not_withdrawn), unhiding one that is not hidden (not_hidden).
NOT_IN_THAT_STATE = OpenApiResponse(ErrorSerializer, description="The run is not in the state this undoes")


class _RunActionView(APIView):
    permission_classes = [permissions.IsAuthenticated]
    action_name = ""
    # Whether the action reads a body (its act() refuses the fields it does not read); those that
    # read none refuse every field.
    reads_body = False

    def act(self, request: Request, run_id: int) -> Any:
        raise NotImplementedError

    def post(self, request: Request, run_id: int) -> Response:
        if not self.reads_body:
            refuse_body_fields(request)
        try:
            run = self.act(request, run_id)
        except visibility.VisibilityError as exc:
            raise ApiError(code=exc.code, message=exc.message, status_code=exc.status) from None
        return Response(_run_state(run))


@extend_schema(summary="Withdraw your run from the public boards", request=None, responses={200: RUN_STATE})
class RunWithdrawView(_RunActionView):
    def act(self, request: Request, run_id: int) -> Any:
        return visibility.run_withdraw(run_id=run_id, user=signed_in_user(request))


@extend_schema(summary="Restore your withdrawn run", request=None, responses={200: RUN_STATE, 409: NOT_IN_THAT_STATE})
class RunRestoreView(_RunActionView):
    def act(self, request: Request, run_id: int) -> Any:
        return visibility.run_restore(run_id=run_id, user=signed_in_user(request))


class RunHideSerializer(serializers.Serializer):
    """The reason's type only; what a reason must say (not blank, how long) is the service's
    rule (reason_missing, reason_too_long). It was str()-ed, so null hid a run with the public
    reason "None" (tests/submissions/test_withdraw_hide.py)."""

    reason = StrictCharField(required=False, default="", allow_blank=True, trim_whitespace=False)


@extend_schema(summary="Staff: hide a run with a public reason", request=RunHideSerializer, responses={200: RUN_STATE})
class RunHideView(_RunActionView):
    reads_body = True

    def act(self, request: Request, run_id: int) -> Any:
        refuse_fields_not_read(request.data, RunHideSerializer)
        form = RunHideSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        return visibility.run_hide(run_id=run_id, user=signed_in_user(request), reason=form.validated_data["reason"])


@extend_schema(summary="Staff: unhide a run", request=None, responses={200: RUN_STATE, 409: NOT_IN_THAT_STATE})
class RunUnhideView(_RunActionView):
    def act(self, request: Request, run_id: int) -> Any:
        return visibility.run_unhide(run_id=run_id, user=signed_in_user(request))


WEBHOOK = inline_serializer(
    "Webhook",
    {
        "url": StrictURLField(),
        "secret": StrictCharField(required=False, help_text="Only in the answer that created it"),
        "created_at": serializers.DateTimeField(),
    },
)


class WebhookSetSerializer(serializers.Serializer):
    # A string or nothing: ``{"url": 5}`` was str()-ed and then refused as a URL "5", an error
    # about the wrong thing. Absent or blank is left to the service (webhook_url_missing).
    url = StrictCharField(required=False, allow_blank=True, default="")


def _webhook_body(endpoint: Any, secret: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"url": endpoint.url, "created_at": endpoint.created_at.isoformat()}
    if secret:
        body["secret"] = secret
    return body


class WebhookView(APIView):
    """The account's verdict webhook: GET it, PUT a URL (the secret is returned once), DELETE it."""

    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(summary="Your verdict webhook", responses={200: WEBHOOK})
    def get(self, request: Request) -> Response:
        endpoint = WebhookEndpoint.objects.filter(user=signed_in_user(request)).first()
        if endpoint is None:
            raise ApiError(code="webhook_not_set", message="This account has no webhook.", status_code=404)
        return Response(_webhook_body(endpoint))

    @extend_schema(
        summary="Set your verdict webhook URL",
        request=WebhookSetSerializer,
        responses={200: WEBHOOK, 201: WEBHOOK},
    )
    def put(self, request: Request) -> Response:
        refuse_fields_not_read(request.data, WebhookSetSerializer)
        body = WebhookSetSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            endpoint, secret = notifications.webhook_set(user=signed_in_user(request), url=body.validated_data["url"])
        except notifications.WebhookError as exc:
            raise ApiError(code=exc.code, message=exc.message) from None
        return Response(
            _webhook_body(endpoint, secret), status=status.HTTP_201_CREATED if secret else status.HTTP_200_OK
        )

    @extend_schema(summary="Remove your verdict webhook", request=None, responses={204: None})
    def delete(self, request: Request) -> Response:
        refuse_body_fields(request)
        if not notifications.webhook_delete(user=signed_in_user(request)):
            raise ApiError(code="webhook_not_set", message="This account has no webhook.", status_code=404)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WebhookRotateView(APIView):
    permission_classes = [permissions.IsAuthenticated]

    @extend_schema(
        summary="Replace your webhook's signing secret (returned once)", request=None, responses={200: WEBHOOK}
    )
    def post(self, request: Request) -> Response:
        refuse_body_fields(request)
        try:
            endpoint = notifications.webhook_rotate_secret(user=signed_in_user(request))
        except notifications.WebhookError as exc:
            raise ApiError(code=exc.code, message=exc.message, status_code=404) from None
        return Response(_webhook_body(endpoint, endpoint.secret))
