"""Every integer parameter, in a query string or a path, answers an out-of-range or malformed
value with a clear 400 invalid_query or a 404, never a 500 (a number beyond 2^63 used to reach
the database and overflow). The API's are found in its own OpenAPI schema, the pages' in the
URL patterns, so a parameter added later is covered without touching this file."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.converters import IntConverter

pytestmark = pytest.mark.django_db

BEYOND_BIGINT = str(2**63)
HUGE = "9" * 30
# Out of range, huge, a superscript digit (str.isdigit() accepts it, int() does not), negative, fractional.
BAD_VALUES = (BEYOND_BIGINT, HUGE, "\u00b2", "-1", "1.5")


def _integer_parameters(schema: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(method, path template, parameter name, location) of every integer parameter in the schema."""
    found = []
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in ("get", "post", "delete"):
                continue
            for parameter in operation.get("parameters", []):
                if parameter.get("schema", {}).get("type") == "integer":
                    found.append((method, path, parameter["name"], parameter["in"]))
    return found


def _fill(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), "1"), path)


def test_the_schema_lists_the_integer_parameters_this_walk_covers(world: Any, client_for: Any) -> None:
    schema = client_for(world.staff).get("/api/v1/schema/", {"format": "json"}).json()
    names = {(path, name) for _, path, name, _ in _integer_parameters(schema)}
    # Guards the walk below: it finds the filter of the report and the path ids.
    assert ("/api/v1/runs/", "release") in names
    assert ("/api/v1/runs/{id}/", "id") in names
    assert ("/api/v1/releases/{release_id}/leaderboard/{tab}/", "release_id") in names
    assert ("/api/v1/runs/", "offset") in names


def test_every_integer_api_parameter_refuses_a_bad_value_with_400_or_404(world: Any, client_for: Any) -> None:
    staff = client_for(world.staff)
    schema = staff.get("/api/v1/schema/", {"format": "json"}).json()
    failures = []
    for method, path, name, location in _integer_parameters(schema):
        for value in BAD_VALUES:
            if location == "path":
                url, params = _fill(path, {name: value, "tab": "overall"}), {}
            else:
                url, params = _fill(path, {"tab": "overall", "slug": "ale-robotics"}), {name: value}
            if method == "get":
                response = staff.get(url, params)
            else:
                response = getattr(staff, method)(url + ("?" + "&".join(f"{k}={v}" for k, v in params.items())))
            code = (
                response.json().get("error", {}).get("code")
                if response.get("Content-Type", "").startswith("application/json")
                else None
            )
            expected = {400: "invalid_query", 404: "not_found"}
            if response.status_code not in expected or code != expected[response.status_code]:
                failures.append(f"{method.upper()} {url} {name}={value!r}: {response.status_code} {code}")
    assert failures == []


def test_a_release_filter_beyond_a_bigint_is_a_400_naming_the_parameter(world: Any, api: Any) -> None:
    response = api.get("/api/v1/runs/", {"release": BEYOND_BIGINT})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_query"
    assert error["message"].startswith("release: expected a release id")


def test_the_largest_bigint_release_filter_is_valid_and_matches_nothing(world: Any, api: Any) -> None:
    response = api.get("/api/v1/runs/", {"release": str(2**63 - 1)})
    assert response.status_code == 200
    assert response.json()["count"] == 0


def test_a_superscript_digit_offset_is_a_400_not_a_500(world: Any, api: Any) -> None:
    response = api.get("/api/v1/runs/", {"offset": "\u00b2"})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_query")


def _int_routes(patterns: list[Any], prefix: str = "") -> list[str]:
    """Every page route (outside /api/ and /admin/) with an <int:...> segment, as a regex-free template."""
    routes: list[str] = []
    for entry in patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(("api/", "admin/")):
            continue
        if isinstance(entry, URLResolver):
            routes += _int_routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and any(
            isinstance(c, IntConverter) for c in getattr(entry.pattern, "converters", {}).values()
        ):
            routes.append(route)
    return routes


def test_every_integer_page_route_answers_a_huge_id_with_a_404(world: Any, client_for: Any) -> None:
    routes = _int_routes(get_resolver().url_patterns)
    assert any(route.startswith("runs/") for route in routes)  # the walk finds the run page
    client = client_for(world.staff)
    failures = []
    for route in routes:
        for value in (BEYOND_BIGINT, HUGE):
            url = "/" + re.sub(r"<int:\w+>", value, re.sub(r"<(?:slug|str):\w+>", "ale-robotics", route))
            status = client.get(url).status_code
            if status == 405:  # a POST-only action (e.g. revoking a key): the id must not break it either
                status = client.post(url).status_code
            if status != 404:
                failures.append(f"GET {url}: {status}")
    assert failures == []


@pytest.mark.parametrize("value", ["\u00b2", BEYOND_BIGINT + "0" * 10, "0", "-3"])
def test_a_bad_board_page_number_is_a_400(world: Any, client_for: Any, value: str) -> None:
    response = client_for(None).get("/benchmarks/ale-robotics/v0.5/", {"page": value})
    assert response.status_code == 400
    assert "expected a positive whole number" in response.content.decode()


@pytest.mark.parametrize("value", ["\u00b2", BEYOND_BIGINT, "0", "51"])
def test_a_bad_chart_size_is_a_400(world: Any, client_for: Any, value: str) -> None:
    response = client_for(None).get("/benchmarks/ale-robotics/v0.5/chart.json", {"n": value})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_query")
