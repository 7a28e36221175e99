"""Admin for the registry: manifest upload, review gates, publishing, release diffs.

Everything a manifest defines is read-only here (the manifest is the source of
truth; change it and sync again). Admins act through the same services the
command line uses: ``release_sync`` (upload form), ``release_task_sign_off_anchor``
and ``release_task_calibrate_faithfulness`` (human gates, one task at a time on its own
form with its evidence), ``release_publish``.
Admin pages are the one place withheld anchors may be shown.

Longer than 500 lines on purpose: the release, its tasks' gate forms and the registry's
other admins share one set of read-only and permission rules, kept beside each other.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

# The race, declaration and user admins live in their own modules; importing them registers them.
from leaderboard import admin_declarations, admin_races, admin_users  # noqa: F401
from leaderboard.admin_mixins import ReadOnlyFieldsMixin, SuperuserDeletesMixin
from leaderboard.manifest import ManifestError, ZipLimits, read_manifest_zip
from leaderboard.models import (
    Agent,
    AgentVersion,
    Benchmark,
    Evaluator,
    Release,
    ReleaseTask,
    ScorecardLevel,
    Task,
    Validator,
)
from leaderboard.permissions import CHANGE_RACE, PUBLISH_RELEASE, staff_may
from leaderboard.selectors.release_diff import release_diff
from leaderboard.selectors.releases import release_previous
from leaderboard.services.release_gates import (
    ReleaseGateError,
    release_gate_failures,
    release_judge_warnings,
    release_publish,
    release_task_calibrate_faithfulness,
    release_task_sign_off_anchor,
)
from leaderboard.services.release_sync import release_sync

# An uploaded manifest zip larger than this is refused before it is opened.
MAX_UPLOAD_BYTES = 16 * 1024 * 1024
UPLOAD_LIMITS = ZipLimits(max_members=1000, max_file_bytes=2 * 1024 * 1024, max_total_bytes=32 * 1024 * 1024)


# Kinds of change a sync reports, longest prefix first ("release task x" before "release x").
SYNC_CHANGE_KINDS = (
    ("release task", "release task"),
    ("scorecard levels", "scorecard level set"),
    ("release published", "publication"),
    ("benchmark", "benchmark"),
    ("evaluator", "evaluator"),
    ("task", "task"),
    ("release", "release"),
)


def sync_summary(result: Any) -> tuple[int, str]:
    """One admin message for a sync (its level and text) instead of one per changed row.

    The detail stays on the release page (its diff with the previous version). A release that
    is not yet published is a warning, never a green success: visitors do not see it yet.
    """
    release = result.release
    counts: dict[str, int] = {}
    for change in result.changes:
        kind = next((label for prefix, label in SYNC_CHANGE_KINDS if change.startswith(prefix)), "other")
        counts[kind] = counts.get(kind, 0) + 1
    what = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts.items())
    text = f"{release.benchmark.slug} {release.version}: {result.status}" + (f" ({what})." if what else ".")
    if result.notes:
        text += " " + " ".join(note.rstrip(".") + "." for note in result.notes)
    if not release.published:
        open_gates = release_gate_failures(release)
        text += (
            " Not yet published: visitors cannot see it until "
            + ("each task's review gates pass and " if open_gates else "")
            + "it is published."
        )
        return messages.WARNING, text
    return (messages.INFO if result.status == "unchanged" else messages.SUCCESS), text


class ManifestUploadForm(forms.Form):
    archive = forms.FileField(
        label="Manifest (.zip)",
        help_text="A .zip of the manifest directory: release.yaml and one tasks/SLUG/ folder per task "
        "(reference/ is skipped).",
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


@admin.register(Benchmark)
class BenchmarkAdmin(SuperuserDeletesMixin, admin.ModelAdmin):
    list_display = ["slug", "name", "scheme", "daily_submission_limit", "created_at"]
    search_fields = ["slug", "name"]
    # Defined by manifests; only the submission rate limit is an admin setting.
    readonly_fields = ["slug", "name", "scheme", "description", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Evaluator)
class EvaluatorAdmin(SuperuserDeletesMixin, admin.ModelAdmin):
    """Evaluators may be pre-registered here; a manifest's evaluators list registers them too."""

    list_display = ["simulator", "name"]
    search_fields = ["simulator", "name"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # The simulator is the evaluator's identity: its keys sign its tasks by that name, and a
        # manifest naming the old one would register a second evaluator that no key signs for.
        return ["simulator"] if obj is not None else []


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
    fields = readonly_fields = (
        "task",
        "genre",
        "metric_direction",
        "paper_value",
        "anchor_published",
        "score_cap",
        "penalties",
        "anchor_provenance",
        "anchor_cited_source",
        "anchor_reproduced_value",
        "anchor_tolerance",
        "anchor_signed_off_by",
        "anchor_signed_off_at",
        "faithfulness_rubric_version",
        "faithfulness_dry_run_outcome",
        "faithfulness_calibrated_by",
        "faithfulness_calibrated_at",
    )

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ScorecardLevelInline(admin.TabularInline):
    model = ScorecardLevel
    extra = 0
    can_delete = False
    fields = readonly_fields = ("level_id", "optimal_len")

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
        # reveal_hidden_levels is the operator's one editable setting here (docs/schemes.md "Replay"),
        # and only until it is set: a revealed set is public, so switching it off again would reopen
        # play on levels anyone can now read the solutions to.
        editable = (
            {"manifest"} if obj is not None and obj.reveal_hidden_levels else {"manifest", "reveal_hidden_levels"}
        )
        return [name for name in super().get_readonly_fields(request, obj) if name not in editable]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="tasks", ordering="task_count")
    def task_count(self, obj: Release) -> int:
        return obj.task_count  # type: ignore[attr-defined]  # annotated by get_queryset

    @admin.display(description="Review gates")
    def gates(self, obj: Release) -> str:
        if obj.published:
            lines = ["published"]
        else:
            lines = release_gate_failures(obj) or ["every gate has passed; ready to publish"]
        # Not gates, but what a publisher must know: a reproduction task no judge key signs for.
        lines += [f"Warning: {warning}" for warning in release_judge_warnings(obj)]
        return format_html_join("", "<div>{}</div>", ((line,) for line in lines))

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

    # Offered only to accounts that may change a release (Django checks has_change_permission):
    # seeing the changelist is not enough (leaderboard.permissions).
    @admin.action(
        description="Publish selected releases (every task signed off and calibrated)", permissions=["change"]
    )
    def publish(self, request: HttpRequest, queryset: QuerySet[Release]) -> None:
        for release in queryset.select_related("benchmark"):
            try:
                release_publish(release=release, user=request.user)
            except (ReleaseGateError, PermissionDenied) as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"{release} is published", messages.SUCCESS)
                for warning in release_judge_warnings(release):
                    self.message_user(request, f"{release}: {warning}", messages.WARNING)

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
                level, summary = sync_summary(result)
                self.message_user(request, summary, level)
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


class AnchorSignOffForm(forms.Form):
    cited_source = forms.CharField(
        max_length=300,
        label="Cited table or figure",
        help_text="Where in paper.md the anchor comes from, e.g. 'Table 2, BC-RNN row, 200 demos'.",
    )
    reproduced_value = forms.FloatField(
        label="Reproduced value", help_text="The metric the hidden reference implementation reproduced."
    )
    tolerance = forms.FloatField(
        min_value=0,
        max_value=1,
        label="Tolerance (relative)",
        help_text="Accepted relative difference from the anchor: 0.05 means within 5%.",
    )
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False, label="Note")


class FaithfulnessCalibrationForm(forms.Form):
    rubric_version = forms.CharField(max_length=100, label="Rubric version", help_text="e.g. 'v3 (2026-11-02)'.")
    dry_run_outcome = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Dry-run outcome",
        help_text="What the judge concluded on the hidden reference and on a shortcut that only hits the metric.",
    )
    dry_run_passed = forms.BooleanField(
        required=False,
        label="The dry run behaved as intended",
        help_text="The reference was judged faithful and the shortcut unfaithful (fail-closed).",
    )


@admin.register(ReleaseTask)
class ReleaseTaskAdmin(ReadOnlyFieldsMixin, admin.ModelAdmin):
    """Each task's gates are passed one task at a time, on its own form, with its own evidence
    (seed 003): there is no bulk sign-off. The evidence is shown beside the anchor's provenance."""

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
    extra_readonly = ("gate_actions",)
    fieldsets = [
        (None, {"fields": ["release", "task", "position", "title", "genre", "metric_name", "metric_direction"]}),
        (
            "Anchor and its provenance",
            {
                "fields": [
                    "paper_value",
                    "anchor_published",
                    "anchor_provenance",
                    "anchor_cited_source",
                    "anchor_reproduced_value",
                    "anchor_tolerance",
                    "anchor_sign_off_note",
                    "anchor_signed_off_by",
                    "anchor_signed_off_at",
                ]
            },
        ),
        (
            "Faithfulness calibration",
            {
                "fields": [
                    "faithfulness_rubric_version",
                    "faithfulness_dry_run_outcome",
                    "faithfulness_calibrated_by",
                    "faithfulness_calibrated_at",
                ]
            },
        ),
        ("Gates", {"fields": ["gate_actions"]}),
        (
            "Text snapshot of this release",
            {
                "classes": ["collapse"],
                "fields": [
                    "platform",
                    "direction",
                    "simulator",
                    "mode",
                    "score_cap",
                    "penalties",
                    "contract",
                    "paper_md",
                    "brief_md",
                    "sandbox_dockerfile",
                ],
            },
        ),
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="Pass a gate")
    def gate_actions(self, obj: ReleaseTask) -> str:
        links = []
        if obj.anchor_signed_off_at is None and obj.paper_value is not None:
            url = reverse("admin:leaderboard_releasetask_sign_off", args=[obj.pk])
            links.append(format_html('<a class="button" href="{}">Sign off the anchor…</a>', url))
        if obj.faithfulness_calibrated_at is None and obj.genre == Task.Genre.REPRODUCTION:
            url = reverse("admin:leaderboard_releasetask_calibrate", args=[obj.pk])
            links.append(format_html('<a class="button" href="{}">Record faithfulness calibration…</a>', url))
        if not links:
            return "every gate of this task has passed"
        return format_html_join(" ", "{}", ((link,) for link in links))

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [
            path("<int:pk>/sign-off/", wrap(self.sign_off_view), name="leaderboard_releasetask_sign_off"),
            path("<int:pk>/calibrate/", wrap(self.calibrate_view), name="leaderboard_releasetask_calibrate"),
            *super().get_urls(),
        ]

    def _gate_view(
        self,
        request: HttpRequest,
        pk: int,
        form_class: type[forms.Form],
        title: str,
        apply: Any,
        passed: tuple[str, str],
    ) -> HttpResponse:
        """One gate's form. ``passed``: the row's (by, at) fields of this gate: a gate passes once
        (its service keeps the first evidence), so a second submission says so instead of
        "recorded" over evidence that was in fact discarded."""
        # The permission the gate services check (release_gates), by its one name: spelled here
        # as change_releasetask, it refused the maintainers the service would have let through.
        if not staff_may(request.user, PUBLISH_RELEASE):
            raise PermissionDenied
        row = get_object_or_404(ReleaseTask.objects.select_related("task", "release__benchmark"), pk=pk)
        form = form_class(request.POST or None)
        problem = ""
        passed_by, passed_at = (getattr(row, name) for name in passed)
        if request.method == "POST" and passed_at is not None:
            who = getattr(passed_by, "username", None) or "a script"
            problem = (
                f"{title} of {row.task.slug} was already recorded by {who} on {passed_at:%Y-%m-%d %H:%M} UTC; "
                "a gate is passed once, so nothing was changed (its evidence stands as recorded)"
            )
        elif request.method == "POST" and form.is_valid():
            try:
                apply(row, form.cleaned_data, request.user)
            except (ReleaseGateError, PermissionDenied) as exc:
                problem = str(exc)
            else:
                self.message_user(request, f"{title}: recorded for {row.task.slug}", messages.SUCCESS)
                return HttpResponseRedirect(reverse("admin:leaderboard_releasetask_change", args=[row.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": f"{title}: {row.task.slug} ({row.release})",
            "row": row,
            "form": form,
            "problem": problem,
        }
        status = (
            409
            if request.method == "POST" and passed_at is not None
            else 400
            if problem or (request.method == "POST" and not form.is_valid())
            else 200
        )
        return TemplateResponse(request, "admin/leaderboard/releasetask/gate.html", context, status=status)

    def sign_off_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        def apply(row: ReleaseTask, data: dict[str, Any], user: Any) -> None:
            release_task_sign_off_anchor(release_task=row, user=user, **data)

        passed = ("anchor_signed_off_by", "anchor_signed_off_at")
        return self._gate_view(request, pk, AnchorSignOffForm, "Anchor sign-off", apply, passed)

    def calibrate_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        def apply(row: ReleaseTask, data: dict[str, Any], user: Any) -> None:
            release_task_calibrate_faithfulness(release_task=row, user=user, **data)

        passed = ("faithfulness_calibrated_by", "faithfulness_calibrated_at")
        return self._gate_view(request, pk, FaithfulnessCalibrationForm, "Faithfulness calibration", apply, passed)


@admin.register(Validator)
class ValidatorAdmin(SuperuserDeletesMixin, admin.ModelAdmin):
    list_display = ["slug", "name"]
    # The accounts that act for the validator: they get race-run challenges and see owed runs.
    filter_horizontal = ["accounts"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # Who acts for a validator is a race write (docs/security-model.md: filing for a validator
        # needs change_race): with only change_validator a helper added itself to one. The slug is
        # the validator's identity: signed race runs name it (a rename refused them,
        # validator_mismatch, and relabelled the past ones).
        identity = ["slug"] if obj is not None else []
        return identity if staff_may(request.user, CHANGE_RACE) else [*identity, "accounts"]


@admin.register(Agent)
class AgentAdmin(SuperuserDeletesMixin, admin.ModelAdmin):
    """Agents are named by their owners' first runs (submissions.services.agents, the one rule
    that refuses lookalike names). Here staff only give an owner-less agent (a row from before
    ownership existed) its owner; every other field, and an owned agent, is read-only: a helper
    could rename an agent, or take it, declare in its name and hand it back."""

    list_display = ["slug", "name", "owner", "created_at"]
    search_fields = ["slug", "name", "owner__username"]
    list_select_related = ["owner"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = ["slug", "name", "created_at"]
        return fields if obj is not None and obj.owner_id is None else [*fields, "owner"]


@admin.register(AgentVersion)
class AgentVersionAdmin(ReadOnlyFieldsMixin, admin.ModelAdmin):
    list_display = ["agent", "version", "created_at"]
    search_fields = ["agent__name", "agent__slug", "version"]  # the baseline admin's autocomplete
    list_select_related = ["agent"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # versions are named by their runs (its agent field is read-only: adding was a 500)
