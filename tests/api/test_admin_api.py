from __future__ import annotations

import base64
import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard.models import Evaluator, Release, SigningKey, Task
from tests.staff import staff_grant

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo-release"


def _zip_dir(root: Path, *, extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root).as_posix())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def _key() -> str:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def test_staff_register_an_evaluator_key(world: Any, client_for: Any) -> None:
    key = _key()
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "evaluator", "owner": "robosuite+robomimic", "public_key": key},
        format="json",
    )
    assert response.status_code == 201
    row = SigningKey.objects.get(key_id=response.json()["key_id"])
    assert row.evaluator == world.evaluator and row.public_key == key and row.registered_by == world.staff


def test_registering_the_same_key_again_answers_200(world: Any, client_for: Any) -> None:
    # A validator key is scoped to the benchmark whose race runs it signs.
    payload = {"owner_kind": "validator", "owner": "val-one", "benchmark": world.benchmark.slug, "public_key": _key()}
    client = client_for(world.staff)
    assert client.post("/api/v1/admin/signing-keys/", payload, format="json").status_code == 201
    assert client.post("/api/v1/admin/signing-keys/", payload, format="json").status_code == 200
    assert SigningKey.objects.count() == 1


def test_a_malformed_key_is_refused_with_the_services_message(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "evaluator", "owner": "robosuite+robomimic", "public_key": base64.b64encode(b"short").decode()},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "signing_key_invalid",
        "message": "public key: decodes to 5 bytes; an Ed25519 public key is exactly 32 bytes",
    }


def test_an_unknown_owner_is_refused(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "validator", "owner": "ghost", "public_key": _key()},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "owner: no validator with slug 'ghost'."


def test_a_task_listed_twice_is_refused_and_no_key_is_registered(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {
            "owner_kind": "judge",
            "owner": "judge-one",
            "benchmark": world.benchmark.slug,
            "tasks": ["pick-cube@r1", "stack-blocks@r1", "pick-cube@r2"],
            "public_key": _key(),
        },
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "task_listed_twice",
        "message": "tasks: 'pick-cube' is listed twice ('r1' and 'r2'); list each task once, with the one rubric "
        "version the key is calibrated for.",
    }
    assert not SigningKey.objects.exists()


def test_a_missing_field_names_the_field(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post("/api/v1/admin/signing-keys/", {"owner_kind": "evaluator"}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["message"] == "owner: This field is required."
    assert set(error["fields"]) == {"owner", "public_key"}


def test_a_judge_key_without_its_benchmark_is_refused_benchmark_missing_and_no_key_is_registered(
    world: Any, client_for: Any
) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "judge", "owner": "judge-one", "tasks": ["pick-cube@r1"], "public_key": _key()},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "benchmark_missing",
        "message": "benchmark: a judge key is calibrated for tasks of one benchmark; give that benchmark's slug "
        "(e.g. 'ale-robotics') with the tasks as 'task-slug@rubric-version'.",
    }
    assert not SigningKey.objects.exists()


def test_a_judge_key_without_benchmark_or_tasks_is_told_the_benchmark_first(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "judge", "owner": "judge-one", "public_key": _key()},
        format="json",
    )
    assert (response.status_code, response.json()["error"]["code"]) == (400, "benchmark_missing")
    assert not SigningKey.objects.exists()


def test_an_evaluator_key_narrowed_to_tasks_without_their_benchmark_is_refused_benchmark_missing(
    world: Any, client_for: Any
) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "evaluator", "owner": "robosuite+robomimic", "tasks": ["pick-cube"], "public_key": _key()},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "benchmark_missing",
        "message": "benchmark: tasks are named by their slug on one benchmark; give that benchmark's slug "
        "(e.g. 'ale-robotics'), or leave tasks out for a key that signs every task of its simulator.",
    }
    assert not SigningKey.objects.exists()


def test_a_validator_key_without_its_benchmark_is_refused_benchmark_missing(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "validator", "owner": "val-one", "public_key": _key()},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "benchmark_missing",
        "message": "benchmark: a validator key signs race runs of one benchmark; name it",
    }
    assert not SigningKey.objects.exists()


def test_a_judge_key_with_its_benchmark_and_tasks_is_registered_for_those_rubrics(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {
            "owner_kind": "judge",
            "owner": "judge-one",
            "benchmark": world.benchmark.slug,
            "tasks": ["pick-cube@r1"],
            "public_key": _key(),
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["tasks"] == [{"task": "pick-cube", "rubric_version": "r1"}]
    row = SigningKey.objects.get()
    assert (row.owner_kind, row.judge_name, row.benchmark) == ("judge", "judge-one", None)


def test_a_judge_key_names_the_benchmark_of_its_tasks_when_registered_and_when_listed(
    world: Any, client_for: Any, django_assert_max_num_queries: Any
) -> None:
    # The benchmark is stored with the tasks, not on the key: the answer said null.
    client = client_for(world.staff)
    payload = {
        "owner_kind": "judge",
        "owner": "judge-one",
        "benchmark": world.benchmark.slug,
        "tasks": ["pick-cube@r1"],
    }
    for _ in range(3):
        assert (
            client.post("/api/v1/admin/signing-keys/", {**payload, "public_key": _key()}, format="json").json()[
                "benchmark"
            ]
            == world.benchmark.slug
        )
    listed = client.get("/api/v1/admin/signing-keys/")
    assert [key["benchmark"] for key in listed.json()["results"]] == [world.benchmark.slug] * 3
    with django_assert_max_num_queries(8) as queries:  # one query per relation, not per key
        client.get("/api/v1/admin/signing-keys/")
    assert not any("signingkeytask" in query["sql"].lower() and "IN (" not in query["sql"] for query in queries)


@pytest.mark.skipif(not DEMO.is_dir(), reason="the registry engineer's demo manifest is not in the tree")
def test_staff_sync_the_demo_manifest_from_a_zip_twice(db: Any, client_for: Any, django_user_model: Any) -> None:
    staff = staff_grant(django_user_model.objects.create_user("admin", password="x", is_staff=True))
    client = client_for(staff)
    data = _zip_dir(DEMO)
    first = client.post(
        "/api/v1/admin/releases/sync/", {"manifest": SimpleUploadedFile("m.zip", data)}, format="multipart"
    )
    assert first.status_code == 200, first.json()
    assert first.json()["status"] == "created"
    assert first.json()["release"]["benchmark"] == "ale-robotics"
    release = Release.objects.get(pk=first.json()["release"]["id"])
    assert release.release_tasks.count() == 11
    assert Evaluator.objects.exists()
    again = client.post(
        "/api/v1/admin/releases/sync/", {"manifest": SimpleUploadedFile("m.zip", data)}, format="multipart"
    )
    assert again.json()["status"] == "unchanged"


def test_a_zip_with_a_path_outside_the_manifest_is_refused(world: Any, client_for: Any) -> None:
    data = _zip_dir(DEMO, extra={"../escape.txt": b"x"}) if DEMO.is_dir() else b""
    response = client_for(world.staff).post(
        "/api/v1/admin/releases/sync/", {"manifest": SimpleUploadedFile("m.zip", data)}, format="multipart"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "manifest_invalid"
    assert error["problems"]
    assert not Path("escape.txt").exists()


def test_a_non_zip_manifest_is_refused_with_its_problem(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/releases/sync/", {"manifest": SimpleUploadedFile("m.zip", b"plain text")}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"]["problems"] == [
        {
            "file": "manifest.zip",
            "line": None,
            "field": "",
            "message": "is not a zip archive; expected a .zip of the manifest directory",
        }
    ]


def test_staff_release_an_embargoed_race(world: Any, client_for: Any) -> None:
    client = client_for(world.staff)
    response = client.post(f"/api/v1/admin/races/{world.race.pk}/release/")
    assert response.status_code == 200
    assert response.json()["status"] == "released" and response.json()["released_at"]
    world.race.refresh_from_db()
    assert world.race.status == "released"
    # A retried request answers the released state again.
    assert client.post(f"/api/v1/admin/races/{world.race.pk}/release/").status_code == 200


def test_a_race_release_with_a_body_field_is_refused_and_the_race_stays_embargoed(world: Any, client_for: Any) -> None:
    before = world.race.status
    response = client_for(world.staff).post(
        f"/api/v1/admin/races/{world.race.pk}/release/", {"dry_run": True}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "dry_run: unknown field; this request reads no body."
    world.race.refresh_from_db()
    assert world.race.status == before != "released"


def test_a_race_that_is_still_running_cannot_be_released(world: Any, client_for: Any) -> None:
    world.race.status = "running"
    world.race.save()
    response = client_for(world.staff).post(f"/api/v1/admin/races/{world.race.pk}/release/")
    assert response.status_code == 409
    world.race.refresh_from_db()
    assert world.race.status == "running"


def test_an_oversized_manifest_zip_is_a_413(world: Any, client_for: Any, monkeypatch: Any) -> None:
    from leaderboard.api import admin_views

    monkeypatch.setattr(admin_views, "MANIFEST_MAX_BYTES", 1024)
    response = client_for(world.staff).post(
        "/api/v1/admin/releases/sync/", {"manifest": SimpleUploadedFile("m.zip", b"z" * 4096)}, format="multipart"
    )
    assert response.status_code == 413
    assert response.json()["error"] == {
        "code": "too_large",
        "message": "The manifest zip is larger than the limit of 1024 bytes.",
    }


def test_a_sync_with_a_field_it_does_not_read_or_two_manifests_is_refused_and_nothing_syncs(
    world: Any, client_for: Any
) -> None:
    client = client_for(world.staff)
    data = _zip_dir(DEMO) if DEMO.is_dir() else b"PK"
    before = Release.objects.count()
    extra = client.post(
        "/api/v1/admin/releases/sync/",
        {"manifest": SimpleUploadedFile("m.zip", data), "dry_run": "1"},
        format="multipart",
    )
    assert (extra.status_code, extra.json()["error"]["message"]) == (400, "dry_run: unknown field; expected manifest.")
    twice = client.post(
        "/api/v1/admin/releases/sync/",
        {"manifest": [SimpleUploadedFile("a.zip", data), SimpleUploadedFile("b.zip", data)]},
        format="multipart",
    )
    assert (twice.status_code, twice.json()["error"]["message"]) == (400, "manifest: given 2 times; send it once.")
    assert Release.objects.count() == before


def test_a_benchmark_on_an_evaluator_key_without_tasks_is_refused_not_dropped(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "evaluator", "owner": world.evaluator.simulator, "benchmark": world.benchmark.slug,
         "public_key": _key()},
        format="json",
    )  # fmt: skip
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("benchmark: an evaluator key is scoped by its simulator")
    assert not SigningKey.objects.exists()


def test_a_judge_key_listing_its_tasks_as_a_form_repeats_the_field_and_is_registered(
    world: Any, client_for: Any
) -> None:
    slugs = list(Task.objects.filter(benchmark=world.benchmark).values_list("slug", flat=True)[:2])
    assert len(slugs) == 2
    response = client_for(world.staff).post(
        "/api/v1/admin/signing-keys/",
        {"owner_kind": "judge", "owner": "judge-one", "benchmark": world.benchmark.slug,
         "tasks": [f"{slug}@r1" for slug in slugs], "public_key": _key()},
        format="multipart",
    )  # fmt: skip
    assert response.status_code == 201, response.json()
    assert SigningKey.objects.get().task_scopes.count() == 2
