"""Admin for submissions, runs and the verification log (signing keys: submissions.admin_signing_keys).

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
    OfficialRerun,
    Run,
    TaskResult,
    VerificationEvent,
)
from leaderboard.users import signed_in_user
from submissions.admin_signing_keys import SignedByFilter
from submissions.models import Card, CardEpisode, CardMove, Submission, SubmissionChallenge
from submissions.services.reruns import RerunError, run_level_change, run_rerun_record_bundle, run_rerun_record_results
from submissions.services.verification import submission_requeue


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

    @admin.action(
        description="Re-verify (queue again: unfinished ones, and those rejected for the server's faults)",
        permissions=["change"],
    )
    def reverify(self, request: HttpRequest, queryset: QuerySet[Submission]) -> None:
        # A bundle rejected as verification_failed or worker_crashed failed for the server's
        # reasons (an outage, a crash): staff may give it another try, its attempts reset.
        queued = sum(submission_requeue(submission=submission) for submission in queryset)
        skipped = queryset.count() - queued
        self.message_user(request, f"queued {queued} submission(s); skipped {skipped} with a verdict of their own")


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
    list_filter = ["level", "release", "complete", SignedByFilter]  # SignedByFilter: runs a key signed
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


# Notifications, visibility log, rescoring and signing keys, kept in their own modules.
from submissions import admin_notifications as _admin_notifications  # noqa: E402, F401
from submissions import admin_rescoring as _admin_rescoring  # noqa: E402, F401
from submissions import admin_signing_keys as _admin_signing_keys  # noqa: E402, F401
