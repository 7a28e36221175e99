"""Public read endpoints: benchmarks, releases, tasks, leaderboards, runs, agents."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import QueryDict
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import generics, permissions, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api import selectors
from leaderboard.api.conditional import etag_matches, not_modified
from leaderboard.api.errors import ErrorSerializer
from leaderboard.api.serializers import (
    AgentSerializer,
    BenchmarkSerializer,
    ReleaseSerializer,
    RunDetailSerializer,
    RunSerializer,
    StandingSerializer,
    TaskDetailSerializer,
    TaskSerializer,
)
from leaderboard.api_errors import LIST_PARAMETERS, ApiError, refuse_unread_parameters
from leaderboard.api_query import MAX_ID, boolean, whole_number
from leaderboard.models import Standing, Task
from leaderboard.selectors.paper_gap import SORTS, BoardQueryError, board_query_from_params, board_rows_all

if TYPE_CHECKING:
    from rest_framework.permissions import _PermissionClass  # the stub's name for one entry

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Invalid query"),
    404: OpenApiResponse(ErrorSerializer, description="Not found"),
}
VERIFICATION_LEVELS = ("validated", "attested", "verified")
NOT_MODIFIED = {304: OpenApiResponse(description="Not modified (If-None-Match matched the ETag)")}


def _bool_param(request: Request, name: str) -> bool | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    value = boolean(raw)
    if value is not None:
        return value
    raise ApiError(code="invalid_query", message=f"{name}: expected true or false, got {raw[:20]!r}.")


def _choice_param(request: Request, name: str, choices: list[str]) -> str | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if raw not in choices:
        raise ApiError(code="invalid_query", message=f"{name}: expected one of {', '.join(choices)}, got {raw[:40]!r}.")
    return raw


class ApiRootView(APIView):
    """Where everything is: a starting point for people exploring with curl."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        summary="API index",
        responses={200: {"type": "object", "additionalProperties": {"type": "string", "format": "uri"}}},
    )
    def get(self, request: Request) -> Response:
        names = {
            "benchmarks": "api-benchmark-list",
            "releases": "api-release-list",
            "tasks": "api-task-list",
            "runs": "api-run-list",
            "agents": "api-agent-list",
            "submissions": "api-submission-list",
            "scorecards": "api-scorecard-open",
            "site_key": "api-site-key",
            "schema": "api-schema",
            "docs": "api-docs",
        }
        return Response({key: request.build_absolute_uri(reverse(name)) for key, name in names.items()})


class PublicReadMixin:
    permission_classes: Sequence[_PermissionClass] = [permissions.AllowAny]
    # The filters the list reads; any other parameter is refused (a typo such as ?releases=6 was
    # ignored and answered every run, as if the filter had matched).
    list_filters: frozenset[str] = frozenset()

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        refuse_unread_parameters(request, LIST_PARAMETERS | self.list_filters)
        return super().list(request, *args, **kwargs)  # type: ignore[misc]


@extend_schema_view(
    list=extend_schema(summary="Benchmarks", responses={200: BenchmarkSerializer(many=True), **NOT_MODIFIED}),
    retrieve=extend_schema(summary="One benchmark", responses={200: BenchmarkSerializer, **ERRORS, **NOT_MODIFIED}),
)
class BenchmarkViewSet(PublicReadMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = BenchmarkSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Any]:
        return selectors.benchmark_list(self.request.user)


@extend_schema_view(
    list=extend_schema(
        summary="Releases (published; staff also see drafts)",
        parameters=[OpenApiParameter("benchmark", OpenApiTypes.STR, description="Benchmark slug")],
        responses={200: ReleaseSerializer(many=True), **NOT_MODIFIED},
    ),
    retrieve=extend_schema(
        summary="One release: required tasks, task-set hash, published anchors",
        responses={200: ReleaseSerializer, **ERRORS, **NOT_MODIFIED},
    ),
)
class ReleaseViewSet(PublicReadMixin, viewsets.ReadOnlyModelViewSet):
    list_filters = frozenset({"benchmark"})
    serializer_class = ReleaseSerializer

    def get_queryset(self) -> QuerySet[Any]:
        queryset = selectors.release_list(self.request.user).order_by("benchmark__slug", "-published_at", "-id")
        benchmark = self.request.query_params.get("benchmark")
        if benchmark:
            queryset = queryset.filter(benchmark__slug=benchmark)
        return queryset


@extend_schema_view(
    list=extend_schema(
        summary="Tasks of visible releases (contracts without anchors)",
        parameters=[
            OpenApiParameter("benchmark", OpenApiTypes.STR, description="Benchmark slug"),
            OpenApiParameter("genre", OpenApiTypes.STR, enum=list(Task.Genre.values)),
            OpenApiParameter("platform", OpenApiTypes.STR, enum=list(Task.Platform.values)),
        ],
        responses={200: TaskSerializer(many=True), **ERRORS, **NOT_MODIFIED},
    ),
    retrieve=extend_schema(summary="One task", responses={200: TaskDetailSerializer, **ERRORS, **NOT_MODIFIED}),
)
class TaskViewSet(PublicReadMixin, viewsets.ReadOnlyModelViewSet):
    list_filters = frozenset({"benchmark", "genre", "platform"})

    def get_serializer_class(self) -> type[TaskSerializer]:
        return TaskDetailSerializer if self.action == "retrieve" else TaskSerializer

    def get_queryset(self) -> QuerySet[Any]:
        queryset = selectors.task_list(self.request.user)
        if self.action != "list":
            return queryset
        benchmark = self.request.query_params.get("benchmark")
        if benchmark:
            queryset = queryset.filter(benchmark__slug=benchmark)
        genre = _choice_param(self.request, "genre", list(Task.Genre.values))
        if genre:
            queryset = queryset.filter(genre=genre)
        platform = _choice_param(self.request, "platform", list(Task.Platform.values))
        if platform:
            queryset = queryset.filter(platform=platform)
        return queryset


@extend_schema_view(
    list=extend_schema(
        summary="Agents and their versions", responses={200: AgentSerializer(many=True), **NOT_MODIFIED}
    ),
    retrieve=extend_schema(summary="One agent", responses={200: AgentSerializer, **ERRORS, **NOT_MODIFIED}),
)
class AgentViewSet(PublicReadMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = AgentSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Any]:
        return selectors.agent_list(self.request.user)


@extend_schema_view(
    list=extend_schema(
        summary="Runs you may see (public runs; your own private ones)",
        parameters=[
            OpenApiParameter("release", {"type": "integer", "minimum": 1, "maximum": MAX_ID}, description="Release id"),
            OpenApiParameter("agent", OpenApiTypes.STR, description="Agent slug"),
            OpenApiParameter(
                "complete",
                OpenApiTypes.BOOL,
                description="true: only runs covering every required task; false: only runs that do not "
                "(a filter either way, unlike the leaderboard's complete toggle, where false shows every row)",
            ),
        ],
        responses={200: RunSerializer(many=True), **ERRORS, **NOT_MODIFIED},
    ),
    retrieve=extend_schema(
        summary="One run with its per-task breakdown and verification log",
        responses={200: RunDetailSerializer, **ERRORS, **NOT_MODIFIED},
    ),
)
class RunViewSet(PublicReadMixin, viewsets.ReadOnlyModelViewSet):
    list_filters = frozenset({"release", "agent", "complete"})

    def get_serializer_class(self) -> type[RunSerializer]:
        return RunDetailSerializer if self.action == "retrieve" else RunSerializer

    def get_queryset(self) -> QuerySet[Any]:
        queryset = selectors.runs_visible(self.request.user, with_breakdown=self.action == "retrieve").order_by(
            "-created_at", "-id"
        )
        if self.action != "list":
            return queryset
        release = self.request.query_params.get("release")
        if release:
            release_id = whole_number(release, minimum=1)
            if release_id is None:
                raise ApiError(
                    code="invalid_query",
                    message=f"release: expected a release id (a whole number from 1 to {MAX_ID}), "
                    f"got {release[:24]!r}.",
                )
            queryset = queryset.filter(release_id=release_id)
        agent = self.request.query_params.get("agent")
        if agent:
            queryset = queryset.filter(agent_version__agent__slug=agent)
        complete = _bool_param(self.request, "complete")
        if complete is not None:
            queryset = queryset.filter(complete=complete)
        return queryset


# The board's filters and sort (the page's names), which LeaderboardView reads.
BOARD_PARAMETERS = frozenset(
    {"complete", "sort", "dir", "verification", "q", "org", "model", "weights", "since", "until"}
)


class LeaderboardView(generics.ListAPIView):
    """Precomputed standings of one release and tab: the columns, sorting and filtering of the page.

    The query is parsed and ordered by the page's own selector (leaderboard.selectors.paper_gap),
    so the API and the page can never disagree on what a sort key or the complete filter means.
    """

    permission_classes = [permissions.AllowAny]
    serializer_class = StandingSerializer

    @extend_schema(
        summary="Leaderboard of a release, one tab",
        parameters=[
            OpenApiParameter("tab", OpenApiTypes.STR, OpenApiParameter.PATH, enum=list(Standing.Tab.values)),
            OpenApiParameter(
                "complete",
                OpenApiTypes.STR,
                enum=["1", "0", "true", "false"],
                description="1/true: only runs with complete coverage of the required task set (the page's filter)",
            ),
            OpenApiParameter("sort", OpenApiTypes.STR, enum=list(SORTS), description="The page's sort keys"),
            OpenApiParameter(
                "dir", OpenApiTypes.STR, enum=["asc", "desc"], description="Default: the column's natural direction"
            ),
            OpenApiParameter("verification", OpenApiTypes.STR, enum=list(VERIFICATION_LEVELS)),
            OpenApiParameter("q", OpenApiTypes.STR, description="Agent name contains"),
            OpenApiParameter("org", OpenApiTypes.STR, description="Declared organisation contains"),
            OpenApiParameter("model", OpenApiTypes.STR, description="One of the declared base models contains"),
            OpenApiParameter("weights", OpenApiTypes.STR, enum=["open", "closed"], description="Declared weights"),
            OpenApiParameter("since", OpenApiTypes.DATE, description="Verified on or after (YYYY-MM-DD)"),
            OpenApiParameter("until", OpenApiTypes.DATE, description="Verified on or before (YYYY-MM-DD)"),
        ],
        responses={200: StandingSerializer(many=True), **ERRORS, **NOT_MODIFIED},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        refuse_unread_parameters(request, LIST_PARAMETERS | BOARD_PARAMETERS)
        release = get_object_or_404(selectors.releases_visible(request.user), pk=kwargs["release_id"])
        tab = kwargs["tab"]
        if tab not in Standing.Tab.values:
            raise ApiError(
                code="not_found",
                message=f"No leaderboard tab {tab[:30]!r}; expected one of {', '.join(Standing.Tab.values)}.",
                status_code=404,
            )
        params = {"tab": tab, "sort": request.query_params.get("sort", ""), "dir": request.query_params.get("dir", "")}
        complete = request.query_params.get("complete", "")
        params["complete"] = {"true": "1", "false": "0"}.get(complete.lower(), complete)
        # Issue 13's search and filters, with the page's names and rules.
        for name in ("q", "org", "model", "weights", "since", "until"):
            params[name] = request.query_params.get(name, "")
        try:
            self.board_query = board_query_from_params(QueryDict(urlencode(params)))
        except BoardQueryError as exc:
            raise ApiError(code="invalid_query", message=f"{exc}.") from None
        self.verification = _choice_param(request, "verification", list(VERIFICATION_LEVELS))
        self.release = release
        # Standings only change when their rewrite bumps the generation, so the ETag needs no query of them.
        query = "&".join(sorted(f"{k}={v}" for k, v in request.query_params.items()))
        digest = hashlib.sha256(f"{tab}?{query}".encode()).hexdigest()[:16]
        etag = f'"lb-{release.pk}-{release.generation}-{digest}"'
        if etag_matches(request, etag):
            return not_modified(etag)
        response = self.list(request, *args, **kwargs)
        response["ETag"] = etag
        response["Cache-Control"] = "no-cache"
        return response

    def get_queryset(self) -> QuerySet[Any]:
        # Private runs never rank publicly, whatever the rewrite that produced the rows did.
        # The narrowing happens inside board_rows_all, before the ranks are computed.
        return board_rows_all(
            release=self.release, query=self.board_query, exclude_private=True, verification=self.verification or ""
        )
