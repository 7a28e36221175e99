"""Admin for signing keys: register one (through the service, which checks its scope), revoke
it, read its history (who registered, widened and revoked it: SigningKeyEvent) and list the runs
it signed, which staff lower after a compromise (docs/security-model.md)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html

from leaderboard.models import Benchmark, Evaluator, RaceRun, Run, SigningKey, SigningKeyEvent, Task, Validator
from leaderboard.services.race_exclusions import RaceExclusionError, race_runs_exclude
from leaderboard.users import signed_in_user
from submissions.services.signing_keys import (
    SigningKeyError,
    decode_public_key,
    signing_key_register,
    signing_key_revoke,
)


class SignedByFilter(admin.SimpleListFilter):
    """Runs whose task results (or faithfulness verdicts) a key signed, by key id: after a key is
    revoked on a compromise, the runs staff review and lower (linked from the key's admin page)."""

    title = "signed by key"
    parameter_name = "signed_by"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # Every key (a filter offers only what it lists), revoked ones first: those are looked for.
        keys = SigningKey.objects.order_by(F("revoked_at").desc(nulls_last=True), "key_id").values_list(
            "key_id", "revoked_at"
        )
        return [(key_id, f"{key_id} (revoked)" if revoked_at else key_id) for key_id, revoked_at in keys]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> QuerySet[Run]:
        key_id = self.value()
        if not key_id:
            return queryset
        return queryset.filter(pk__in=runs_signed_by(key_id=key_id))


def runs_signed_by(*, key_id: str) -> QuerySet[Any]:
    """Ids of the runs with a task result whose evaluator signature, or faithfulness verdict, ``key_id`` signed."""
    signed = Q(task_results__signature="valid", task_results__signing_key__key_id=key_id) | Q(
        task_results__faithfulness_source="judge_signed", task_results__judge_key__key_id=key_id
    )
    return Run.objects.filter(signed).values("pk")


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
    actions = ["revoke", "exclude_race_runs"]

    def get_inlines(self, request: HttpRequest, obj: Any) -> list[type[admin.options.InlineModelAdmin]]:
        return [SigningKeyEventInline] if obj is not None else []  # the add page has no history yet

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        if obj is None:
            return []
        # Only a validator key's daily limit of race runs is an admin setting (submissions.quotas).
        editable = {"daily_limit"} if obj.owner_kind == SigningKey.Owner.VALIDATOR else set()
        return [*(field.name for field in self.model._meta.fields if field.name not in editable), "signed_runs"]

    @admin.display(description="Runs it signed")
    def signed_runs(self, obj: SigningKey) -> str:
        """The paper-gap runs it signed, linked as the filtered run list (staff lower them after a compromise);
        for a validator key, the race runs it signed and how many of them are excluded."""
        if obj.owner_kind == SigningKey.Owner.VALIDATOR:
            counts = RaceRun.objects.filter(signing_key=obj).aggregate(
                runs=Count("id"), excluded=Count("id", filter=Q(excluded_at__isnull=False))
            )
            return f"{counts['runs']} race run(s), {counts['excluded']} excluded from every score"
        count = Run.objects.filter(pk__in=runs_signed_by(key_id=obj.key_id)).count()
        listing = reverse("admin:leaderboard_run_changelist") + f"?signed_by={obj.key_id}"
        return format_html('<a href="{}">{} run{}</a>', listing, count, "" if count == 1 else "s")

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = SigningKeyForm
        return super().get_form(request, obj, change=change, **kwargs)

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
                # Passed whatever the kind: the service refuses a scope the key's kind does not take
                # (a benchmark on an evaluator key was dropped without a word).
                benchmark=form.cleaned_data.get("benchmark"),
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

    @admin.action(
        description="Exclude every race run the selected (revoked) validator keys signed", permissions=["change"]
    )
    def exclude_race_runs(self, request: HttpRequest, queryset: QuerySet[SigningKey]) -> None:
        """The race side of a compromise: a race run has no level to lower, so the runs a revoked
        validator key signed are excluded from every score, with a public reason naming the key
        (leaderboard.services.race_exclusions; ``manage.py exclude_race_runs`` does the same)."""
        for key in queryset.order_by("key_id"):
            reason = f"Signed with validator key {key.key_id}, which was revoked as compromised: it no longer counts."
            try:
                excluded = race_runs_exclude(user=signed_in_user(request), reason=reason, signed_by=key.key_id)
            except PermissionDenied as exc:
                self.message_user(request, str(exc), level=messages.ERROR)
                return
            except RaceExclusionError as exc:
                # A live or non-validator key is refused by the service (the one rule); a key that
                # signed nothing is only a warning.
                level = messages.ERROR if exc.code == "key_not_revoked" else messages.WARNING
                message = exc.message if exc.code == "key_not_revoked" else f"key {key.key_id}: {exc.message}"
                self.message_user(request, message, level=level)
                continue
            self.message_user(request, f"key {key.key_id}: excluded {len(excluded)} race run(s) from every score")
