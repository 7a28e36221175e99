"""Staff-only: register and list evaluator / validator signing keys."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard.api_errors import ApiError
from leaderboard.models import Evaluator, Validator
from submissions.api.serializers import ErrorSerializer, SigningKeyRegisterSerializer, SigningKeySerializer
from submissions.models import SigningKey
from submissions.services.signing_keys import SigningKeyError, signing_key_register

STAFF_ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Invalid key or owner"),
    401: OpenApiResponse(ErrorSerializer, description="Not authenticated"),
    403: OpenApiResponse(ErrorSerializer, description="Staff only"),
}


@extend_schema_view(
    list=extend_schema(
        summary="Registered signing keys (staff)", responses={200: SigningKeySerializer, **STAFF_ERRORS}
    ),
)
class SigningKeyViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    permission_classes = [permissions.IsAdminUser]
    serializer_class = SigningKeySerializer

    def get_queryset(self) -> QuerySet[SigningKey]:
        return SigningKey.objects.select_related("evaluator", "validator").order_by("-created_at", "-id")

    @extend_schema(
        summary="Register an evaluator or validator Ed25519 public key (staff)",
        request=SigningKeyRegisterSerializer,
        responses={201: SigningKeySerializer, 200: SigningKeySerializer, **STAFF_ERRORS},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = SigningKeyRegisterSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        kind, owner_name = form.validated_data["owner_kind"], form.validated_data["owner"]
        evaluator = validator = None
        if kind == SigningKey.Owner.EVALUATOR:
            evaluator = Evaluator.objects.filter(simulator=owner_name).first()
            if evaluator is None:
                raise ApiError(code="owner_unknown", message=f"owner: no evaluator with simulator {owner_name!r}.")
        else:
            validator = Validator.objects.filter(slug=owner_name).first()
            if validator is None:
                raise ApiError(code="owner_unknown", message=f"owner: no validator with slug {owner_name!r}.")
        existed = SigningKey.objects.filter(public_key=form.validated_data["public_key"].strip()).exists()
        try:
            key = signing_key_register(
                evaluator=evaluator,
                validator=validator,
                public_key_b64=form.validated_data["public_key"],
                user=request.user,
            )
        except SigningKeyError as exc:
            raise ApiError(code="signing_key_invalid", message=str(exc)) from None
        return Response(
            SigningKeySerializer(key).data, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        )
