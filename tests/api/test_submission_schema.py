"""A submission's JSON agrees with the schema in every state, including the first moments
after upload (kind not known yet, no run) and after a rejection: the schema used to allow
neither ``kind: ""`` nor ``run: null``, which the API answered all the time."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from submissions.models import Submission

pytestmark = pytest.mark.django_db


def _json_schema(node: Any, components: dict[str, Any]) -> Any:
    """OpenAPI 3.0 schema -> JSON Schema: resolve $ref, turn ``nullable`` into a null alternative."""
    if isinstance(node, list):
        return [_json_schema(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _json_schema(components[node["$ref"].rsplit("/", 1)[-1]], components)
    out = {k: _json_schema(v, components) for k, v in node.items() if k not in ("nullable", "readOnly", "writeOnly")}
    if node.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def _validator(client: Any, component: str) -> jsonschema.Draft7Validator:
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    return jsonschema.Draft7Validator(_json_schema(components[component], components))


def test_a_just_uploaded_submission_has_kind_null_and_run_null_and_conforms(
    world: Any, client_for: Any, media: Any, settings: Any
) -> None:
    import pyrage

    settings.PODIUM_SITE_KEYS = str(pyrage.x25519.Identity.generate())
    client = client_for(world.other)
    response = client.post(
        "/api/v1/submissions/",
        {"bundle": SimpleUploadedFile("b.age", b"not yet read"), "benchmark": "ale-robotics"},
        format="multipart",
    )
    assert response.status_code == 201
    body = response.json()
    # The row really is in that state: nothing has read the manifest yet.
    row = Submission.objects.get(pk=body["id"])
    assert (row.kind, getattr(row, "run", None)) == ("", None)
    assert (body["kind"], body["run"]) == (None, None)
    errors = [e.message for e in _validator(client, "Submission").iter_errors(body)]
    assert errors == []


def test_every_submission_of_the_world_conforms_to_the_schema(world: Any, client_for: Any) -> None:
    # Paper-gap with a run, private, on a draft, and a race run (no paper-gap run: null).
    client = client_for(world.owner)
    validator = _validator(client, "Submission")
    results = client.get("/api/v1/submissions/").json()["results"]
    assert {item["kind"] for item in results} == {"paper_gap", "race_run"}
    assert any(item["run"] is None for item in results)
    assert [e.message for item in results for e in validator.iter_errors(item)] == []


def test_the_schema_of_kind_and_run_says_they_may_be_null(world: Any, client_for: Any) -> None:
    schema = client_for(None).get("/api/v1/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    properties = components["Submission"]["properties"]
    assert properties["kind"]["nullable"] is True
    kinds = _json_schema(properties["kind"], components)["anyOf"][0]["allOf"][0]["enum"]
    assert "paper_gap" in kinds
    assert "" not in kinds
    assert properties["run"] == {**properties["run"], "type": "integer", "nullable": True}


def test_run_detail_conforms_to_the_schema_with_withheld_fields(world: Any, client_for: Any) -> None:
    from leaderboard.models import TaskResult

    # An unsigned result on the withheld-anchor task: its scores and the aggregates are null.
    TaskResult.objects.filter(run=world.public_run, release_task__anchor_published=False).update(signature="unsigned")
    client = client_for(world.other)
    body = client.get(f"/api/v1/runs/{world.public_run.pk}/").json()
    assert body["overall"] is None and "overall" in body["withheld"]
    errors = [e.message for e in _validator(client, "RunDetail").iter_errors(body)]
    assert errors == []


@pytest.mark.parametrize(
    ("path", "field"),
    [("/api/v1/submissions/", "bundle"), ("/api/v1/admin/releases/sync/", "manifest")],
)
def test_a_file_field_is_a_binary_upload_in_the_schema_not_a_url(client, path, field) -> None:
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    body = schema["paths"][path]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    name = body["$ref"].rsplit("/", 1)[-1]
    shown = schema["components"]["schemas"][name]["properties"][field]
    assert (shown["type"], shown["format"]) == ("string", "binary")
