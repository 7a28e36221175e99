"""Every JSON body of the API is read by one strict parser (submissions.api.parsers): a body
that parses but cannot be stored or answered is a 400 with a specific code, never a 500.
Before it, a body nested a few thousand levels deep was a RecursionError (a 500 on every JSON
endpoint), and a lone surrogate escape crashed the declaration form's save and every error
message that quoted the value. The walk finds the JSON endpoints in the OpenAPI schema, so
an endpoint added later is covered without touching this file."""

from __future__ import annotations

import json
from typing import Any

import pytest

from leaderboard.models import AgentVersionMeta
from submissions.models import SubmissionChallenge

pytestmark = pytest.mark.django_db

NESTED = "[" * 5000 + "]" * 5000
# Raw JSON text: each is what a client can send, and what Python's json reads without complaint.
HOSTILE = {
    "nested": (NESTED, "malformed_request"),
    "lone surrogate": ('"\\ud800"', "invalid_text"),
    "NUL": ('"a\\u0000b"', "invalid_text"),
    "NUL in a key": ('{"a\\u0000b": 1}', "invalid_text"),
    "overflowing number": ("1e400", "non_finite_number"),
}


def _json_operations(schema: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(method, path template, body fields) of every operation that takes a JSON body."""
    found = []
    components = schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if content is None:
                continue
            body = components.get(content.get("schema", {}).get("$ref", "").split("/")[-1], {})
            found.append((method, path, sorted(body.get("properties", {})) or ["value"]))
    return found


def _fill(path: str, world: Any) -> str:
    version = world.public_run.agent_version
    values = {
        "run_id": str(world.public_run.pk),
        "race_id": str(world.race.pk),
        "release_id": str(world.release.pk),
        "agent": version.agent.slug,
        "version": version.version,
        "card_id": "1",
        "level_id": "L1",
    }
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    return path


@pytest.mark.parametrize("who", ["owner", "staff"])
def test_every_json_endpoint_refuses_a_hostile_value_with_its_specific_code(world, client_for, who) -> None:
    client = client_for(getattr(world, who))
    operations = _json_operations(client_for(world.staff).get("/api/v1/schema/", {"format": "json"}).json())
    assert any(path == "/api/v1/challenges/" for _, path, _ in operations)  # the walk finds the JSON bodies
    failures = []
    for method, template, fields in operations:
        path = _fill(template, world)
        for field in fields:
            for name, (raw, code) in HOSTILE.items():
                body = "{" + json.dumps(field) + ": " + raw + "}"
                response = getattr(client, method)(path, data=body, content_type="application/json")
                answer = response.json().get("error", {}).get("code")
                # An endpoint may refuse before it reads the body (not the owner, no such card): fine.
                if response.status_code >= 500 or (response.status_code == 400 and answer != code):
                    failures.append(f"{method.upper()} {path} {field}={name}: {response.status_code} {answer}")
    assert failures == []


def test_a_body_nested_thousands_deep_is_malformed_request_and_writes_nothing(world, client_for) -> None:
    body = '{"benchmark": ' + NESTED + "}"
    response = client_for(world.owner).post("/api/v1/challenges/", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "malformed_request",
        "message": "JSON parse error - the body is nested too deeply to read; no field of this API nests more "
        "than a few levels",
    }
    assert not SubmissionChallenge.objects.exists()


def test_a_key_sent_twice_in_a_json_body_is_refused_not_read_as_the_last(world, client_for) -> None:
    body = '{"benchmark": "ale-robotics", "benchmark": "other", "release": "v0.5"}'
    response = client_for(world.owner).post("/api/v1/challenges/", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "malformed_request",
        "message": "JSON parse error - the key 'benchmark' appears twice in one object; send each field once",
    }
    assert not SubmissionChallenge.objects.exists()


def test_a_lone_surrogate_in_a_declaration_is_invalid_text_naming_the_field(world, client_for) -> None:
    version = world.public_run.agent_version
    response = client_for(world.owner).put(
        f"/api/v1/agents/{version.agent.slug}/versions/{version.version}/metadata/",
        data='{"organisation": "Lab \\ud800"}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_text",
        "message": "organisation: holds a \\u escape of a lone UTF-16 surrogate (U+D800..U+DFFF), which is not "
        "a character; write the character itself or a valid surrogate pair",
    }
    assert not AgentVersionMeta.objects.exists()


def test_a_nul_in_a_nested_key_is_invalid_text_naming_its_path(world, client_for) -> None:
    response = client_for(world.owner).post(
        "/api/v1/challenges/",
        data='{"benchmark": "ale-robotics", "extra": {"ok": 1, "a\\u0000b": 2}}',
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid_text",
        "message": "extra (a key): holds a \\u0000 escape: the NUL character (U+0000), which no text field can "
        "hold; leave it out",
    }
    assert not SubmissionChallenge.objects.exists()


def test_a_number_that_overflows_a_double_is_non_finite_number(world, client_for) -> None:
    response = client_for(world.owner).post(
        "/api/v1/challenges/", data='{"race": [1, 1e400]}', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "non_finite_number",
        "message": "race[1]: is not a finite number (it overflows a double); JSON numbers must be finite",
    }
