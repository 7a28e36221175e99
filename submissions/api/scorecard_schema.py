"""The OpenAPI shapes of the play API's answers (documentation only: the views build plain
dicts, ``submissions.api.scorecards.card_json`` and ``submissions.services.cards.episode_json``).

A harness generated from the schema got ``{"type": "object"}`` for every card and episode;
``tests/api/test_schema_conformance.py`` holds the answers to these shapes."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

from leaderboard.api.fields import StrictCharField, StrictChoiceField, StrictURLField

__all__ = ["CARD", "CARD_LIST", "EPISODE"]


class _Agent(serializers.Serializer):
    name = StrictCharField()
    version = StrictCharField()


class _Played(serializers.Serializer):
    level = StrictCharField()
    steps = serializers.IntegerField()
    solved = serializers.BooleanField()
    deadlocked = serializers.BooleanField()
    done = serializers.BooleanField()
    restarts = serializers.IntegerField()


class CardSummarySchema(serializers.Serializer):
    id = serializers.IntegerField()
    status = StrictChoiceField(choices=["open", "closed"])
    benchmark = StrictCharField()
    release = StrictCharField()
    agent = _Agent()
    opened_at = serializers.DateTimeField()
    last_activity_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True, help_text="when an open card idles out; null once closed")
    closed_at = serializers.DateTimeField(allow_null=True)


class CardSchema(CardSummarySchema):
    levels = serializers.ListField(child=StrictCharField(), help_text="the hidden set's level ids")
    budget = serializers.DictField(child=serializers.IntegerField(), help_text="level id -> max(30, 3 x optimal)")
    closed_by = StrictChoiceField(choices=["player", "expiry"], allow_null=True)
    played = _Played(many=True)
    # Seed 001's scorecard, null until the card is closed.
    episodes = serializers.IntegerField(allow_null=True)
    solved = serializers.IntegerField(allow_null=True)
    success_rate = serializers.FloatField(allow_null=True)
    move_efficiency = serializers.FloatField(allow_null=True)
    avg_steps_solved = serializers.FloatField(allow_null=True)
    deadlock_rate = serializers.FloatField(allow_null=True)
    total_actions = serializers.IntegerField(allow_null=True)


class _State(serializers.Serializer):
    xsb = StrictCharField()
    player = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2)
    crates = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    goals = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    width = serializers.IntegerField()
    height = serializers.IntegerField()


class EpisodeSchema(_Played):
    """What reset, action and a level read answer: the played episode, with its state and budget."""

    state = _State()
    max_steps = serializers.IntegerField()
    last = serializers.DictField(
        child=StrictCharField(), required=False, help_text="an action's answer: the move and its result"
    )


CARD = OpenApiResponse(CardSchema)
EPISODE = OpenApiResponse(EpisodeSchema)
CARD_LIST = OpenApiResponse(
    inline_serializer(
        "ScorecardList",
        fields={
            "count": serializers.IntegerField(),
            "next": StrictURLField(allow_null=True),
            "previous": StrictURLField(allow_null=True),
            "results": CardSummarySchema(many=True),
        },
    )
)
