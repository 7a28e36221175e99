"""Serializers of the submitter and admin endpoints. They shape and validate; services write."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.api.fields import StrictCharField, StrictChoiceField, StrictModelSerializer, StrictSlugField
from leaderboard.disclosure import SubmissionView, submission_view
from leaderboard.models import SigningKey, SigningKeyEvent, SigningKeyTask
from submissions.models import Submission


class SubmissionSerializer(StrictModelSerializer):
    """A submission as its submitter (or staff) sees it. The diff and message pass through
    leaderboard.disclosure: a value that would reveal a withheld anchor is named, never shown."""

    message = serializers.SerializerMethodField()
    kind = serializers.SerializerMethodField()
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
        release = obj.release  # no query when release_id is null
        if release is None:
            return None
        return {"id": release.pk, "benchmark": release.benchmark.slug, "version": release.version}

    def _view(self, obj: Submission) -> SubmissionView:
        cached = getattr(obj, "_shown", None)
        if cached is None:
            request = self.context.get("request")
            cached = submission_view(obj, user=getattr(request, "user", None))
            obj._shown = cached  # type: ignore[attr-defined]  # memoised on the row for the other fields
        return cached

    @extend_schema_field(OpenApiTypes.STR)
    def get_message(self, obj: Submission) -> str:
        return self._view(obj).message

    @extend_schema_field(
        {
            "type": "string",
            "enum": list(Submission.Kind.values),
            "nullable": True,
            "description": "The bundle's kind; null until its manifest has been read (or when it could not be)",
        }
    )
    def get_kind(self, obj: Submission) -> str | None:
        return obj.kind or None

    @extend_schema_field(
        {
            "type": "integer",
            "nullable": True,
            "description": "The paper-gap run this submission produced; null until it is verified, and for "
            "rejected or mismatched bundles and other kinds",
        }
    )
    def get_run(self, obj: Submission) -> int | None:
        run = getattr(obj, "run", None) if obj.kind in ("", Submission.Kind.PAPER_GAP) else None
        return run.pk if run is not None else None

    @extend_schema_field(
        {
            "type": "array",
            "items": {"type": "object", "additionalProperties": True},
            "description": "Claimed versus recomputed, one object per differing field: path, claimed, recomputed, "
            "status; withheld: true (values null) where a value would reveal a withheld anchor",
        }
    )
    def get_diff(self, obj: Submission) -> list[Any]:
        return self._view(obj).diff


class SubmissionUploadSerializer(serializers.Serializer):
    """Multipart form of ``POST /api/v1/submissions/`` (documents the schema; the view validates)."""

    bundle = serializers.FileField(help_text="The sealed bundle (.age). Its name and content type are not trusted.")
    benchmark = StrictSlugField(
        help_text="Slug of the benchmark the bundle is for: the daily limit is counted per key per benchmark."
    )
    private = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true: keep the run off public leaderboards (only you and staff see it). Default false.",
    )


class SiteKeySerializer(serializers.Serializer):
    key_id = StrictCharField()
    public_key = StrictCharField(help_text="age X25519 recipient (age1...) bundles are encrypted to.")


class SigningKeyRegisterSerializer(serializers.Serializer):
    owner_kind = StrictChoiceField(choices=SigningKey.Owner.choices)
    owner = StrictCharField(
        max_length=100,
        help_text="Evaluator simulator (e.g. robosuite+robomimic), validator slug, or the judge's name.",
    )
    public_key = StrictCharField(max_length=64, help_text="Raw 32-byte Ed25519 public key, base64.")
    benchmark = StrictSlugField(
        max_length=64,
        required=False,
        help_text="Validator keys: the benchmark whose race runs the key signs. Judge keys, and evaluator keys "
        "narrowed to tasks: the benchmark of the listed tasks. Required for those (400 benchmark_missing).",
    )
    tasks = serializers.ListField(
        child=StrictCharField(max_length=201),
        required=False,
        default=list,
        # Under Django's DATA_UPLOAD_MAX_NUMBER_FIELDS (1000) with room for the other fields:
        # a longer multipart list would be refused by Django before this serializer sees it.
        max_length=200,
        help_text="Judge keys: 'task-slug@rubric-version' per calibrated task. Evaluator keys (optional): "
        "task slugs narrowing the key to those tasks of its simulator.",
    )


class SigningKeyEventSerializer(StrictModelSerializer):
    actor = StrictCharField(source="actor.get_username", allow_null=True, default=None, read_only=True)

    class Meta:
        model = SigningKeyEvent
        fields = ["action", "actor", "detail", "created_at"]
        read_only_fields = fields


class SigningKeySerializer(StrictModelSerializer):
    owner = serializers.SerializerMethodField()
    benchmark = serializers.SerializerMethodField()
    tasks = serializers.SerializerMethodField()
    registered_by = StrictCharField(source="registered_by.get_username", allow_null=True, default=None, read_only=True)
    # Who registered it, changed its scope and revoked it, and when (the staff audit; oldest first).
    events = SigningKeyEventSerializer(many=True, read_only=True)

    class Meta:
        model = SigningKey
        fields = [
            "key_id",
            "owner_kind",
            "owner",
            "benchmark",
            "tasks",
            "public_key",
            "created_at",
            "registered_by",
            "revoked_at",
            "events",
        ]
        read_only_fields = fields

    def get_owner(self, obj: SigningKey) -> str:
        if obj.owner_kind == SigningKey.Owner.EVALUATOR and obj.evaluator is not None:
            return obj.evaluator.simulator
        if obj.owner_kind == SigningKey.Owner.JUDGE:
            return obj.judge_name
        return obj.validator.slug if obj.validator is not None else ""

    def get_benchmark(self, obj: SigningKey) -> str | None:
        # A validator key stores its benchmark; a judge key, and an evaluator key narrowed to
        # tasks, are scoped through their tasks, all of the benchmark the registration named.
        if obj.benchmark is not None:
            return obj.benchmark.slug
        scope = next(iter(_task_scopes(obj)), None)
        return scope.task.benchmark.slug if scope is not None else None

    @extend_schema_field({"type": "array", "items": {"type": "object"}})
    def get_tasks(self, obj: SigningKey) -> list[dict[str, str]]:
        return [{"task": scope.task.slug, "rubric_version": scope.rubric_version} for scope in _task_scopes(obj)]


def _task_scopes(key: SigningKey) -> list[SigningKeyTask]:
    """A key's task scopes by task slug, each with its task and the task's benchmark: the list
    view's prefetch (``signing_key_scopes_prefetch``) when it ran, else one query."""
    if "task_scopes" in getattr(key, "_prefetched_objects_cache", {}):
        return list(key.task_scopes.all())
    return list(key.task_scopes.select_related("task__benchmark").order_by("task__slug"))


def signing_key_scopes_prefetch() -> Prefetch:
    """What a list of keys prefetches so :class:`SigningKeySerializer` reads no row per key."""
    return Prefetch(
        "task_scopes", queryset=SigningKeyTask.objects.select_related("task__benchmark").order_by("task__slug")
    )
