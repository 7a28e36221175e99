"""Admin for the registry: manifest upload, review gates, publishing, release diffs.

Everything a manifest defines is read-only here (the manifest is the source of
truth; change it and sync again). Admins act through the same services the
command line uses: ``release_sync`` (upload form), ``release_task_sign_off_anchor``
and ``release_task_calibrate_faithfulness`` (human gates), ``release_publish``.
Admin pages are the one place withheld anchors may be shown.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from leaderboard.manifest import ManifestError, ZipLimits, read_manifest_zip
from leaderboard.models import (
    Agent,
    AgentVersion,
    Benchmark,
    Evaluator,
    Race,
    Release,
    ReleaseTask,
    ScorecardLevel,
    Task,
    Validator,
)
from leaderboard.selectors.releases import release_previous
from leaderboard.services.releases import (
    ReleaseGateError,
    release_diff,
    release_gate_failures,
    release_publish,
    release_sync,
    release_task_calibrate_faithfulness,
    release_task_sign_off_anchor,
)

# An uploaded manifest zip larger than this is refused before it is opened.
MAX_UPLOAD_BYTES = 16 * 1024 * 1024
UPLOAD_LIMITS = ZipLimits(max_members=1000, max_file_bytes=2 * 1024 * 1024, max_total_bytes=32 * 1024 * 1024)


class ManifestUploadForm(forms.Form):
    archive = forms.FileField(
        label="Manifest (.zip)",
        help_text="A .zip of the manifest directory: release.yaml and tasks/<slug>/ (reference/ is skipped).",
    )

    def clean_archive(self) -> Any:
        archive = self.cleaned_data["archive"]
        if not archive.name.lower().endswith(".zip"):
            raise forms.ValidationError("expected a .zip file of the manifest directory")
        if archive.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                f"the file is {archive.size} bytes; at most {MAX_UPLOAD_BYTES} bytes are accepted"
            )
        return archive


class ReadOnlyFieldsMixin:
    """Every model field read-only: these rows change only through the services."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        names = [f.name for f in self.model._meta.fields]  # type: ignore[attr-defined]
        return names + list(getattr(self, "extra_readonly", ()))


@admin.register(Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "scheme", "daily_submission_limit", "created_at"]
    search_fields = ["slug", "name"]
    # Defined by manifests; only the submission rate limit is an admin setting.
    readonly_fields = ["slug", "name", "scheme", "description", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Evaluator)
class EvaluatorAdmin(admin.ModelAdmin):
    """Evaluators may be pre-registered here; a manifest's evaluators list registers them too."""

    list_display = ["simulator", "name"]
    search_fields = ["simulator", "name"]


@admin.register(Task)
class TaskAdmin(ReadOnlyFieldsMixin, admin.ModelAdmin):
    list_display = ["slug", "benchmark", "platform", "direction", "genre", "mode", "simulator", "metric_name"]
    list_filter = ["benchmark", "platform", "genre", "mode", "simulator"]
    search_fields = ["slug", "title"]
    list_select_related = ["benchmark", "simulator"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class ReleaseTaskInline(admin.TabularInline):
    model = ReleaseTask
    extra = 0
    can_delete = False
    show_change_link = True
    fields = [
        "task",
        "genre",
        "metric_direction",
        "paper_value",
        "anchor_published",
        "score_cap",
        "penalties",
        "anchor_signed_off_by",
        "anchor_signed_off_at",
        "faithfulness_calibrated_by",
        "faithfulness_calibrated_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ScorecardLevelInline(admin.TabularInline):
    model = ScorecardLevel
    extra = 0
    can_delete = False
    fields = ["level_id", "optimal_len"]
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Release)
class ReleaseAdmin(ReadOnlyFieldsMixin, admin.ModelAdmin):
    change_list_template = "admin/leaderboard/release/change_list.html"
    list_display = ["__str__", "benchmark", "version", "published", "published_at", "task_count", "synced_at"]
    list_filter = ["benchmark", "published"]
    search_fields = ["version", "benchmark__slug"]
    list_select_related = ["benchmark"]
    inlines = [ReleaseTaskInline, ScorecardLevelInline]
    actions = ["publish"]
    extra_readonly = ("gates", "diff_with_previous")
    exclude = ["manifest"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Release]:
        return super().get_queryset(request).annotate(task_count=Count("release_tasks"))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # reveal_hidden_levels is the operator's one editable setting here (docs/schemes.md "Replay").
        editable = {"manifest", "reveal_hidden_levels"}
        return [name for name in super().get_readonly_fields(request, obj) if name not in editable]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="tasks", ordering="task_count")
    def task_count(self, obj: Release) -> int:
        return obj.task_count  # type: ignore[attr-defined]

    @admin.display(description="Review gates")
    def gates(self, obj: Release) -> str:
        if obj.published:
            return "published"
        failures = release_gate_failures(obj)
        if not failures:
            return "every gate has passed; ready to publish"
        return format_html_join("", "<div>{}</div>", ((failure,) for failure in failures))

    @admin.display(description="Changes since the previous version")
    def diff_with_previous(self, obj: Release) -> str:
        previous = release_previous(obj)
        diff = release_diff(previous, obj)
        if previous is None:
            return "first release of this benchmark"
        lines = diff.lines(show_anchors=True) or ["no task or anchor changes"]
        return format_html(
            "<div>compared with {}</div><ul class='release-diff'>{}</ul>",
            previous.version,
            format_html_join("", "<li>{}</li>", ((line,) for line in lines)),
        )

    @admin.action(description="Publish selected releases (every task signed off and calibrated)")
    def publish(self, request: HttpRequest, queryset: QuerySet[Release]) -> None:
        for release in queryset.select_related("benchmark"):
            try:
                release_publish(release=release, user=request.user)
            except (ReleaseGateError, PermissionDenied) as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"{release} is published", messages.SUCCESS)

    def get_urls(self) -> list[Any]:
        upload = path("upload/", self.admin_site.admin_view(self.upload_view), name="leaderboard_release_upload")
        return [upload, *super().get_urls()]

    def upload_view(self, request: HttpRequest) -> HttpResponse:
        """Upload a zipped manifest and sync it with the same service as `manage.py sync_manifest`."""
        if not request.user.has_perm("leaderboard.change_release"):
            raise PermissionDenied
        form = ManifestUploadForm(request.POST or None, request.FILES or None)
        problems: list[str] = []
        if request.method == "POST" and form.is_valid():
            archive = form.cleaned_data["archive"]
            try:
                source = read_manifest_zip(archive.read(), limits=UPLOAD_LIMITS, label=archive.name)
                result = release_sync(manifest=source, user=request.user)
            except ManifestError as exc:
                problems = [str(problem) for problem in exc.problems]
            except PermissionDenied as exc:
                problems = [str(exc)]
            else:
                level = messages.INFO if result.status == "unchanged" else messages.SUCCESS
                for line in result.lines():
                    self.message_user(request, line.strip(), level)
                return HttpResponseRedirect(reverse("admin:leaderboard_release_change", args=[result.release.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Upload a release manifest",
            "form": form,
            "problems": problems,
        }
        return TemplateResponse(
            request, "admin/leaderboard/release/upload.html", context, status=400 if problems else 200
        )


@admin.register(ReleaseTask)
class ReleaseTaskAdmin(ReadOnlyFieldsMixin, admin.ModelAdmin):
    list_display = [
        "task",
        "release",
        "genre",
        "paper_value",
        "anchor_published",
        "anchor_signed_off_at",
        "faithfulness_calibrated_at",
    ]
    list_filter = ["release", "genre", "anchor_published"]
    search_fields = ["task__slug"]
    list_select_related = ["task", "release__benchmark"]
    actions = ["sign_off_anchor", "calibrate_faithfulness"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def _apply(self, request: HttpRequest, queryset: QuerySet[ReleaseTask], service: Any, done: str) -> None:
        ok = 0
        for row in queryset.select_related("task", "release__benchmark"):
            try:
                service(release_task=row, user=request.user)
            except (ReleaseGateError, PermissionDenied) as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                ok += 1
        if ok:
            self.message_user(request, f"{done} for {ok} task(s)", messages.SUCCESS)

    @admin.action(description="Sign off the anchor of selected tasks (traced to its source, reproduced)")
    def sign_off_anchor(self, request: HttpRequest, queryset: QuerySet[ReleaseTask]) -> None:
        self._apply(request, queryset, release_task_sign_off_anchor, "anchor signed off")

    @admin.action(description="Record faithfulness calibration of selected reproduction tasks")
    def calibrate_faithfulness(self, request: HttpRequest, queryset: QuerySet[ReleaseTask]) -> None:
        self._apply(request, queryset, release_task_calibrate_faithfulness, "faithfulness calibration recorded")


@admin.register(Validator)
class ValidatorAdmin(admin.ModelAdmin):
    list_display = ["slug", "name"]
    # The accounts that act for the validator: they get race-run challenges and see owed runs.
    filter_horizontal = ["accounts"]


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "owner", "created_at"]
    search_fields = ["slug", "name", "owner__username"]
    list_select_related = ["owner"]


@admin.register(AgentVersion)
class AgentVersionAdmin(ReadOnlyFieldsMixin, admin.ModelAdmin):
    list_display = ["agent", "version", "created_at"]
    list_select_related = ["agent"]


@admin.register(Race)
class RaceAdmin(ReadOnlyFieldsMixin, admin.ModelAdmin):
    """Read-only: a race moves through its lifecycle only via leaderboard.services.races."""

    list_display = ["__str__", "benchmark", "number", "status", "starts_at", "ends_at", "released_at"]
    list_filter = ["benchmark", "status"]
    list_select_related = ["benchmark"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


# Race lifecycle actions and scheduling (the schemes engineer's module; replaces RaceAdmin above).
from leaderboard import admin_races  # noqa: E402, F401
