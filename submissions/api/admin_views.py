"""Staff-only: register and list evaluator / validator signing keys; record official re-runs
and lower a run's verification level."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api.errors import ErrorSerializer
from leaderboard.api.fields import StrictCharField
from leaderboard.api.permissions import StaffPermission
from leaderboard.api.serializers import OfficialRerunSerializer, VerificationEventSerializer
from leaderboard.api_errors import LIST_PARAMETERS, ApiError, refuse_fields_not_read, refuse_unread_parameters
from leaderboard.models import Benchmark, Evaluator, Run, SigningKey, SigningKeyEvent, Task, Validator
from leaderboard.permissions import ADD_SIGNING_KEY, CHANGE_RUN
from leaderboard.request_text import StrictMultiPartParser
from leaderboard.uploads import SizeLimitUploadHandler, install_size_limit
from leaderboard.users import signed_in_user
from submissions.api.parsers import StrictJSONParser
from submissions.api.serializers import SigningKeyRegisterSerializer, SigningKeySerializer, signing_key_scopes_prefetch
from submissions.services.reruns import RerunError, run_level_change, run_rerun_record_bundle, run_rerun_record_results
from submissions.services.signing_keys import SigningKeyError, signing_key_register
from submissions.services.submissions import bundle_too_large

STAFF_ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Invalid key or owner"),
    401: OpenApiResponse(ErrorSerializer, description="Not authenticated"),
    403: OpenApiResponse(ErrorSerializer, description="Staff only, with the permission the action needs"),
}


def _scope_benchmark(kind: str, slug: str, items: list[str]) -> Benchmark | None:
    """The benchmark a registration names, on which its ``tasks`` are looked up by slug.

    A judge key is always scoped to tasks, and task slugs are unique only within a benchmark:
    without one no task can be found, and the answer named "the named benchmark" nobody had
    named (``owner_unknown`` for a field that was simply missing)."""
    if not slug:
        if kind == SigningKey.Owner.JUDGE:
            raise ApiError(
                code="benchmark_missing",
                message="benchmark: a judge key is calibrated for tasks of one benchmark; give that benchmark's "
                "slug (e.g. 'ale-robotics') with the tasks as 'task-slug@rubric-version'.",
            )
        if items:
            raise ApiError(
                code="benchmark_missing",
                message="benchmark: tasks are named by their slug on one benchmark; give that benchmark's slug "
                "(e.g. 'ale-robotics'), or leave tasks out for a key that signs every task of its simulator.",
            )
        return None
    if kind == SigningKey.Owner.EVALUATOR and not items:
        # Here a benchmark only names where the tasks are: alone it would be dropped, and the key
        # would sign every task of its simulator on every benchmark, wider than staff asked.
        raise ApiError(
            code="invalid",
            message="benchmark: an evaluator key is scoped by its simulator; to narrow it to one benchmark, list "
            "that benchmark's tasks too (or leave the benchmark out for every task of the simulator).",
        )
    benchmark = Benchmark.objects.filter(slug=slug).first()
    if benchmark is None:
        raise ApiError(code="owner_unknown", message=f"benchmark: no benchmark {slug!r}.")
    return benchmark


def _scoped_tasks(benchmark: Benchmark | None, items: list[str]) -> dict[Task, str]:
    """The registration's ``tasks`` ('slug@rubric' each) as {task: rubric version} on ``benchmark``."""
    tasks: dict[Task, str] = {}
    for item in items:
        slug, _, rubric = item.partition("@")
        task = Task.objects.filter(benchmark=benchmark, slug=slug).first() if benchmark is not None else None
        if task is None:
            raise ApiError(code="owner_unknown", message=f"tasks: no task {slug[:100]!r} on the named benchmark.")
        if task in tasks:
            # Which rubric would the key be scoped to? Not the last one silently: the admin says.
            raise ApiError(
                code="task_listed_twice",
                message=f"tasks: {slug[:100]!r} is listed twice ({tasks[task][:100]!r} and {rubric[:100]!r}); "
                "list each task once, with the one rubric version the key is calibrated for.",
            )
        tasks[task] = rubric
    return tasks


@extend_schema_view(
    list=extend_schema(
        summary="Registered signing keys (staff)", responses={200: SigningKeySerializer, **STAFF_ERRORS}
    ),
)
class SigningKeyViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    permission_classes = [StaffPermission]
    required_permission = ADD_SIGNING_KEY  # listing is a read: staff alone
    serializer_class = SigningKeySerializer

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        refuse_unread_parameters(request, LIST_PARAMETERS)
        return super().list(request, *args, **kwargs)

    def get_queryset(self) -> QuerySet[SigningKey]:
        return (
            SigningKey.objects.select_related("evaluator", "validator", "benchmark", "registered_by")
            .prefetch_related(
                Prefetch("events", queryset=SigningKeyEvent.objects.select_related("actor")),
                signing_key_scopes_prefetch(),
            )
            .order_by("-created_at", "-id")
        )

    @extend_schema(
        summary="Register an evaluator, judge or validator Ed25519 public key with its scope (staff)",
        request=SigningKeyRegisterSerializer,
        responses={201: SigningKeySerializer, 200: SigningKeySerializer, **STAFF_ERRORS},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        refuse_fields_not_read(request.data, SigningKeyRegisterSerializer)
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
        items = form.validated_data.get("tasks") or []
        benchmark = _scope_benchmark(kind, form.validated_data.get("benchmark") or "", items)
        tasks = _scoped_tasks(benchmark, items)
        existed = SigningKey.objects.filter(public_key=form.validated_data["public_key"].strip()).exists()
        try:
            key = signing_key_register(
                evaluator=evaluator,
                validator=validator,
                judge_name=judge_name,
                benchmark=benchmark if validator is not None else None,
                tasks=tasks or None,
                public_key_b64=form.validated_data["public_key"],
                user=signed_in_user(request),
            )
        except SigningKeyError as exc:
            raise ApiError(code=exc.code, message=str(exc)) from None
        return Response(
            SigningKeySerializer(key).data, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        )


# ------------------------------------------------------------ official re-runs (staff)


class RerunRequestSerializer(serializers.Serializer):
    bundle = serializers.FileField(required=False, help_text="The official re-run's bundle (submission format).")
    results = serializers.JSONField(
        required=False,
        help_text='Or the re-run\'s values: {"task_slug": {"measured": 0.61, "rates": {...}, "faithful": true}}',
    )
    note = StrictCharField(required=False, allow_blank=True)


class RunLevelRequestSerializer(serializers.Serializer):
    # A plain string (the service names the allowed values): a second "level" enum in the schema
    # would collide with Run.level's.
    level = StrictCharField(help_text="attested, validated or revoked; lower than the run's current level")
    # Blank or absent is the service's refusal (reason_missing, as docs/api.md says), not a shape error.
    reason = StrictCharField(required=False, allow_blank=True, default="")


def _rerun_error(exc: RerunError) -> ApiError:
    conflict = exc.code in ("run_revoked", "level_not_lower")
    return ApiError(
        code=exc.code,
        message=exc.message,
        status_code=status.HTTP_409_CONFLICT if conflict else status.HTTP_400_BAD_REQUEST,
    )


class RunRerunView(APIView):
    """Record an official re-run of a paper-gap run (submissions.services.reruns): a bundle of the
    submission format (multipart ``bundle``) or its values (JSON ``results``)."""

    permission_classes = [StaffPermission]
    required_permission = CHANGE_RUN
    parser_classes = [StrictMultiPartParser, StrictJSONParser]

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        if request.method == "POST" and (request.content_type or "").startswith("multipart/"):
            self.upload_guard: SizeLimitUploadHandler | None = install_size_limit(
                request, max_bytes=settings.PODIUM_MAX_BUNDLE_BYTES
            )
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(
        summary="Record an official re-run of a run (staff)",
        request={"multipart/form-data": RerunRequestSerializer, "application/json": RerunRequestSerializer},
        responses={201: OfficialRerunSerializer, 409: ErrorSerializer, 413: ErrorSerializer, **STAFF_ERRORS},
    )
    def post(self, request: Request, run_id: int) -> Response:
        guard = getattr(self, "upload_guard", None)
        data = request.data
        if guard is not None and guard.too_large:
            refused = bundle_too_large()
            raise ApiError(
                code=refused.code, message=refused.message, status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
            )
        run = get_object_or_404(Run, pk=run_id)
        if not isinstance(data, Mapping):  # a JSON list, string or number: data.get was a 500
            raise ApiError(code="rerun_input", message="Send a JSON object (or a form) with 'bundle' or 'results'.")
        refuse_fields_not_read(data, RerunRequestSerializer)
        upload = request.FILES.get("bundle")
        results = data.get("results")
        note = str(data.get("note") or "")
        if (upload is None) == (results is None):
            said = "not both" if upload is not None else "neither was given"
            raise ApiError(code="rerun_input", message=f"Give either a 'bundle' file or 'results' ({said}).")
        try:
            if upload is not None:
                rerun = run_rerun_record_bundle(run=run, actor=signed_in_user(request), bundle_file=upload, note=note)
            else:
                if isinstance(results, str):
                    try:
                        results = json.loads(results)
                    except (ValueError, RecursionError):  # RecursionError: nested past the parser's limit
                        raise ApiError(code="results_invalid", message="results: expected a JSON object.") from None
                rerun = run_rerun_record_results(run=run, actor=signed_in_user(request), results=results, note=note)
        except RerunError as exc:
            raise _rerun_error(exc) from None
        return Response(OfficialRerunSerializer(rerun).data, status=status.HTTP_201_CREATED)


class RunLevelView(APIView):
    """Lower a run's level (attested, validated or revoked) with a reason shown on the run page."""

    permission_classes = [StaffPermission]
    required_permission = CHANGE_RUN

    @extend_schema(
        summary="Lower a run's verification level (staff)",
        request=RunLevelRequestSerializer,
        responses={200: VerificationEventSerializer, 409: ErrorSerializer, **STAFF_ERRORS},
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(Run, pk=run_id)  # an unknown (or out-of-range) id is a 404 before any body check
        refuse_fields_not_read(request.data, RunLevelRequestSerializer)
        form = RunLevelRequestSerializer(data=request.data)
        # The API's one validation error: code invalid with fields (it was an undocumented invalid_request).
        form.is_valid(raise_exception=True)
        try:
            event = run_level_change(
                run=run,
                actor=signed_in_user(request),
                level=form.validated_data["level"],
                reason=form.validated_data["reason"],
            )
        except RerunError as exc:
            raise _rerun_error(exc) from None
        return Response(VerificationEventSerializer(event).data, status=status.HTTP_200_OK)
