"""The per-task, comparison, history and download views issue a fixed number of SQL queries
whatever the number of runs (2 and 50), like every other page (test_query_counts.py)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import reverse

from tests.website.conftest import make_release, make_run

# (name, url builder, pinned query count for an anonymous visitor)
PAGES = [
    # release, release task, the task's results (with runs, agent versions and submissions)
    ("task-page", lambda a, b: reverse("task_detail", args=["ale-robotics", "v0.5", "grasp"]), 3),
    ("task-json", lambda a, b: reverse("task_results_json", args=["ale-robotics", "v0.5", "grasp"]), 3),
    ("task-csv", lambda a, b: reverse("task_results_csv", args=["ale-robotics", "v0.5", "walk"]), 3),
    # run (+task results, events, official re-runs) — the run page's own selector
    ("run-json", lambda a, b: reverse("run_results_json", args=[a.pk]), 4),
    ("run-csv", lambda a, b: reverse("run_results_csv", args=[a.pk]), 4),
    # two runs, each with its task results, events and official re-runs
    ("compare", lambda a, b: reverse("run_compare") + f"?a={a.pk}&b={b.pk}", 8),
    ("compare-json", lambda a, b: reverse("run_compare_json") + f"?a={a.pk}&b={b.pk}", 8),
    # release, the Overall rows; the page adds the sibling releases
    ("history", lambda a, b: reverse("release_history", args=["ale-robotics", "v0.5"]) + "?n=20", 3),
    ("history-json", lambda a, b: reverse("release_history_json", args=["ale-robotics", "v0.5"]) + "?n=20", 2),
]


@pytest.mark.parametrize("runs", [2, 50])
@pytest.mark.parametrize(("name", "url", "queries"), PAGES, ids=[p[0] for p in PAGES])
def test_a_new_view_issues_a_fixed_number_of_queries(
    client, benchmark, django_assert_num_queries, runs, name, url, queries
):
    release = make_release(benchmark)
    first = make_run(release, agent_name="Alpha", version="0")
    second = make_run(release, agent_name="Bravo", version="0")
    for i in range(2, runs):
        make_run(release, agent_name=f"Other {i}", version=str(i))
    target = url(first, second)
    client.get(target)  # warm caches that are not per-request
    cache.clear()
    with django_assert_num_queries(queries):
        response = client.get(target)
        streamed = hasattr(response, "streaming_content")
        body = b"".join(response.streaming_content) if streamed else response.content
    assert response.status_code == 200
    if name == "task-json":
        assert len(response.json()["rows"]) == runs
    if name == "task-csv":
        assert body.count(b"\n") == runs + 1
