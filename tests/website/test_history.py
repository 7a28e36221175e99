"""The paper-gap history chart: the Overall leader over time and today's top N."""

from __future__ import annotations

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Standing
from tests.website.conftest import make_run, make_user


def _verified(run, days_ago: int) -> None:
    Standing.objects.filter(run=run).update(verified_at=timezone.now() - dt.timedelta(days=days_ago))


def _history(client, **params):
    return client.get(reverse("release_history_json", args=["ale-robotics", "v0.5"]), params)


def test_the_leader_series_steps_each_time_a_better_run_arrives(client, release):
    first = make_run(release, agent_name="First", score=0.9)  # rank 2 today
    best = make_run(release, agent_name="Best", score=1.2)
    later = make_run(release, agent_name="Later", score=0.5)
    _verified(first, 10)
    _verified(later, 5)  # never leads: worse than First
    _verified(best, 1)
    data = _history(client).json()
    assert [(p["label"], p["score"]) for p in data["leader"]] == [("First 1.0", 0.9), ("Best 1.0", 1.2)]
    assert [p["rank"] for p in data["top"]] == [1, 2, 3]


def test_the_top_n_is_bounded_by_n(client, release):
    for i in range(4):
        make_run(release, agent_name=f"Agent {i}", score=1 - i / 10)
    assert len(_history(client, n=2).json()["top"]) == 2


def test_a_private_runs_standing_is_not_in_the_history(client, release):
    hidden = make_run(release, agent_name="Hidden", score=1.4)
    hidden.is_private = True
    hidden.save()
    make_run(release, agent_name="Shown", score=0.6)
    data = _history(client).json()
    assert "Hidden" not in str(data)


@pytest.mark.parametrize("raw", ["0", "21", "x", "-1"])
def test_a_bad_n_is_a_400(client, release, raw):
    response = _history(client, n=raw)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_query")
    assert client.get(reverse("release_history", args=["ale-robotics", "v0.5"]), {"n": raw}).status_code == 400


def test_the_history_page_lists_the_changes_of_leader_and_points_the_chart_at_its_data(client, release):
    make_run(release, agent_name="Alpha", score=1.1)
    body = client.get(reverse("release_history", args=["ale-robotics", "v0.5"])).content.decode()
    assert "Alpha" in body
    assert 'data-url="/benchmarks/ale-robotics/v0.5/history.json?n=5"' in body
    assert "<script>" not in body  # CSP: no inline script


def test_a_draft_releases_history_is_for_staff_only(client, release):
    release.published = False
    release.save()
    assert _history(client).status_code == 404
    client.force_login(make_user(is_staff=True))
    assert _history(client).status_code == 200
