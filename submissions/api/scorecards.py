"""Playing scorecards over the API (seed 001; docs/api.md "Scorecards").

The views validate the body with a serializer (so the OpenAPI schema and the
checks are one thing) and delegate to submissions.services.cards; every
refusal is a CardError turned into the API's one error shape. Authentication
is the uploads' (an API key, or a browser session with CSRF); anonymous
requests get 401 ``not_authenticated``.

Throttles: the general per-minute limits apply to the reads (a card, its list, a
level) -- nothing else bounds them. The writes are bounded by the game itself (an
action by its level's step budget, a reset by the restart cap, an open by the daily
card limit, a close by the open), and the play loop must stay as cheap as the
trivial view (bench/play_bench.py): they take no throttle (``_PlayView``).

The action URL is served by :func:`level_action`: the play loop's usual request (a
key, a valid move, an episode in play) is answered without DRF's request machinery,
which cost more than the action itself; every other request goes to
:class:`LevelActionView`, so refusals keep the one error contract.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils import json as drf_json
from rest_framework.views import APIView

from leaderboard.api.errors import ErrorSerializer
from leaderboard.api.fields import StrictCharField, StrictChoiceField, StrictSlugField
from leaderboard.api.pagination import StrictLimitOffsetPagination
from leaderboard.api_errors import (
    LIST_PARAMETERS,
    ApiError,
    refuse_body_fields,
    refuse_fields_not_read,
    refuse_unread_parameters,
)
from leaderboard.api_query import whole_number
from leaderboard.users import signed_in_user
from scoring import scorecard as scorecard_scoring
from scoring.sokoban import ACTIONS
from submissions.api.parsers import refuse_duplicate_keys, strict_body_refusal
from submissions.api.scorecard_schema import CARD, CARD_LIST, EPISODE
from submissions.api_keys import api_key_claim, api_key_record_use, api_key_valid
from submissions.models import ApiKey, Card, CardEpisode
from submissions.services import cards as card_services

METRICS = (
    "episodes",
    "solved",
    "success_rate",
    "move_efficiency",
    "avg_steps_solved",
    "deadlock_rate",
    "total_actions",
)


class CardAgentSerializer(serializers.Serializer):
    name = StrictCharField(max_length=200)
    version = StrictCharField(max_length=100)


class CardOpenSerializer(serializers.Serializer):
    benchmark = StrictSlugField(max_length=64)
    agent = CardAgentSerializer()


class ActionSerializer(serializers.Serializer):
    action = StrictChoiceField(choices=list(ACTIONS))


_ERROR = OpenApiResponse(ErrorSerializer)
_COMMON = {401: _ERROR, 403: _ERROR, 404: _ERROR, 409: _ERROR}


def _raise(exc: card_services.CardError) -> ApiError:
    return ApiError(code=exc.code, message=exc.message, status_code=exc.status, headers=exc.headers)


def _validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def card_json(card: Card) -> dict[str, Any]:
    """The card as GET, open and close return it: levels and budgets, what was played,
    and (once closed) the seven numbers of seed 001's scorecard; never a level layout."""
    levels = list(card.release.scorecard_levels.order_by("level_id").values_list("level_id", "optimal_len"))
    played = [
        {
            "level": level_id,
            "steps": steps,
            "solved": solved,
            "deadlocked": deadlocked,
            "done": done,
            "restarts": restarts,
        }
        for level_id, steps, solved, deadlocked, done, restarts in CardEpisode.objects.filter(card=card)
        .order_by("id")
        .values_list("level__level_id", "steps", "solved", "deadlocked", "done", "restarts")
    ]
    run = getattr(card, "run", None) if card.status == Card.Status.CLOSED else None
    body: dict[str, Any] = {
        "id": card.pk,
        "status": card.status,
        "benchmark": card.release.benchmark.slug,
        "release": card.release.version,
        "agent": {"name": card.agent_version.agent.name, "version": card.agent_version.version},
        "levels": [level_id for level_id, _ in levels],
        # Seed 001's budget max(30, 3 x optimal); the issue's contract sends it with the card.
        "budget": {level_id: scorecard_scoring.step_budget(optimal) for level_id, optimal in levels},
        "opened_at": card.opened_at,
        "last_activity_at": card.last_activity_at,
        "expires_at": card_services.card_expires_at(card) if card.status == Card.Status.OPEN else None,
        "closed_at": card.closed_at,
        "closed_by": card.closed_by or None,
        "played": played,
    }
    for name in METRICS:
        body[name] = getattr(run, name) if run is not None else None
    return body


def _card(card_id: int) -> Card:
    return Card.objects.select_related("release__benchmark", "agent_version__agent").get(pk=card_id)


def card_summary(card: Card) -> dict[str, Any]:
    """One card of the account's list: enough to find it again and see where it stands."""
    return {
        "id": card.pk,
        "status": card.status,
        "benchmark": card.release.benchmark.slug,
        "release": card.release.version,
        "agent": {"name": card.agent_version.agent.name, "version": card.agent_version.version},
        "opened_at": card.opened_at,
        "last_activity_at": card.last_activity_at,
        "expires_at": card_services.card_expires_at(card) if card.status == Card.Status.OPEN else None,
        "closed_at": card.closed_at,
    }


class _PlayView(APIView):
    """A play endpoint: its reads take the general per-minute limits, its writes none (the
    game bounds them; see the module's docstring)."""

    permission_classes = [permissions.IsAuthenticated]

    def get_throttles(self) -> list[Any]:
        return super().get_throttles() if self.request.method in permissions.SAFE_METHODS else []


class CardOpenView(_PlayView):
    @extend_schema(
        operation_id="scorecards_list",
        summary="Your scorecards, newest first (?status=open or closed)",
        parameters=[
            OpenApiParameter("status", str, enum=list(Card.Status.values), description="only open or closed cards"),
            OpenApiParameter("limit", int, description="page size (default 50, at most 500)"),
            OpenApiParameter("offset", int),
        ],
        responses={200: CARD_LIST, 400: _ERROR, **_COMMON},
        tags=["scorecards"],
    )
    def get(self, request: Request) -> Response:
        # A client that lost an open card's id (a crash) finds it here: the card still counts
        # against the day's allowance, and resuming it is better than opening another.
        refuse_unread_parameters(request, LIST_PARAMETERS | {"status"})
        status_filter = request.query_params.get("status")
        if status_filter is not None and status_filter not in Card.Status.values:
            raise ApiError(
                code="invalid_query",
                message=f"status: expected one of {', '.join(Card.Status.values)}, got {status_filter[:20]!r}.",
            )
        owner = signed_in_user(request)
        # An open card past its idle time is closed before it is listed (one query when none is).
        card_services.cards_close_idle(owner=owner)
        cards = (
            Card.objects.filter(owner=owner)
            .select_related("release__benchmark", "agent_version__agent")
            .order_by("-opened_at", "-pk")
        )
        if status_filter is not None:
            cards = cards.filter(status=status_filter)
        paginator = StrictLimitOffsetPagination()
        page = paginator.paginate_queryset(cards, request, view=self) or []
        return paginator.get_paginated_response([card_summary(card) for card in page])

    @extend_schema(
        summary="Open a scorecard on a benchmark's current release",
        # JSON only: the nested agent cannot be sent as a form (it was advertised as multipart).
        request={"application/json": CardOpenSerializer},
        responses={201: CARD, 400: _ERROR, 429: _ERROR, **_COMMON},
        tags=["scorecards"],
    )
    def post(self, request: Request) -> Response:
        refuse_fields_not_read(request.data, CardOpenSerializer)
        data = _validated(CardOpenSerializer, request.data)
        api_key = request.auth if isinstance(request.auth, ApiKey) else None
        try:
            card = card_services.card_open(
                user=signed_in_user(request),
                api_key=api_key,
                benchmark_slug=data["benchmark"],
                agent_name=data["agent"]["name"],
                agent_version=data["agent"]["version"],
            )
        except card_services.CardError as exc:
            raise _raise(exc) from None
        return Response(card_json(_card(card.pk)), status=201)


class CardDetailView(_PlayView):
    @extend_schema(summary="A scorecard so far", responses={200: CARD, **_COMMON}, tags=["scorecards"])
    def get(self, request: Request, card_id: int) -> Response:
        try:
            card = card_services.card_for_player(card_id=card_id, user=signed_in_user(request))
        except card_services.CardError as exc:
            raise _raise(exc) from None
        return Response(card_json(_card(card.pk)))


class CardCloseView(_PlayView):
    @extend_schema(
        summary="Close a scorecard: pad it and compute its metrics",
        request=None,
        responses={200: CARD, **_COMMON},
        tags=["scorecards"],
    )
    def post(self, request: Request, card_id: int) -> Response:
        refuse_body_fields(request)
        try:
            card = card_services.card_close(card_id=card_id, user=signed_in_user(request))
        except card_services.CardError as exc:
            raise _raise(exc) from None
        return Response(card_json(_card(card.pk)))


class LevelView(_PlayView):
    @extend_schema(
        summary="A started level's episode as it stands (to resume after a lost answer)",
        responses={200: EPISODE, **_COMMON},
        tags=["scorecards"],
    )
    def get(self, request: Request, card_id: int, level_id: str) -> Response:
        refuse_unread_parameters(request, frozenset({"format"}), what="level")
        try:
            view = card_services.card_episode_get(card_id=card_id, user=signed_in_user(request), level_id=level_id)
        except card_services.CardError as exc:
            raise _raise(exc) from None
        return Response(card_services.episode_json(view))


class LevelResetView(_PlayView):
    @extend_schema(
        summary="Start or restart a level's episode",
        request=None,
        responses={200: EPISODE, **_COMMON},
        tags=["scorecards"],
    )
    def post(self, request: Request, card_id: int, level_id: str) -> Response:
        refuse_body_fields(request)
        try:
            view = card_services.card_episode_reset(card_id=card_id, user=signed_in_user(request), level_id=level_id)
        except card_services.CardError as exc:
            raise _raise(exc) from None
        return Response(card_services.episode_json(view))


def _usual_action(body: Any) -> str | None:
    """The move in the play loop's usual body, exactly ``{"action": <a move>}``, else None (any
    other body, one with another field too, is the serializer's to accept or refuse). It needs
    no serializer to tell it is valid (that cost about a tenth of an action)."""
    action = body.get("action") if isinstance(body, dict) and len(body) == 1 else None
    if hasattr(body, "getlist") and len(body.getlist("action")) != 1:
        return None  # a form naming it twice: the serializer's path refuses it (read as the last, it played)
    return action if type(action) is str and action in ACTIONS else None


class LevelActionView(_PlayView):
    @extend_schema(
        summary="Apply one move to a level's episode",
        request=ActionSerializer,
        responses={200: EPISODE, 400: _ERROR, **_COMMON},
        tags=["scorecards"],
    )
    def post(self, request: Request, card_id: int, level_id: str) -> Response:
        body = request.data
        # Anything but the usual body gets the serializer's own refusal: one error contract.
        action = _usual_action(body)
        if not action:
            refuse_fields_not_read(body, ActionSerializer)
            action = _validated(ActionSerializer, body)["action"]
        try:
            view = card_services.card_episode_act(
                card_id=card_id, user=signed_in_user(request), level_id=level_id, action=action
            )
        except card_services.CardError as exc:
            raise _raise(exc) from None
        return Response(card_services.episode_json(view))


# The fast lane takes a body only this long: {"action": "right"} is 19 bytes; anything
# longer is left to DRF's parser (and Django's own upload limits) untouched.
FAST_BODY_MAX_BYTES = 256
# Accept headers DRF's negotiation answers with its one renderer, JSON (absent means */*).
_FAST_ACCEPT = frozenset({"", "*/*", "application/json"})


def _short_body(length: str | None) -> bool:
    # Through the one integer parser: str.isdigit() also accepts "²", which int() refuses (a 500
    # wherever the server passes such a header through, as runserver does).
    return length is not None and whole_number(length, minimum=1, maximum=FAST_BODY_MAX_BYTES) is not None


def _fast_action(request: HttpRequest, card_id: str, level_id: str) -> HttpResponse | None:
    """The answer DRF's view would give, for a request it would accept and the service can
    play without a lock; None for anything else (nothing written, nothing recorded)."""
    meta = request.META
    if (
        request.method != "POST"
        or meta.get("QUERY_STRING")  # ?format= and the like: DRF reads those
        or request.content_type != "application/json"
        or (request.content_params or {}).get("charset", "utf-8").lower() not in ("utf-8", "utf8")
        or meta.get("HTTP_ACCEPT", "").strip() not in _FAST_ACCEPT
        or not _short_body(meta.get("CONTENT_LENGTH"))
    ):
        return None
    try:
        # DRF's JSON reading exactly (its strict constants: no NaN or Infinity), then the API
        # parser's own refusals (a NUL or lone surrogate, a number overflowing to infinity):
        # a body DRF's view refuses is left to it, never played here.
        body = drf_json.loads(
            request.body.decode("utf-8"),
            parse_constant=drf_json.strict_constant,
            object_pairs_hook=refuse_duplicate_keys,
        )
        if strict_body_refusal(body) is not None:
            return None
    except (ValueError, RecursionError):  # also UnicodeDecodeError
        return None
    action = _usual_action(body)
    if action is None:
        return None
    claim = api_key_claim(request)
    if claim is None:
        return None
    read = card_services.card_play_read(key_prefix=claim.prefix, card_id=int(card_id), level_id=level_id)
    # Checked whether or not a row came back (the secret is hashed either way, so timing does not
    # tell whether the prefix owns the card). No row: no such key, or not its owner's card or
    # started episode; DRF's view says which.
    valid = api_key_valid(
        secret=claim.secret,
        key_hash=read.key_hash if read is not None else None,
        revoked=read is not None and read.key_revoked,
        user_active=read is not None and read.user_active,
    )
    if read is None or not valid:
        return None
    api_key_record_use(key_id=read.key_id, last_used_at=read.key_last_used_at)
    view = card_services.card_episode_act_unlocked(read=read, action=action)
    if view is None:
        return None
    response = HttpResponse(JSONRenderer().render(card_services.episode_json(view)), content_type="application/json")
    response["Allow"] = _ACTION_ALLOW
    return response


def _with_fast_lane(drf_view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    # wraps() copies the view's attributes too: ``cls`` (the OpenAPI schema still finds
    # LevelActionView) and ``csrf_exempt`` (as DRF's views, which check CSRF only for sessions).
    @functools.wraps(drf_view)
    def view(request: HttpRequest, card_id: str, level_id: str) -> HttpResponseBase:
        response = _fast_action(request, card_id, level_id)
        if response is not None:
            return response
        return drf_view(request, card_id=card_id, level_id=level_id)

    return view


# What DRF's view answers in Allow (its handlers, and OPTIONS).
_ACTION_ALLOW = ", ".join(LevelActionView().allowed_methods)
level_action = _with_fast_lane(LevelActionView.as_view())


__all__ = [
    "CardCloseView",
    "CardDetailView",
    "CardOpenView",
    "LevelActionView",
    "LevelResetView",
    "card_json",
    "level_action",
]
