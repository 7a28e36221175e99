"""Serializers of the submitter and admin endpoints. They shape and validate; services write."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from submissions.models import SigningKey, Submission


class SubmissionSerializer(serializers.ModelSerializer):
    message = serializers.CharField(source="error_message", read_only=True)
    release = serializers.SerializerMethodField()
    run = serializers.SerializerMethodField()
    diff = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "status",
            "verdict",
            "error_code",
            "message",
            "diff",
            "kind",
            "release",
            "run",
            "original_name",
            "sha256",
            "size",
            "is_private",
            "attempts",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(
        {
            "type": "object",
            "nullable": True,
            "properties": {"id": {"type": "integer"}, "benchmark": {"type": "string"}, "version": {"type": "string"}},
        }
    )
    def get_release(self, obj: Submission) -> dict[str, Any] | None:
        if obj.release_id is None:
            return None
        return {"id": obj.release_id, "benchmark": obj.release.benchmark.slug, "version": obj.release.version}

    @extend_schema_field(OpenApiTypes.INT)
    def get_run(self, obj: Submission) -> int | None:
        run = getattr(obj, "run", None) if obj.kind in ("", Submission.Kind.PAPER_GAP) else None
        return run.pk if run is not None else None

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": True}})
    def get_diff(self, obj: Submission) -> list[Any]:
        return obj.diff if isinstance(obj.diff, list) else []


class SubmissionUploadSerializer(serializers.Serializer):
    """Multipart form of ``POST /api/v1/submissions/`` (documents the schema; the view validates)."""

    bundle = serializers.FileField(help_text="The sealed bundle (.age). Its name and content type are not trusted.")
    benchmark = serializers.SlugField(
        help_text="Slug of the benchmark the bundle is for: the daily limit is counted per key per benchmark."
    )


class SiteKeySerializer(serializers.Serializer):
    key_id = serializers.CharField()
    public_key = serializers.CharField(help_text="age X25519 recipient (age1...) bundles are encrypted to.")


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(required=False)


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


class SigningKeyRegisterSerializer(serializers.Serializer):
    owner_kind = serializers.ChoiceField(choices=SigningKey.Owner.choices)
    owner = serializers.CharField(
        max_length=100, help_text="Evaluator simulator (e.g. robosuite+robomimic) or validator slug."
    )
    public_key = serializers.CharField(max_length=64, help_text="Raw 32-byte Ed25519 public key, base64.")


class SigningKeySerializer(serializers.ModelSerializer):
    owner = serializers.SerializerMethodField()

    class Meta:
        model = SigningKey
        fields = ["key_id", "owner_kind", "owner", "public_key", "created_at", "revoked_at"]
        read_only_fields = fields

    def get_owner(self, obj: SigningKey) -> str:
        if obj.owner_kind == SigningKey.Owner.EVALUATOR and obj.evaluator_id:
            return obj.evaluator.simulator
        return obj.validator.slug if obj.validator_id else ""


class ManifestUploadSerializer(serializers.Serializer):
    manifest = serializers.FileField(help_text="A zip of the manifest directory (release.yaml + tasks/...).")


class ManifestSyncResultSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["created", "updated", "unchanged"])
    release = serializers.DictField()
    changes = serializers.ListField(child=serializers.CharField())
    notes = serializers.ListField(child=serializers.CharField())


class RaceStatusSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    benchmark = serializers.CharField()
    number = serializers.IntegerField()
    status = serializers.CharField()
    released_at = serializers.DateTimeField(allow_null=True)
