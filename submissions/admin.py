"""Admin for submissions, runs, the verification log and signing keys.

Everything a submitter sent or the worker concluded is read-only here: an
admin can re-queue verification and record a maintainer attestation, never
edit a verdict. Verification events are append-only (add, no change/delete).
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from leaderboard.models import Benchmark, Evaluator, Task, Validator
from submissions.models import (
    Card,
    CardEpisode,
    CardMove,
    Run,
    SigningKey,
    Submission,
    SubmissionChallenge,
    TaskResult,
    VerificationEvent,
)
from submissions.services.runs import RunError, run_record_verified
from submissions.services.signing_keys import (
    SigningKeyError,
    decode_public_key,
    signing_key_register,
    signing_key_revoke,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [field.name for field in self.model._meta.fields]


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdmin):
    list_display = ["id", "submitter", "kind", "status", "verdict", "error_code", "attempts", "created_at"]
    list_filter = ["status", "verdict", "kind"]
    search_fields = ["id", "sha256", "submitter__username", "original_name"]
    list_select_related = ["submitter"]
    actions = ["reverify"]

    @admin.action(description="Re-verify (queue again; finished submissions are skipped)")
    def reverify(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        from submissions.tasks import verify_submission

        pending = [s.pk for s in queryset if s.status != Submission.Status.DONE]
        for submission_id in pending:
            verify_submission.delay(str(submission_id))
        skipped = queryset.count() - len(pending)
        self.message_user(request, f"queued {len(pending)} submission(s); skipped {skipped} already finished")


class TaskResultInline(admin.TabularInline):
    model = TaskResult
    extra = 0
    can_delete = False
    fields = ["release_task", "measured", "gap", "factor", "score", "final", "pass_rate", "faithful", "signature"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class VerificationEventInline(admin.TabularInline):
    model = VerificationEvent
    extra = 0
    can_delete = False
    fields = ["created_at", "level", "actor", "method", "evidence_sha256", "note"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["id", "release", "agent_version", "level", "overall", "pass_rate", "complete", "is_private"]
    list_filter = ["level", "release", "complete"]
    list_select_related = ["release__benchmark", "agent_version__agent"]
    inlines = [TaskResultInline, VerificationEventInline]

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [*super().get_readonly_fields(request, obj), "record_verified"]

    @admin.display(description="Maintainer attestation")
    def record_verified(self, obj: Run) -> str:
        url = reverse("admin:submissions_verificationevent_add") + f"?run={obj.pk}"
        return format_html('<a href="{}">Record a verified attestation (official re-run, …)</a>', url)


class VerificationEventForm(forms.ModelForm):
    class Meta:
        model = VerificationEvent
        fields = ["run", "method", "evidence_sha256", "note"]
        help_texts = {
            "method": "How the run was verified, e.g. 'official re-run on hidden seeds'.",
            "evidence_sha256": "SHA-256 (hex) of the evidence: the re-run's bundle or log.",
        }


@admin.register(VerificationEvent)
class VerificationEventAdmin(admin.ModelAdmin):
    """Append-only: adding records a maintainer attestation; nothing can be changed or deleted."""

    form = VerificationEventForm
    list_display = ["created_at", "run", "level", "actor", "method", "evidence_sha256"]
    list_filter = ["level"]
    list_select_related = ["actor", "run"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: VerificationEvent, form, change: bool) -> None:
        try:
            event = run_record_verified(
                run=form.cleaned_data["run"],
                actor=request.user,
                method=form.cleaned_data["method"],
                evidence_sha256=form.cleaned_data["evidence_sha256"],
                note=form.cleaned_data.get("note", ""),
            )
        except RunError as exc:
            self.message_user(request, str(exc), level=messages.ERROR)
            return
        obj.pk = event.pk

    def log_addition(self, request, obj, message):
        if obj.pk:  # nothing was added when the service refused
            super().log_addition(request, obj, message)


class SigningKeyForm(forms.ModelForm):
    evaluator = forms.ModelChoiceField(queryset=Evaluator.objects.all(), required=False)
    validator = forms.ModelChoiceField(queryset=Validator.objects.all(), required=False)
    judge_name = forms.CharField(
        label="Judge", required=False, max_length=100, help_text="A judge's public identity, e.g. llm-judge/2026-05."
    )
    benchmark = forms.ModelChoiceField(
        queryset=Benchmark.objects.all(), required=False, help_text="Validator keys: the benchmark they sign for."
    )
    tasks = forms.ModelMultipleChoiceField(
        queryset=Task.objects.all(),
        required=False,
        help_text="Judge keys: the tasks the judge is calibrated for. Evaluator keys: optional narrowing.",
    )
    rubric_version = forms.CharField(
        required=False, max_length=100, help_text="Judge keys: the rubric version of the calibration."
    )
    public_key_b64 = forms.CharField(
        label="Public key", help_text="Base64 of the raw 32-byte Ed25519 public key.", max_length=100
    )

    class Meta:
        model = SigningKey
        fields: list[str] = []

    def clean(self):
        cleaned = super().clean()
        if sum(bool(cleaned.get(name)) for name in ("evaluator", "validator", "judge_name")) != 1:
            raise forms.ValidationError("Choose exactly one owner: an evaluator, a validator or a judge.")
        if cleaned.get("public_key_b64"):
            try:
                decode_public_key(cleaned["public_key_b64"])
            except SigningKeyError as exc:
                self.add_error("public_key_b64", str(exc))
        return cleaned


@admin.register(SigningKey)
class SigningKeyAdmin(admin.ModelAdmin):
    list_display = [
        "key_id",
        "owner_kind",
        "evaluator",
        "validator",
        "judge_name",
        "benchmark",
        "created_at",
        "revoked_at",
    ]
    list_filter = ["owner_kind"]
    actions = ["revoke"]

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = SigningKeyForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        if obj is None:
            return []
        return [field.name for field in self.model._meta.fields]

    def save_model(self, request: HttpRequest, obj: SigningKey, form, change: bool) -> None:
        if change:
            return
        try:
            rubric = form.cleaned_data.get("rubric_version") or ""
            key = signing_key_register(
                evaluator=form.cleaned_data.get("evaluator"),
                validator=form.cleaned_data.get("validator"),
                judge_name=form.cleaned_data.get("judge_name") or "",
                benchmark=form.cleaned_data.get("benchmark") if form.cleaned_data.get("validator") else None,
                tasks=dict.fromkeys(form.cleaned_data.get("tasks") or [], rubric) or None,
                public_key_b64=form.cleaned_data["public_key_b64"],
                user=request.user,
            )
        except SigningKeyError as exc:
            self.message_user(request, str(exc), level=messages.ERROR)
            return
        obj.pk = key.pk

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[SigningKey]) -> None:
        for key in queryset:
            signing_key_revoke(signing_key=key, user=request.user)
        self.message_user(request, f"revoked {queryset.count()} key(s)")


class CardEpisodeInline(admin.TabularInline):
    """A card's episodes, read-only: the audit view of what the server measured."""

    model = CardEpisode
    extra = 0
    can_delete = False
    fields = ["level", "steps", "restarts", "solved", "deadlocked", "out_of_budget", "abandoned", "done", "started_at"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Card)
class CardAdmin(ReadOnlyAdmin):
    """Played scorecards, read-only: only the play API and the idle sweep change them."""

    list_display = ["id", "release", "agent_version", "owner", "status", "closed_by", "opened_at", "closed_at"]
    list_filter = ["status", "closed_by", "release"]
    search_fields = ["owner__username", "agent_version__agent__name"]
    inlines = [CardEpisodeInline]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # view-only: a measured card is never edited


@admin.register(CardMove)
class CardMoveAdmin(ReadOnlyAdmin):
    """Every reset and action as the server recorded it, for audits."""

    list_display = ["episode", "seq", "step", "action", "result", "solved", "deadlocked", "at"]
    list_filter = ["result"]

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(SubmissionChallenge)
class SubmissionChallengeAdmin(admin.ModelAdmin):
    """Read-only: challenges are issued to submitters and used up by verification, never edited."""

    list_display = ["__str__", "user", "release", "race", "created_at", "expires_at", "used_at"]
    list_filter = ["used_at"]
    search_fields = ["user__username", "agent_version__agent__slug"]
    list_select_related = ["user", "release__benchmark", "race", "agent_version__agent"]

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
