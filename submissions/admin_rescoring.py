"""Admin for rescoring (submissions.services.rescoring): a "Propose a rescore" action on
releases, the proposal's per-run before/after diff, and an "Apply" action. Nothing is
applied until staff have looked at a proposal."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from leaderboard.admin import ReleaseAdmin
from leaderboard.models import Release
from leaderboard.users import signed_in_user
from submissions.models import Rescore, RescoreItem
from submissions.services.rescoring import RescoreError, rescore_apply, rescore_propose, rescore_summary


@admin.action(description="Propose a rescore (dry run: recompute every stored bundle, change nothing)")
def propose_rescore(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Release]) -> None:
    for release in queryset.select_related("benchmark"):
        try:
            rescore = rescore_propose(release=release, user=signed_in_user(request), reason="admin action")
        except RescoreError as exc:
            modeladmin.message_user(request, f"{release}: {exc.message}", messages.ERROR)
        else:
            modeladmin.message_user(request, f"{release}: rescore {rescore.pk} proposed; review its diff, then apply")


# Added to the release admin from here so the rescoring feature stays in its own module.
ReleaseAdmin.actions = [*ReleaseAdmin.actions, propose_rescore]


class RescoreItemInline(admin.TabularInline):
    model = RescoreItem
    extra = 0
    can_delete = False
    fields = readonly_fields = ("run", "state", "changes", "error")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="before → after")
    def changes(self, obj: RescoreItem) -> str:
        if not obj.diff:
            return "—"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "", "<li><code>{}</code>: {} → {}</li>", ((r["path"], r["before"], r["after"]) for r in obj.diff)
            ),
        )


@admin.register(Rescore)
class RescoreAdmin(admin.ModelAdmin):
    list_display = ["id", "release", "state", "counts", "created_by", "created_at", "applied_at"]
    list_filter = ["state"]
    inlines = [RescoreItemInline]
    actions = ["apply"]
    readonly_fields = [
        "release",
        "state",
        "reason",
        "created_by",
        "created_at",
        "proposed_at",
        "applied_by",
        "applied_at",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # proposed from the release admin's action or manage.py rescore

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # A proposal can be dropped (to propose again); an applied rescore is history.
        return super().has_delete_permission(request, obj) and (obj is None or obj.state != Rescore.State.APPLIED)

    @admin.display(description="items")
    def counts(self, obj: Rescore) -> str:
        return ", ".join(f"{n} {state}" for state, n in rescore_summary(obj).items() if n)

    @admin.action(description="Apply the selected proposed rescores")
    def apply(self, request: HttpRequest, queryset: QuerySet[Rescore]) -> None:
        for rescore in queryset:
            try:
                applied = rescore_apply(rescore_id=rescore.pk, user=signed_in_user(request))
            except RescoreError as exc:
                self.message_user(request, f"rescore {rescore.pk}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"rescore {applied.pk} applied: {rescore_summary(applied)}")
