"""Race lifecycle in the admin (seed 002): schedule, start, close (reveal embargo), release.

Races are read-only in the admin except through the lifecycle actions and the
scheduling form, every one of which goes through leaderboard.services.races (the
Race row is the state machine; the admin never writes a status itself).
Registered once, here; leaderboard/admin.py imports this module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.admin_mixins import ReadOnlyFieldsMixin
from leaderboard.models import Benchmark, Race, Release
from leaderboard.permissions import ADD_RACE, staff_may
from leaderboard.services.races import (
    RaceTransitionError,
    race_close,
    race_release,
    race_schedule,
    race_start,
    race_task_set_public,
    race_task_set_reused,
)
from leaderboard.storable_text import NAMES, unstorable_kind

if TYPE_CHECKING:
    # The stub's name for what ModelAdmin.get_fields returns (names, or groups of names on one row).
    from django.contrib.admin.options import _FieldGroups


class RaceScheduleForm(forms.ModelForm):
    """Schedule a race: its number and its hidden task set, pinned from now on."""

    task_ids_text = forms.CharField(
        label="Hidden task ids",
        widget=forms.Textarea(attrs={"rows": 6}),
        help_text="One task id per line (or a JSON list). Never shown to visitors before the race is released.",
    )

    class Meta:
        model = Race
        fields = ["benchmark", "release", "number", "name", "is_launch", "challenge_margin"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        benchmark = self.fields["benchmark"]
        assert isinstance(benchmark, forms.ModelChoiceField)  # the form field of a ForeignKey
        benchmark.queryset = Benchmark.objects.filter(scheme=Benchmark.Scheme.RACE)
        release = self.fields["release"]
        assert isinstance(release, forms.ModelChoiceField)
        release.queryset = Release.objects.filter(benchmark__scheme=Benchmark.Scheme.RACE).select_related("benchmark")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        benchmark, release = cleaned.get("benchmark"), cleaned.get("release")
        if benchmark is not None and release is not None and release.benchmark_id != benchmark.pk:
            # The service's rule too (race_schedule); said on the field, before anything is saved.
            self.add_error(
                "release", f"release {release.version} belongs to {release.benchmark.slug}, not {benchmark.slug}"
            )
        task_ids = cleaned.get("task_ids_text")
        if benchmark is not None and task_ids:
            # The service's rule (race_schedule refuses it too), said on the field.
            public = race_task_set_public(benchmark=benchmark, task_ids=task_ids)
            if public is not None:
                self.add_error("task_ids_text", public)
        return cleaned

    def clean_challenge_margin(self) -> float:
        margin = self.cleaned_data["challenge_margin"]
        if not 0 <= margin <= 1:
            raise forms.ValidationError(f"expected a margin between 0 and 1, got {margin}")
        return margin

    def clean_task_ids_text(self) -> list[str]:
        text = self.cleaned_data["task_ids_text"].strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                raise forms.ValidationError(f"not a JSON list of task ids: {exc.msg} at position {exc.pos}") from exc
            except RecursionError:
                raise forms.ValidationError("not a JSON list of task ids: nested too deeply to read") from None
        else:
            value = [line.strip() for line in text.splitlines() if line.strip()]
        if not isinstance(value, list) or not value or not all(isinstance(item, str) and item for item in value):
            raise forms.ValidationError("expected a non-empty list of non-empty task ids")
        if len(set(value)) != len(value):
            raise forms.ValidationError("a task id is listed twice")
        for index, item in enumerate(value, start=1):
            kind = unstorable_kind(item)
            if kind is not None:
                raise forms.ValidationError(
                    f"task id {index} holds {NAMES[kind]}, which no text can hold; leave it out"
                )
        return value


@admin.register(Race)
class RaceAdmin(ReadOnlyFieldsMixin, admin.ModelAdmin):
    """Read-only fields: a race moves through its lifecycle only via leaderboard.services.races."""

    list_display = ["__str__", "benchmark", "number", "status", "starts_at", "ends_at", "released_at"]
    list_filter = ["benchmark", "status"]
    list_select_related = ["benchmark"]
    actions = ["start_races", "close_races", "release_races"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return staff_may(request.user, ADD_RACE)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = RaceScheduleForm
            kwargs["fields"] = [*RaceScheduleForm.Meta.fields, "task_ids_text"]
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [] if obj is None else super().get_readonly_fields(request, obj)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> _FieldGroups:
        if obj is None:
            return [*RaceScheduleForm.Meta.fields, "task_ids_text"]
        return super().get_fields(request, obj)

    def save_model(self, request: HttpRequest, obj: Race, form: Any, change: bool) -> None:
        if change:
            return  # every field is read-only once scheduled
        data = form.cleaned_data
        created = race_schedule(
            benchmark=data["benchmark"],
            number=data["number"],
            task_ids=data["task_ids_text"],
            user=request.user,
            name=data.get("name") or "",
            is_launch=bool(data.get("is_launch")),
            challenge_margin=data["challenge_margin"],
            release=data.get("release"),
        )
        obj.pk = created.pk
        obj.refresh_from_db()
        reused = race_task_set_reused(benchmark=created.benchmark, task_ids=created.task_ids, race=created)
        if reused is not None:
            self.message_user(request, f"{created}: {reused}. Scheduled as asked.", messages.WARNING)

    def _apply(self, request: HttpRequest, queryset: QuerySet[Race], step: Callable[..., Race], done: str) -> None:
        for race in queryset.order_by("benchmark", "number"):
            try:
                step(race=race, user=request.user)
            except RaceTransitionError as exc:
                self.message_user(request, exc.message, messages.ERROR)
            else:
                self.message_user(request, f"{race}: {done}", messages.SUCCESS)

    # Each action is offered only to accounts that may change a race (Django checks
    # has_change_permission): seeing the changelist is not enough (leaderboard.permissions).
    @admin.action(
        description="Start selected races (scheduled → running; one race of a benchmark at a time)",
        permissions=["change"],
    )
    def start_races(self, request: HttpRequest, queryset: QuerySet[Race]) -> None:
        self._apply(request, queryset, race_start, "started")

    @admin.action(
        description="Close selected races and begin the reveal embargo (running → embargoed)", permissions=["change"]
    )
    def close_races(self, request: HttpRequest, queryset: QuerySet[Race]) -> None:
        self._apply(request, queryset, race_close, "closed; results are under the reveal embargo")

    @admin.action(description="Release selected race results (embargoed → released)", permissions=["change"])
    def release_races(self, request: HttpRequest, queryset: QuerySet[Race]) -> None:
        self._apply(request, queryset, race_release, "released; raw results and failure categories are public")
