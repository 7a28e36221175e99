"""Admin for the per-release price table, baselines and (for moderation) declarations.

Every save goes through leaderboard.services.declarations so costs and standings follow:
editing a price re-prices the release's runs; marking a baseline rewrites standings.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.models import AgentVersionMeta, Baseline, Release, ReleasePrice
from leaderboard.services.declarations import (
    baseline_mark,
    baseline_unmark,
    release_prices_changed,
)


@admin.register(ReleasePrice)
class ReleasePriceAdmin(admin.ModelAdmin):
    list_display = ["release", "model", "input_usd_per_mtok", "output_usd_per_mtok"]
    list_filter = ["release__benchmark"]
    list_select_related = ["release__benchmark"]
    search_fields = ["model", "release__version", "release__benchmark__slug"]

    def save_model(self, request: HttpRequest, obj: ReleasePrice, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        written = release_prices_changed(release=obj.release)
        messages.info(request, f"Re-priced {written} run(s) of {obj.release}.")
        # A row moved to another release leaves its old one: that release's costs change too.
        previous = form.initial.get("release") if change else None
        if previous is not None and previous != obj.release_id:
            old = Release.objects.get(pk=previous)
            written = release_prices_changed(release=old)
            messages.info(request, f"Re-priced {written} run(s) of {old}.")

    def delete_model(self, request: HttpRequest, obj: ReleasePrice) -> None:
        release = obj.release
        super().delete_model(request, obj)
        release_prices_changed(release=release)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ReleasePrice]) -> None:
        releases = list(Release.objects.filter(pk__in=queryset.values("release_id")))
        super().delete_queryset(request, queryset)
        for release in releases:
            release_prices_changed(release=release)


@admin.register(Baseline)
class BaselineAdmin(admin.ModelAdmin):
    list_display = ["agent_version", "kind", "note", "marked_by", "marked_at"]
    list_select_related = ["agent_version__agent", "marked_by"]
    autocomplete_fields = ["agent_version"]
    readonly_fields = ["marked_by", "marked_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A baseline marks one version for good: "changing" its version saved a second baseline
        # (the service marks by version) and left the first. To mark another version, add it.
        fixed = ["agent_version"] if obj is not None else []
        return [*fixed, *self.readonly_fields]

    def save_model(self, request: HttpRequest, obj: Baseline, form: Any, change: bool) -> None:
        # Through the service: the version's releases are re-ranked without it.
        saved = baseline_mark(actor=request.user, agent_version=obj.agent_version, kind=obj.kind, note=obj.note)
        # The admin logs and links the object it was given: make it the saved row.
        obj.pk, obj.marked_by, obj.marked_at = saved.pk, saved.marked_by, saved.marked_at

    def delete_model(self, request: HttpRequest, obj: Baseline) -> None:
        baseline_unmark(actor=request.user, agent_version=obj.agent_version)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Baseline]) -> None:
        for baseline in queryset.select_related("agent_version"):
            baseline_unmark(actor=request.user, agent_version=baseline.agent_version)


@admin.register(AgentVersionMeta)
class AgentVersionMetaAdmin(admin.ModelAdmin):
    """Read and delete only: a declaration is the owner's words (staff remove abuse, never rewrite it)."""

    list_display = ["agent_version", "organisation", "weights", "scaffold_name", "declared_by", "declared_at"]
    list_select_related = ["agent_version__agent", "declared_by"]
    search_fields = ["organisation", "agent_version__agent__name"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
