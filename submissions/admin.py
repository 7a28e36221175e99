"""Admin for submissions, runs, the verification log and signing keys.

Everything a submitter sent or the worker concluded is read-only here: an
admin can re-queue verification, record an official re-run (its bundle or its
values, recomputed and compared) and lower a run's level with a reason, never
edit a verdict. Verification events are append-only and written by services.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet, Sum
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from leaderboard.models import (
    Benchmark,
    Evaluator,
    OfficialRerun,
    Run,
    SigningKey,
    SigningKeyEvent,
    Task,
    TaskResult,
    Validator,
    VerificationEvent,
)
from leaderboard.users import signed_in_user
from submissions.models import Card, CardEpisode, CardMove, Submission, SubmissionChallenge
from submissions.services.reruns import RerunError, run_level_change, run_rerun_record_bundle, run_rerun_record_results
from submissions.services.signing_keys import (
    SigningKeyError,
    decode_public_key,
    signing_key_register,
    signing_key_revoke,
)
from submissions.tasks import verify_submission


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

    @admin.action(description="Re-verify (queue again; finished submissions are skipped)", permissions=["change"])
    def reverify(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        pending = [s.pk for s in queryset if s.status != Submission.Status.DONE]
        for submission_id in pending:
            verify_submission.delay(str(submission_id))
        skipped = queryset.count() - len(pending)
        self.message_user(request, f"queued {len(pending)} submission(s); skipped {skipped} already finished")


class TaskResultInline(admin.TabularInline):
    model = TaskResult
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "release_task",
        "measured",
        "gap",
        "factor",
        "score",
        "final",
        "pass_rate",
        "faithful",
        "signature",
    )

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class VerificationEventInline(admin.TabularInline):
    model = VerificationEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ("created_at", "level", "actor", "method", "evidence_sha256", "note")

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class RerunForm(forms.Form):
    """An official re-run: a bundle of the submission format, or the per-task values entered here."""

    bundle = forms.FileField(
        required=False,
        help_text="The official re-run's bundle, sealed to the site key like a submission.",
    )
    results = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        help_text='Or the re-run\'s values as JSON: {"task_slug": {"measured": 0.61, "rates": {"collision_rate": '
        '0.01}, "faithful": true}, ...}',
    )
    note = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="Shown on the run page.")

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if bool(cleaned.get("bundle")) == bool((cleaned.get("results") or "").strip()):
            raise forms.ValidationError("Give either the re-run bundle or its results, not both and not neither.")
        text = (cleaned.get("results") or "").strip()
        if text:
            try:
                cleaned["results_data"] = json.loads(text)
            except ValueError as exc:
                self.add_error("results", f"not valid JSON: {exc}")
            except RecursionError:
                self.add_error("results", "not valid JSON: nested too deeply to read")
        return cleaned


class LevelChangeForm(forms.Form):
    level = forms.ChoiceField(
        choices=[(level, level) for level in (Run.Level.ATTESTED, Run.Level.VALIDATED, Run.Level.REVOKED)],
        help_text="Lower only; revoked takes the run off every board.",
    )
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), help_text="Shown publicly on the run page.")


class OfficialRerunInline(admin.TabularInline):
    model = OfficialRerun
    extra = 0
    can_delete = False
    fields = readonly_fields = ("created_at", "source", "outcome", "tolerance", "actor", "evidence_sha256", "note")

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["id", "release", "agent_version", "level", "overall", "pass_rate", "complete", "is_private"]
    list_filter = ["level", "release", "complete"]
    list_select_related = ["release__benchmark", "agent_version__agent"]
    inlines = [TaskResultInline, OfficialRerunInline, VerificationEventInline]

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        return [*super().get_readonly_fields(request, obj), "verification_actions"]

    @admin.display(description="Verification")
    def verification_actions(self, obj: Run) -> str:
        rerun = reverse("admin:leaderboard_run_rerun", args=[obj.pk])
        level = reverse("admin:leaderboard_run_level", args=[obj.pk])
        return format_html(
            '<a class="button" href="{}">Record an official re-run…</a> '
            '<a class="button" href="{}">Lower the level…</a>',
            rerun,
            level,
        )

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<int:pk>/rerun/", wrap(self.rerun_view), name="leaderboard_run_rerun"),
            path("<int:pk>/level/", wrap(self.level_view), name="leaderboard_run_level"),
            *super().get_urls(),
        ]

    def _form_page(
        self, request: HttpRequest, run: Run, form: forms.Form, title: str, problem: dict[str, str]
    ) -> HttpResponse:
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"{title}: run {run.pk} ({run.agent_version} on {run.release})",
            "run": run,
            "form": form,
            "problem": problem,
        }
        status = 400 if request.method == "POST" else 200
        return TemplateResponse(request, "admin/submissions/run/action.html", context, status=status)

    def rerun_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        # The admin's own rule for Run (leaderboard.change_run): a permission spelled by hand
        # ("submissions.change_run" once) can name one that does not exist and let only superusers in.
        if not self.has_change_permission(request):
            raise PermissionDenied
        run = get_object_or_404(Run.objects.select_related("release__benchmark", "agent_version__agent"), pk=pk)
        form = RerunForm(request.POST or None, request.FILES or None)
        problem: dict[str, str] = {}
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                if data.get("bundle"):
                    rerun = run_rerun_record_bundle(
                        run=run, actor=signed_in_user(request), bundle_file=data["bundle"], note=data["note"]
                    )
                else:
                    rerun = run_rerun_record_results(
                        run=run, actor=signed_in_user(request), results=data["results_data"], note=data["note"]
                    )
            except RerunError as exc:
                problem = {"message": exc.message, "code": exc.code}
            except PermissionDenied as exc:
                problem = {"message": str(exc), "code": ""}
            else:
                self.message_user(request, f"official re-run recorded: {rerun.get_outcome_display()}", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:leaderboard_run_change", args=[run.pk]))
        return self._form_page(request, run, form, "Record an official re-run", problem)

    def level_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        # The admin's own rule for Run (leaderboard.change_run): a permission spelled by hand
        # ("submissions.change_run" once) can name one that does not exist and let only superusers in.
        if not self.has_change_permission(request):
            raise PermissionDenied
        run = get_object_or_404(Run.objects.select_related("release__benchmark", "agent_version__agent"), pk=pk)
        form = LevelChangeForm(request.POST or None)
        problem: dict[str, str] = {}
        if request.method == "POST" and form.is_valid():
            try:
                run_level_change(
                    run=run,
                    actor=signed_in_user(request),
                    level=form.cleaned_data["level"],
                    reason=form.cleaned_data["reason"],
                )
            except RerunError as exc:
                problem = {"message": exc.message, "code": exc.code}
            except PermissionDenied as exc:
                problem = {"message": str(exc), "code": ""}
            else:
                self.message_user(request, f"run {run.pk} is now {form.cleaned_data['level']}", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:leaderboard_run_change", args=[run.pk]))
        return self._form_page(request, run, form, "Lower the level", problem)


@admin.register(VerificationEvent)
class VerificationEventAdmin(admin.ModelAdmin):
    """Append-only and written only by the services (automatic levels, official re-runs, level
    changes from the run's page): nothing can be added, changed or deleted here."""

    list_display = ["created_at", "run", "level", "actor", "method", "evidence_sha256"]
    list_filter = ["level"]
    list_select_related = ["actor", "run"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(OfficialRerun)
class OfficialRerunAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "run", "source", "outcome", "tolerance", "actor"]
    list_filter = ["outcome", "source"]
    list_select_related = ["run", "actor"]


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
        super().clean()
        cleaned = self.cleaned_data
        if sum(bool(cleaned.get(name)) for name in ("evaluator", "validator", "judge_name")) != 1:
            raise forms.ValidationError("Choose exactly one owner: an evaluator, a validator or a judge.")
        if cleaned.get("public_key_b64"):
            try:
                decode_public_key(cleaned["public_key_b64"])
            except SigningKeyError as exc:
                self.add_error("public_key_b64", str(exc))
        return cleaned


class SigningKeyEventInline(admin.TabularInline):
    """The key's history (submissions.services.signing_keys writes it): who registered it, changed
    its scope and revoked it, and when. Read-only, shown to whoever may view the key."""

    model = SigningKeyEvent
    extra = 0
    can_delete = False
    fields = readonly_fields = ("created_at", "action", "actor", "detail")
    verbose_name_plural = "history"

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.has_perm("leaderboard.view_signingkey") or request.user.has_perm(
            "leaderboard.change_signingkey"
        )

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(SigningKey)
class SigningKeyAdmin(admin.ModelAdmin):
    list_display = [
        "key_id",
        "owner_kind",
        "evaluator",
        "validator",
        "judge_name",
        "benchmark",
        "daily_limit",
        "created_at",
        "registered_by",
        "revoked_at",
    ]
    list_filter = ["owner_kind"]
    actions = ["revoke"]

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[type[admin.options.InlineModelAdmin]]:
        return [SigningKeyEventInline] if obj is not None else []  # the add page has no history yet

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = SigningKeyForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        if obj is None:
            return []
        # Only a validator key's daily limit of race runs is an admin setting (submissions.quotas).
        editable = {"daily_limit"} if obj.owner_kind == SigningKey.Owner.VALIDATOR else set()
        return [field.name for field in self.model._meta.fields if field.name not in editable]

    def save_model(self, request: HttpRequest, obj: SigningKey, form, change: bool) -> None:
        if change:
            if "daily_limit" in form.changed_data and obj.owner_kind == SigningKey.Owner.VALIDATOR:
                obj.save(update_fields=["daily_limit"])
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
                user=signed_in_user(request),
            )
        except SigningKeyError as exc:
            self.message_user(request, str(exc), level=messages.ERROR)
            # Nothing was added: the admin must neither log an addition nor say it succeeded.
            request._podium_key_refused = True  # type: ignore[attr-defined]
            return
        obj.pk = key.pk

    def log_addition(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        if getattr(request, "_podium_key_refused", False):
            return None
        return super().log_addition(request, obj, message)

    def response_add(self, request: HttpRequest, obj: Any, post_url_continue: Any = None) -> HttpResponse:
        if getattr(request, "_podium_key_refused", False):
            return HttpResponseRedirect(request.path)  # the add page again, under the error message
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description="Revoke the selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[SigningKey]) -> None:
        revoked = 0
        for key in queryset:
            revoked += key.revoked_at is None
            signing_key_revoke(signing_key=key, user=signed_in_user(request))
        self.message_user(request, f"revoked {revoked} key(s)")


class CardEpisodeInline(admin.TabularInline):
    """A card's episodes, read-only: the audit view of what the server measured."""

    model = CardEpisode
    extra = 0
    can_delete = False
    fields = readonly_fields = (
        "level",
        "steps",
        "restarts",
        "solved",
        "deadlocked",
        "out_of_budget",
        "abandoned",
        "done",
        "started_at",
    )

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Card)
class CardAdmin(ReadOnlyAdmin):
    """Played scorecards, read-only: only the play API and the idle sweep change them."""

    list_display = [
        "id", "release", "agent_version", "owner", "status", "levels_started", "moves", "closed_by", "opened_at",
        "closed_at",
    ]  # fmt: skip
    list_filter = ["status", "closed_by", "release"]
    search_fields = ["owner__username", "agent_version__agent__name"]
    inlines = [CardEpisodeInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Card]:
        # Two counts per row in the list's one query: a card that started many levels and sent few
        # moves is what scouting the fixed hidden set looks like (docs/schemes.md).
        return super().get_queryset(request).annotate(started=Count("episodes"), sent=Sum("episodes__steps"))

    @admin.display(description="levels started", ordering="started")
    def levels_started(self, card: Card) -> int:
        return getattr(card, "started", 0)

    @admin.display(description="moves", ordering="sent")
    def moves(self, card: Card) -> int:
        return getattr(card, "sent", None) or 0

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


# Notifications, visibility log and rescoring, kept in their own modules.
from submissions import admin_notifications as _admin_notifications  # noqa: E402, F401
from submissions import admin_rescoring as _admin_rescoring  # noqa: E402, F401
