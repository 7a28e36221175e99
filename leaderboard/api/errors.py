"""The API's one error shape, ``{"error": {"code", "message", "fields"?}}``: the dict every
error answer is built with and the serializer that documents it in the OpenAPI schema.
Imported by the exception handler (leaderboard.api_errors) and the 503 answer (leaderboard.unavailable)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from leaderboard.api.fields import StrictCharField


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **extra}}


class ErrorDetailSerializer(serializers.Serializer):
    code = StrictCharField()
    message = StrictCharField()
    # DRF's serializer metaclass pops declared fields off the class, so this names the
    # output key "fields" without replacing Serializer.fields at run time.
    fields = serializers.DictField(required=False)  # type: ignore[assignment]


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()
