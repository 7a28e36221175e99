"""Public read serializers.

Withheld data never passes through here: anchors come only from
ReleaseTask.public_paper_value; Release.manifest, budgets, benchmark versions
and Task.anchor_provenance are not serialized at all. What a viewer may see of a
run's numbers is leaderboard.disclosure's rule, the one the pages apply: a
withheld anchor's ``measured`` value only for the submitter and staff (measured
together with gap would give the anchor away: paper_value = measured / gap), and
the gap/score/final of an unsigned result on such a task, with every aggregate
that includes it, for staff only. A withheld value is null and named in the
object's ``withheld`` list.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard.api.fields import StrictCharField, StrictChoiceField, StrictModelSerializer
from leaderboard.disclosure import NOTHING_HIDDEN, Disclosure, anchor_is_public, run_disclosure, shown_anchor
from leaderboard.models import (
    Agent,
    AgentVersion,
    Benchmark,
    Evaluator,
    OfficialRerun,
    Release,
    ReleaseTask,
    Run,
    Standing,
    Task,
    TaskResult,
    VerificationEvent,
)
from leaderboard.provenance import ProvenanceField
from leaderboard.selectors.visibility import viewer_is_staff
from leaderboard.users import Viewer

NULLABLE_NUMBER = {"type": "number", "format": "double", "nullable": True}
WITHHELD_LIST = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Fields whose values are withheld from you (null above); see docs/security-model.md",
}

# Keys of a task contract that may carry the anchor; dropped wherever they nest.
ANCHOR_KEYS = frozenset({"paper_value", "anchor", "paper_target", "target"})


def contract_without_anchor(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: contract_without_anchor(v) for k, v in value.items() if k not in ANCHOR_KEYS}
    if isinstance(value, list):
        return [contract_without_anchor(v) for v in value]
    return value


class ReleaseRefSerializer(StrictModelSerializer):
    benchmark: serializers.SlugRelatedField[Benchmark] = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Release
        fields = ["id", "benchmark", "version", "published"]


class BenchmarkSerializer(StrictModelSerializer):
    releases = serializers.SerializerMethodField()

    class Meta:
        model = Benchmark
        fields = ["slug", "name", "description", "scheme", "daily_submission_limit", "releases"]

    @extend_schema_field(ReleaseRefSerializer(many=True))
    def get_releases(self, obj: Benchmark) -> list[dict[str, Any]]:
        return ReleaseRefSerializer(getattr(obj, "visible", []), many=True).data  # type: ignore[return-value]  # many=True builds a ListSerializer: its data is a list


class ReleaseTaskSerializer(StrictModelSerializer):
    slug = StrictCharField(source="task.slug")
    # The release's own text snapshot, not the shared Task row.
    title = StrictCharField()
    metric_name = StrictCharField()
    paper_value = serializers.FloatField(source="public_paper_value", allow_null=True)

    class Meta:
        model = ReleaseTask
        fields = [
            "slug",
            "title",
            "position",
            "genre",
            "metric_name",
            "metric_direction",
            "anchor_published",
            "paper_value",
            "score_cap",
            "penalties",
        ]


class ReleaseSerializer(StrictModelSerializer):
    benchmark: serializers.SlugRelatedField[Benchmark] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    required_tasks = serializers.SerializerMethodField()
    tasks = ReleaseTaskSerializer(source="release_tasks", many=True, read_only=True)

    class Meta:
        model = Release
        fields = [
            "id",
            "benchmark",
            "version",
            "title",
            "notes",
            "published",
            "published_at",
            "required_task_set_hash",
            "required_tasks",
            "missing_task_policy",
            "default_score_cap",
            "episode_set_size",
            "generation",
            "tasks",
        ]

    @extend_schema_field({"type": "array", "items": {"type": "string"}})
    def get_required_tasks(self, obj: Release) -> list[str]:
        return sorted(rt.task.slug for rt in obj.release_tasks.all())


class TaskSerializer(StrictModelSerializer):
    benchmark: serializers.SlugRelatedField[Benchmark] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    simulator: serializers.SlugRelatedField[Evaluator] = serializers.SlugRelatedField(
        slug_field="simulator", read_only=True
    )
    contract = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = [
            "id",
            "benchmark",
            "slug",
            "title",
            "platform",
            "direction",
            "simulator",
            "genre",
            "mode",
            "metric_name",
            "metric_direction",
            "contract",
            "updated_at",
        ]

    @extend_schema_field({"type": "object", "additionalProperties": True})
    def get_contract(self, obj: Task) -> Any:
        return contract_without_anchor(obj.contract)


class TaskDetailSerializer(TaskSerializer):
    class Meta(TaskSerializer.Meta):
        fields = [*TaskSerializer.Meta.fields, "paper_md", "brief_md", "sandbox_dockerfile"]


class AgentVersionSerializer(StrictModelSerializer):
    class Meta:
        model = AgentVersion
        fields = ["version", "created_at"]


class AgentSerializer(StrictModelSerializer):
    versions = AgentVersionSerializer(many=True, read_only=True)

    class Meta:
        model = Agent
        fields = ["slug", "name", "created_at", "versions"]


class StandingSerializer(StrictModelSerializer):
    # Computed when read (leaderboard.selectors.standing_ranks), not a column.
    rank = serializers.IntegerField(read_only=True)
    run = serializers.IntegerField(source="run_id")
    # The precomputed cost and the owner's declaration (leaderboard.selectors.declarations).
    cost_usd = serializers.FloatField(read_only=True, allow_null=True, default=None)
    cost_basis = StrictCharField(
        read_only=True,
        allow_null=True,
        default=None,
        help_text="recorded (the submitter-reported tokens x the release's price table) or declared",
    )
    organisation_declared = StrictCharField(source="declared_org", read_only=True, allow_null=True, default=None)
    weights_declared = StrictCharField(source="declared_weights", read_only=True, allow_null=True, default=None)

    class Meta:
        model = Standing
        fields = [
            "rank",
            "run",
            "agent_name",
            "agent_slug",
            "version",
            "score",
            "ci_low",
            "ci_high",
            "pass_rate",
            "covered",
            "required",
            "complete",
            "runtime_seconds",
            "tokens",
            "effort_tier",
            "cost_usd",
            "cost_basis",
            "organisation_declared",
            "weights_declared",
            "verification",
            "verified_at",
        ]


class TaskResultSerializer(StrictModelSerializer):
    """One task of a run; ``context["disclosure"]`` (leaderboard.disclosure) says what to withhold."""

    task = StrictCharField(source="release_task.task.slug")
    genre = StrictCharField(source="release_task.genre")
    anchor_published = serializers.BooleanField(source="release_task.anchor_published")
    paper_value = serializers.SerializerMethodField()
    measured = serializers.SerializerMethodField()
    gap = serializers.SerializerMethodField()
    score = serializers.SerializerMethodField()
    final = serializers.SerializerMethodField()
    # Who signed the result and its verdict, as the exports give it (leaderboard.provenance).
    signing_key = ProvenanceField()
    signing_key_revoked_at = ProvenanceField()
    judge_key = ProvenanceField()
    judge_key_revoked_at = ProvenanceField()
    withheld = serializers.SerializerMethodField()

    class Meta:
        model = TaskResult
        fields = [
            "task",
            "genre",
            "anchor_published",
            "paper_value",
            "measured",
            "gap",
            "factors",
            "factor",
            "score",
            "final",
            "pass_rate",
            "episodes",
            "faithful",
            "faithfulness_source",
            "judge",
            "rubric_version",
            "signature",
            "signing_key",
            "signing_key_revoked_at",
            "judge_key",
            "judge_key_revoked_at",
            "withheld",
        ]

    def _hidden(self, obj: TaskResult) -> list[str]:
        disclosure: Disclosure = self.context.get("disclosure", NOTHING_HIDDEN)
        return disclosure.hidden_task_fields(obj.release_task.task.slug)

    def _value(self, obj: TaskResult, name: str) -> float | None:
        return None if name in self._hidden(obj) else getattr(obj, name)

    @extend_schema_field(NULLABLE_NUMBER)
    def get_paper_value(self, obj: TaskResult) -> float | None:
        # A draft release's anchors stay in the registry until it is published, whatever its flags
        # say; the API shows them to no one (staff read them in the admin).
        return shown_anchor(obj.release_task, release_published=obj.release_task.release.published, staff=False)

    @extend_schema_field(NULLABLE_NUMBER)
    def get_measured(self, obj: TaskResult) -> float | None:
        return self._value(obj, "measured")

    @extend_schema_field(NULLABLE_NUMBER)
    def get_gap(self, obj: TaskResult) -> float | None:
        return self._value(obj, "gap")

    @extend_schema_field(NULLABLE_NUMBER)
    def get_score(self, obj: TaskResult) -> float | None:
        return self._value(obj, "score")

    @extend_schema_field(NULLABLE_NUMBER)
    def get_final(self, obj: TaskResult) -> float | None:
        return self._value(obj, "final")

    @extend_schema_field(WITHHELD_LIST)
    def get_withheld(self, obj: TaskResult) -> list[str]:
        return self._hidden(obj)


class VerificationEventSerializer(StrictModelSerializer):
    rerun: serializers.PrimaryKeyRelatedField[OfficialRerun] = serializers.PrimaryKeyRelatedField(
        read_only=True, allow_null=True
    )

    class Meta:
        model = VerificationEvent
        fields = ["level", "method", "evidence_sha256", "note", "rerun", "created_at"]


def rerun_comparison(
    rerun: OfficialRerun, *, disclosure: Disclosure, run: Run, user: Viewer | None
) -> list[dict[str, Any]]:
    """The re-run's per-task rows as ``user`` may see them (leaderboard.disclosure's rule):

    * the submitted measured value as on the run itself (``disclosure.measured_hidden``);
    * the submitted final and the difference hidden where the run's scores of that task are
      (the difference would give the submitted final back);
    * the re-run's final hidden where the run's own final of that task is, and, for a task the
      run did not cover, wherever the task's anchor is not public (to all but staff). It is
      ``re-run measured / anchor`` like the run's own: a confirming re-run lands within the
      tolerance of the hidden final (it *is* it when the evaluator's values repeat), and a
      guessable measured value (k / N) gives the anchor (docs/security-model.md, "Who may
      learn what"). The submitter of a signed result sees it, as they see their own final;
    * the re-run's measured value, while the task's anchor is not public, to staff and to whoever
      sees the run's own measured value and final of that task (the submitter of a signed
      result): beside the re-run's final it gives the anchor, which that viewer already holds
      (their measured / gap), and from which they would compute it (re-run final x anchor).
    """
    staff = viewer_is_staff(user)
    comparison = list(rerun.comparison or [])
    published = run.release.published
    anchor_public = {
        row.release_task.task.slug: anchor_is_public(
            release_published=published, anchor_published=row.release_task.anchor_published
        )
        for row in run.task_results.all()
    }
    covered = set(anchor_public)  # the tasks the run has results for
    extra = {str(row.get("task")) for row in comparison} - covered
    if extra and not staff:
        # Tasks the re-run covered and the run did not (one query, only when there are some).
        for slug, flag in ReleaseTask.objects.filter(release_id=run.release_id, task__slug__in=extra).values_list(
            "task__slug", "anchor_published"
        ):
            anchor_public[slug] = anchor_is_public(release_published=published, anchor_published=flag)
    rows = []
    for row in comparison:
        shown = dict(row)
        slug = str(row.get("task"))
        public = anchor_public.get(slug, False)
        withheld = []
        if slug in disclosure.measured_hidden:
            withheld.append("submitted_measured")
        if disclosure.task_scores_hidden(slug):
            withheld += ["submitted_final", "difference"]
        if not staff and not public:
            own_hidden = slug not in covered or disclosure.task_scores_hidden(slug)
            if own_hidden:
                withheld.append("rerun_final")
            if own_hidden or slug in disclosure.measured_hidden:
                withheld.append("rerun_measured")
        # Named only where there was a value to withhold (a task one side did not cover has none).
        shown.update(dict.fromkeys(withheld))
        shown["withheld"] = sorted(name for name in withheld if row.get(name) is not None)
        rows.append(shown)
    return rows


class OfficialRerunSerializer(StrictModelSerializer):
    comparison = serializers.SerializerMethodField()

    class Meta:
        model = OfficialRerun
        fields = ["id", "run", "source", "outcome", "tolerance", "evidence_sha256", "note", "comparison", "created_at"]

    @extend_schema_field({"type": "array", "items": {"type": "object", "additionalProperties": True}})
    def get_comparison(self, obj: OfficialRerun) -> list[dict[str, Any]]:
        run = self.context.get("run")
        if run is None:  # staff endpoints answer with the full comparison
            return list(obj.comparison or [])
        return rerun_comparison(obj, disclosure=self.context["disclosure"], run=run, user=self.context.get("user"))


class RunSerializer(StrictModelSerializer):
    release = ReleaseRefSerializer(read_only=True)
    agent = StrictCharField(source="agent_version.agent.slug")
    agent_name = StrictCharField(source="agent_version.agent.name")
    version = StrictCharField(source="agent_version.version")
    overall = serializers.SerializerMethodField()
    reproduction = serializers.SerializerMethodField()
    open = serializers.SerializerMethodField()
    confidence = serializers.SerializerMethodField()
    withheld = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = [
            "id",
            "release",
            "agent",
            "agent_name",
            "version",
            "level",
            "overall",
            "reproduction",
            "open",
            "pass_rate",
            "confidence",
            "covered",
            "required",
            "complete",
            "runtime_seconds",
            "tokens_in",
            "tokens_out",
            "effort_tier",
            "is_private",
            "created_at",
            "withheld",
        ]

    def disclosure(self, obj: Run) -> Disclosure:
        """The viewer's disclosure of ``obj``, computed once per run (task results are prefetched)."""
        cached = getattr(obj, "_disclosure", None)
        if cached is None:
            request = self.context.get("request")
            cached = run_disclosure(obj, user=getattr(request, "user", None))
            obj._disclosure = cached  # type: ignore[attr-defined]  # memoised on the row for the other fields
        return cached

    @extend_schema_field(NULLABLE_NUMBER)
    def get_overall(self, obj: Run) -> float | None:
        return self.disclosure(obj).aggregate("overall", obj.overall)

    @extend_schema_field(NULLABLE_NUMBER)
    def get_reproduction(self, obj: Run) -> float | None:
        return self.disclosure(obj).aggregate("reproduction", obj.reproduction)

    @extend_schema_field(NULLABLE_NUMBER)
    def get_open(self, obj: Run) -> float | None:
        return self.disclosure(obj).aggregate("open", obj.open)

    @extend_schema_field(
        {
            "type": "object",
            "additionalProperties": True,
            "description": "95% bootstrap interval per aggregate you may see: {overall: [low, high], ...}",
        }
    )
    def get_confidence(self, obj: Run) -> dict[str, Any]:
        return self.disclosure(obj).confidence(obj.confidence)

    @extend_schema_field(WITHHELD_LIST)
    def get_withheld(self, obj: Run) -> list[str]:
        return sorted(self.disclosure(obj).aggregates_hidden)


class RunDetailSerializer(RunSerializer):
    tasks = serializers.SerializerMethodField()
    verification = VerificationEventSerializer(source="events", many=True, read_only=True)
    reruns = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "tasks", "verification", "reruns"]

    @extend_schema_field(OfficialRerunSerializer(many=True))
    def get_reruns(self, obj: Run) -> list[dict[str, Any]]:
        request = self.context.get("request")
        context = {"run": obj, "disclosure": self.disclosure(obj), "user": getattr(request, "user", None)}
        return OfficialRerunSerializer(obj.reruns.all(), many=True, context=context).data  # type: ignore[return-value]  # many=True builds a ListSerializer: its data is a list

    @extend_schema_field(TaskResultSerializer(many=True))
    def get_tasks(self, obj: Run) -> list[dict[str, Any]]:
        return TaskResultSerializer(  # type: ignore[return-value]  # many=True: a ListSerializer, data is a list
            obj.task_results.all(), many=True, context={"disclosure": self.disclosure(obj)}
        ).data


class ManifestUploadSerializer(serializers.Serializer):
    manifest = serializers.FileField(help_text="A zip of the manifest directory (release.yaml + tasks/...).")


class ManifestSyncResultSerializer(serializers.Serializer):
    status = StrictChoiceField(choices=["created", "updated", "unchanged"])
    release = serializers.DictField()
    changes = serializers.ListField(child=StrictCharField())
    notes = serializers.ListField(child=StrictCharField())


class RaceStatusSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    benchmark = StrictCharField()
    number = serializers.IntegerField()
    status = StrictCharField()
    released_at = serializers.DateTimeField(allow_null=True)
