"""Read endpoints of scorecard (seed 001) and race (seed 002) boards.

The rows are the boards' own (leaderboard.selectors.scheme_boards reads them through
the pages' selectors), behind the same visibility as the pages and their CSV/JSON
exports: a published release's scorecard board; a race's raw results only once the
race is released (staff excepted: ``race_embargoed`` otherwise); the Overall as of the
latest race whose results, and those of every race before it, are public.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard.api.errors import ErrorSerializer
from leaderboard.api.fields import StrictCharField, StrictChoiceField
from leaderboard.api_errors import ApiError, refuse_unread_parameters
from leaderboard.api_query import MAX_ID
from leaderboard.selectors import race as race_selectors
from leaderboard.selectors import scheme_boards as boards
from leaderboard.selectors import scorecard as scorecard_selectors

NOT_FOUND = {404: OpenApiResponse(ErrorSerializer, description="No such benchmark, release or race")}


class ScorecardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    agent = StrictCharField()
    agent_slug = StrictCharField()
    version = StrictCharField()
    verification = StrictCharField()
    episodes = serializers.IntegerField()
    solved = serializers.IntegerField()
    success_rate = serializers.FloatField()
    success_rate_ci_low = serializers.FloatField(allow_null=True)
    success_rate_ci_high = serializers.FloatField(allow_null=True)
    move_efficiency = serializers.FloatField(allow_null=True)
    avg_steps_solved = serializers.FloatField(allow_null=True)
    deadlock_rate_lower_bound = serializers.FloatField()
    total_actions = serializers.IntegerField()
    closed_at = serializers.DateTimeField(allow_null=True)


class ScorecardBoardSerializer(serializers.Serializer):
    benchmark = StrictCharField()
    release = StrictCharField()
    episode_set_size = serializers.IntegerField(allow_null=True)
    rows = ScorecardRowSerializer(many=True)


class RaceRefSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    name = StrictCharField(allow_blank=True)
    status = StrictChoiceField(choices=["scheduled", "running", "embargoed", "released"])
    released_at = serializers.DateTimeField(allow_null=True)


class OverallRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    agent = StrictCharField()
    agent_slug = StrictCharField()
    version = StrictCharField()
    overall = serializers.FloatField()
    races_counted = serializers.IntegerField()
    window = serializers.IntegerField()
    top_agent = serializers.BooleanField()


class RaceOverallSerializer(serializers.Serializer):
    benchmark = StrictCharField()
    anchor_race = RaceRefSerializer(allow_null=True)
    rows = OverallRowSerializer(many=True)


class RaceResultRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    agent = StrictCharField()
    agent_slug = StrictCharField()
    version = StrictCharField()
    raw_score = serializers.FloatField()
    baseline = serializers.FloatField()
    vs_field = serializers.FloatField()
    runs_included = serializers.IntegerField()
    runs_excluded = serializers.IntegerField()


class RaceResultsSerializer(serializers.Serializer):
    benchmark = StrictCharField()
    race = RaceRefSerializer()
    rows = RaceResultRowSerializer(many=True)


class QualifyingRowSerializer(serializers.Serializer):
    agent = StrictCharField()
    agent_slug = StrictCharField()
    version = StrictCharField()
    score = serializers.FloatField(allow_null=True)
    runs_included = serializers.IntegerField()
    runs_excluded = serializers.IntegerField()


class QualifyingSerializer(serializers.Serializer):
    benchmark = StrictCharField()
    release = StrictCharField(allow_null=True)
    rows = QualifyingRowSerializer(many=True)


class _PublicView(APIView):
    permission_classes = [permissions.AllowAny]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        # A board takes no query but DRF's format: ?limit= or ?at= was ignored and answered whole.
        refuse_unread_parameters(request, frozenset({"format"}), what="board")


class ScorecardBoardView(_PublicView):
    @extend_schema(
        summary="Scorecard board of a published release (each agent's best card)",
        responses={200: ScorecardBoardSerializer, **NOT_FOUND},
    )
    def get(self, request: Request, benchmark: str, version: str) -> Response:
        release = scorecard_selectors.scorecard_release_get(benchmark_slug=benchmark, version=version)
        return Response(
            {
                "benchmark": release.benchmark.slug,
                "release": release.version,
                "episode_set_size": release.episode_set_size,
                "rows": boards.scorecard_board_records(release=release),
            }
        )


class RaceOverallView(_PublicView):
    @extend_schema(
        summary="Race Overall board (as of the latest race whose results are public; staff: the live anchor)",
        responses={200: RaceOverallSerializer, **NOT_FOUND},
    )
    def get(self, request: Request, benchmark: str) -> Response:
        race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
        anchor, rows = boards.race_overall_records(benchmark=race_benchmark, user=request.user)
        return Response(
            {
                "benchmark": race_benchmark.slug,
                "anchor_race": boards.race_record(anchor) if anchor is not None else None,
                "rows": rows,
            }
        )


class RaceResultsView(_PublicView):
    @extend_schema(
        summary="One race's raw results, baseline and vs Field (once the race is released)",
        responses={
            200: RaceResultsSerializer,
            403: OpenApiResponse(ErrorSerializer, description="race_embargoed: the race is not released yet"),
            **NOT_FOUND,
        },
    )
    def get(self, request: Request, benchmark: str, number: int) -> Response:
        if number > MAX_ID:  # beyond a bigint the database would raise instead of finding nothing
            raise ApiError(code="not_found", message="No such race.", status_code=404)
        race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
        race = race_selectors.race_get(benchmark=race_benchmark, number=number)
        try:
            rows = boards.race_result_records(race=race, user=request.user)
        except boards.RaceEmbargoed as error:
            raise ApiError(code="race_embargoed", message=f"{error}.", status_code=403) from None
        return Response({"benchmark": race_benchmark.slug, "race": boards.race_record(race), "rows": rows})


class RaceQualifyingView(_PublicView):
    @extend_schema(
        summary="Race qualifying board (the public frozen task set; never embargoed)",
        responses={200: QualifyingSerializer, **NOT_FOUND},
    )
    def get(self, request: Request, benchmark: str) -> Response:
        race_benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark, user=request.user)
        release = race_selectors.qualifying_release(benchmark=race_benchmark)
        rows: list[dict[str, Any]] = boards.qualifying_records(release=release) if release is not None else []
        return Response(
            {"benchmark": race_benchmark.slug, "release": release.version if release else None, "rows": rows}
        )
