"""What each caller may read through the API, with the joins the serializers need.

Visibility is leaderboard.selectors.visibility's one rule (the authorization matrix in
tests/api/ checks each): releases, their tasks and standings as that module says; tasks
are those in at least one visible release.
Anchors never come from here: serializers read ReleaseTask.public_paper_value only.
"""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from leaderboard.models import Agent, Benchmark, Release, ReleaseTask, Run, Task, TaskResult
from leaderboard.selectors.agents import agent_versions_public, agents_public
from leaderboard.selectors.visibility import benchmarks_visible, runs_visible_to, viewer_is_staff
from leaderboard.selectors.visibility import releases_visible as _releases_visible
from leaderboard.users import Viewer

AnyUser = Viewer


def releases_visible(user: AnyUser) -> QuerySet[Release]:
    return _releases_visible(staff=viewer_is_staff(user))


def release_list(user: AnyUser) -> QuerySet[Release]:
    return releases_visible(user).prefetch_related(
        Prefetch(
            "release_tasks", queryset=ReleaseTask.objects.select_related("task").order_by("position", "task__slug")
        )
    )


def benchmark_list(user: AnyUser) -> QuerySet[Benchmark]:
    staff = viewer_is_staff(user)
    return (
        benchmarks_visible(staff=staff)
        .prefetch_related(
            Prefetch("releases", queryset=releases_visible(user).order_by("-published_at", "-id"), to_attr="visible")
        )
        .order_by("slug")
    )


def task_list(user: AnyUser) -> QuerySet[Task]:
    queryset = Task.objects.select_related("benchmark", "simulator").order_by("benchmark__slug", "slug")
    if viewer_is_staff(user):
        return queryset
    return queryset.filter(release_tasks__release__published=True).distinct()


def agent_list(user: AnyUser) -> QuerySet[Agent]:
    """Public agents only (leaderboard.selectors.agents): a private or rejected submission never
    makes a name public, and each agent lists only its public versions."""
    return (
        agents_public(user=user)
        .prefetch_related(Prefetch("versions", queryset=agent_versions_public(user=user).order_by("created_at", "pk")))
        .order_by("slug")
    )


def runs_visible(user: AnyUser, *, with_breakdown: bool = False) -> QuerySet[Run]:
    # Task results are read for the list too: which aggregates a viewer may see depends on
    # them (leaderboard.disclosure), one prefetch query per page.
    queryset = Run.objects.select_related("release__benchmark", "agent_version__agent", "submission").prefetch_related(
        Prefetch(
            "task_results",
            queryset=TaskResult.objects.select_related(
                "release_task__task", "release_task__release", "signing_key", "judge_key"
            ).order_by("release_task__position", "release_task__task__slug"),
        )
    )
    if with_breakdown:
        queryset = queryset.prefetch_related("events", "reruns")
    return runs_visible_to(queryset, user=user)
