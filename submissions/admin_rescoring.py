"""Admin for rescoring (submissions.services.rescoring): "Propose a rescore" and "Carry the runs
onto a newer release" actions on releases (the second asks which release first), the proposal's
per-run before/after diff (with the reason a run cannot be carried), and an "Apply" action.
Nothing is applied until staff have looked at a proposal."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join

from leaderboard.admin import ReleaseAdmin
from leaderboard.models import Release
from leaderboard.permissions import ADD_RESCORE, CHANGE_RESCORE, staff_may
from leaderboard.selectors.releases import version_key
from leaderboard.users import signed_in_user
from submissions.models import Rescore, RescoreItem
from submissions.services.rescoring import RescoreError, rescore_apply, rescore_propose, rescore_summary


@admin.action(
    description="Propose a rescore (dry run: recompute every stored bundle, change nothing)", permissions=["rescore"]
)
def propose_rescore(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Release]) -> None:
    for release in queryset.select_related("benchmark"):
        try:
            rescore = rescore_propose(release=release, user=signed_in_user(request), reason="admin action")
        except RescoreError as exc:
            modeladmin.message_user(request, f"{release}: {exc.message}", messages.ERROR)
        else:
            modeladmin.message_user(request, f"{release}: rescore {rescore.pk} proposed; review its diff, then apply")


@admin.action(
    description="Carry the runs onto a newer release (dry run: re-verify against it, change nothing)",
    permissions=["rescore"],
)
def propose_carry(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Release]) -> TemplateResponse | None:
    """Asks which newer release of the benchmark first (a form page posting back to this action)."""
    releases = list(queryset.select_related("benchmark")[:2])
    if len(releases) != 1:
        modeladmin.message_user(request, "select exactly one release to carry its runs forward", messages.ERROR)
        return None
    release = releases[0]
    newer = sorted(
        (
            other
            for other in Release.objects.filter(benchmark_id=release.benchmark_id).exclude(pk=release.pk)
            if version_key(other.version) > version_key(release.version)
        ),
        key=lambda other: version_key(other.version),
    )
    if not newer:
        modeladmin.message_user(request, f"{release}: the benchmark has no newer release to carry onto", messages.ERROR)
        return None
    chosen = request.POST.get("target", "")
    if "confirm" in request.POST:
        target = next((other for other in newer if str(other.pk) == chosen), None)
        if target is None:
            modeladmin.message_user(request, f"{release}: choose one of the newer releases listed", messages.ERROR)
            return None
        try:
            rescore = rescore_propose(
                release=release,
                user=signed_in_user(request),
                reason=request.POST.get("reason", ""),
                target_release=target,
            )
        except RescoreError as exc:
            modeladmin.message_user(request, f"{release}: {exc.message}", messages.ERROR)
        else:
            modeladmin.message_user(
                request,
                f"{release}: rescore {rescore.pk} proposed onto release {target.version}; review its diff, then apply",
            )
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "opts": modeladmin.model._meta,
        "title": f"Carry the runs of {release} onto a newer release",
        "release": release,
        "newer": newer,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/leaderboard/release/carry.html", context)


def _has_rescore_permission(modeladmin: Any, request: HttpRequest) -> bool:
    """The two proposing actions write a Rescore: the account needs its add permission."""
    return staff_may(request.user, ADD_RESCORE)


# Added to the release admin from here so the rescoring feature stays in its own module.
ReleaseAdmin.actions = [*ReleaseAdmin.actions, propose_rescore, propose_carry]
ReleaseAdmin.has_rescore_permission = _has_rescore_permission  # type: ignore[attr-defined]


def _shown(value: Any) -> Any:
    """A score as the boards show it (4 decimals): the stored diff keeps the full floats."""
    return f"{value:.4f}" if isinstance(value, float) else ("—" if value is None else value)


class RescoreItemInline(admin.TabularInline):
    model = RescoreItem
    extra = 0
    can_delete = False
    fields = readonly_fields = ("run", "state", "changes", "error", "carried_run")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="before → after")
    def changes(self, obj: RescoreItem) -> str:
        if not obj.diff:
            return "—"
        return format_html(
            "<ul>{}</ul>",
            format_html_join(
                "",
                "<li><code>{}</code>: {} → {}</li>",
                ((r["path"], _shown(r["before"]), _shown(r["after"])) for r in obj.diff),
            ),
        )


@admin.register(Rescore)
class RescoreAdmin(admin.ModelAdmin):
    list_display = ["id", "release", "target_release", "state", "counts", "created_by", "created_at", "applied_at"]
    list_filter = ["state"]
    list_select_related = ["release__benchmark", "target_release"]
    inlines = [RescoreItemInline]
    actions = ["apply"]
    readonly_fields = [
        "release",
        "target_release",
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

    def has_apply_permission(self, request: HttpRequest) -> bool:
        # The rows are read-only (no change permission here), so the action names its own.
        return staff_may(request.user, CHANGE_RESCORE)

    @admin.action(description="Apply the selected proposed rescores", permissions=["apply"])
    def apply(self, request: HttpRequest, queryset: QuerySet[Rescore]) -> None:
        for rescore in queryset:
            try:
                applied = rescore_apply(rescore_id=rescore.pk, user=signed_in_user(request))
            except RescoreError as exc:
                self.message_user(request, f"rescore {rescore.pk}: {exc.message}", messages.ERROR)
            else:
                counts = ", ".join(f"{n} {state}" for state, n in rescore_summary(applied).items() if n)
                self.message_user(request, f"Rescore {applied.pk} applied: {counts or 'no run to change'}.")
