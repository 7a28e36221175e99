"""An unpublished release and a nonexistent one get the same answer (issue 11): pages, exports
and API responses must not tell an outsider which draft versions exist. Staff see drafts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from rest_framework.test import APIClient

ABSENT_VERSION = "v0.6-drafx"  # as long as the draft's version, so the bodies compare byte for byte


def page_urls(version: str) -> list[str]:
    base = f"/benchmarks/ale-robotics/{version}"
    return [
        f"{base}/",
        f"{base}/release/",
        f"{base}/tasks/draft-only-task/",
        f"{base}/board.csv",
        f"{base}/board.json",
        f"{base}/chart.json",
        f"/badges/ale-robotics/{version}/robo-agent.svg",
    ]


def api_urls(release_id: int) -> list[str]:
    return [f"/api/v1/releases/{release_id}/", f"/api/v1/releases/{release_id}/leaderboard/overall/"]


CSRF = re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"')


def answers(client: Any, urls: list[str], secret: str, public: str) -> list[tuple[int, str]]:
    """(status, body) per URL, with the version (or id) asked for and the per-request CSRF token masked."""
    out = []
    for url in urls:
        response = client.get(url)
        body = CSRF.sub("CSRF", response.content.decode().replace(secret, public))
        out.append((response.status_code, body))
    return out


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["anonymous", "other"])
def test_a_draft_release_page_answers_exactly_like_a_missing_one(client: Any, world: Any, who: str) -> None:
    assert len(ABSENT_VERSION) == len(world.draft.version)
    if who == "other":
        client.force_login(world.other)
    draft = answers(client, page_urls(world.draft.version), world.draft.version, "VERSION")
    absent = answers(client, page_urls(ABSENT_VERSION), ABSENT_VERSION, "VERSION")
    assert [code for code, _ in draft] == [404] * len(draft)
    assert draft == absent


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["anonymous", "other"])
def test_a_draft_release_in_the_api_answers_exactly_like_a_missing_one(world: Any, who: str) -> None:
    client = APIClient()
    if who == "other":
        client.force_authenticate(world.other)
    missing_id = world.draft.pk + 10_000
    assert len(str(missing_id)) >= 1
    draft = answers(client, api_urls(world.draft.pk), f"/{world.draft.pk}/", "/ID/")
    absent = answers(client, api_urls(missing_id), f"/{missing_id}/", "/ID/")
    assert [code for code, _ in draft] == [404, 404]
    assert draft == absent
    listed = [release["version"] for release in client.get("/api/v1/releases/").json()["results"]]
    assert world.draft.version not in listed


@pytest.mark.django_db
def test_staff_see_the_draft_release(client: Any, world: Any) -> None:
    client.force_login(world.staff)
    assert client.get(f"/benchmarks/ale-robotics/{world.draft.version}/release/").status_code == 200
    api = APIClient()
    api.force_authenticate(world.staff)
    assert api.get(f"/api/v1/releases/{world.draft.pk}/").status_code == 200
