"""A NUL character (U+0000) in a URL or a website form is refused before any view with
400 invalid_text naming where it was (leaderboard.request_text). PostgreSQL refuses NUL in
text: before, a NUL in a text path segment reached the database from every such route (a
DataError, a 500), and so did one in the API key, challenge, race-entry and hide forms. The
routes are found in the URL patterns, so one added later is covered without touching this file."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from submissions.models import ApiKey, SubmissionChallenge

pytestmark = pytest.mark.django_db

_TEXT_SEGMENT = re.compile(r"<(?:str|path):\w+>|\(\?P<\w+>\[\^/\.\]\+\)")


def _text_routes(patterns: list[Any], prefix: str = "") -> list[str]:
    """Every route (admin left out) with a free-text segment: <str:...>, <path:...> or a router's [^/.]+."""
    routes: list[str] = []
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if route.startswith("admin/"):
            continue
        if isinstance(entry, URLResolver):
            routes += _text_routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and _TEXT_SEGMENT.search(route):
            routes.append(route)
    return routes


def _url(route: str, text: str) -> str:
    route = _TEXT_SEGMENT.sub(text, route)
    route = re.sub(r"<int:\w+>", "1", route)
    route = re.sub(r"<slug:\w+>", "ale-robotics", route)
    return "/" + route.replace("^", "").replace("$", "")


def _expected(url: str, response: Any) -> bool:
    if response.status_code != 400:
        return False
    if url.startswith("/api/"):
        return response.json()["error"]["code"] == "invalid_text"
    return "NUL character" in response.content.decode()


@pytest.mark.parametrize("who", ["anonymous", "staff"])
def test_every_text_route_answers_a_nul_in_its_path_with_400_invalid_text(world, client_for, who) -> None:
    routes = _text_routes(get_resolver().url_patterns)
    assert "benchmarks/<slug:benchmark>/<str:version>/" in routes  # the walk finds the boards
    client = client_for(world.staff if who == "staff" else None)
    failures = []
    for route in routes:
        url = _url(route, "v0.5%00")
        response = client.get(url)
        if not _expected(url, response):
            failures.append(f"GET {url}: {response.status_code}")
    assert failures == []


def test_a_nul_in_a_version_segment_is_a_400_page_naming_the_path(world, client_for) -> None:
    response = client_for(None).get("/benchmarks/ale-robotics/v0.5%00/")
    assert response.status_code == 400
    assert "the path: contains a NUL character (U+0000), which no text can hold; leave it out." in (
        response.content.decode()
    )


def test_a_nul_in_an_api_path_is_400_invalid_text(world, client_for) -> None:
    response = client_for(None).get("/api/v1/agents/robo%00agent/")
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "invalid_text",
            "message": "the path: contains a NUL character (U+0000), which no text can hold; leave it out.",
        }
    }


def test_a_nul_in_a_query_parameter_is_400_invalid_text_naming_it(world, client_for) -> None:
    response = client_for(None).get("/api/v1/runs/?agent=robo%00agent")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_text",
        "message": "query parameter 'agent': contains a NUL character (U+0000), which no text can hold; leave it out.",
    }


def test_a_nul_in_the_api_key_form_creates_no_key(world) -> None:
    from django.test import Client

    client = Client()
    client.force_login(world.owner)
    response = client.post("/accounts/api-keys/", {"name": "ci\x00runner"})
    assert response.status_code == 400
    assert "form field 'name': contains a NUL character" in html.unescape(response.content.decode())
    assert not ApiKey.objects.filter(user=world.owner).exists()


def test_a_nul_in_the_challenge_form_issues_no_challenge(world) -> None:
    from django.test import Client

    client = Client()
    client.force_login(world.owner)
    fields = {"benchmark": "ale-robotics", "release": "v0.5", "agent_name": "robo\x00agent", "agent_version": "1"}
    response = client.post("/submit/challenge/", fields)
    assert response.status_code == 400
    assert "form field 'agent_name': contains a NUL character" in html.unescape(response.content.decode())
    assert not SubmissionChallenge.objects.exists()


def test_a_multipart_upload_body_is_left_to_its_view(world) -> None:
    # The upload page checks the declared size and CSRF itself before reading the body: the
    # middleware must not parse it first (the bundle field is checked by the view).
    from django.test import Client

    client = Client()
    client.force_login(world.owner)
    response = client.post("/submit/", {"benchmark": "ale\x00robotics"})
    assert response.status_code == 400
    assert "bundle_missing" in response.content.decode() or "Choose a bundle" in response.content.decode()
