"""Staff-only: register and list evaluator / validator signing keys."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard.api_errors import ApiError
from leaderboard.models import Benchmark, Evaluator, Task, Validator
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
        summary="Register an evaluator, judge or validator Ed25519 public key with its scope (staff)",
        request=SigningKeyRegisterSerializer,
        responses={201: SigningKeySerializer, 200: SigningKeySerializer, **STAFF_ERRORS},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        form = SigningKeyRegisterSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        kind, owner_name = form.validated_data["owner_kind"], form.validated_data["owner"]
        evaluator = validator = None
        judge_name = ""
        if kind == SigningKey.Owner.EVALUATOR:
            evaluator = Evaluator.objects.filter(simulator=owner_name).first()
            if evaluator is None:
                raise ApiError(code="owner_unknown", message=f"owner: no evaluator with simulator {owner_name!r}.")
        elif kind == SigningKey.Owner.VALIDATOR:
            validator = Validator.objects.filter(slug=owner_name).first()
            if validator is None:
                raise ApiError(code="owner_unknown", message=f"owner: no validator with slug {owner_name!r}.")
        else:
            judge_name = owner_name
        benchmark = None
        if form.validated_data.get("benchmark"):
            benchmark = Benchmark.objects.filter(slug=form.validated_data["benchmark"]).first()
            if benchmark is None:
                raise ApiError(
                    code="owner_unknown", message=f"benchmark: no benchmark {form.validated_data['benchmark']!r}."
                )
        tasks = {}
        for item in form.validated_data.get("tasks") or []:
            slug, _, rubric = item.partition("@")
            task = Task.objects.filter(benchmark=benchmark, slug=slug).first() if benchmark is not None else None
            if task is None:
                raise ApiError(code="owner_unknown", message=f"tasks: no task {slug[:100]!r} on the named benchmark.")
            tasks[task] = rubric
        existed = SigningKey.objects.filter(public_key=form.validated_data["public_key"].strip()).exists()
        try:
            key = signing_key_register(
                evaluator=evaluator,
                validator=validator,
                judge_name=judge_name,
                benchmark=benchmark if validator is not None else None,
                tasks=tasks or None,
                public_key_b64=form.validated_data["public_key"],
                user=request.user,
            )
        except SigningKeyError as exc:
            raise ApiError(code="signing_key_invalid", message=str(exc)) from None
        return Response(
            SigningKeySerializer(key).data, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        )
