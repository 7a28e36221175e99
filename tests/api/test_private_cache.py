"""A response to a credentialed request is stored by no cache (leaderboard.security's
CredentialedNoStoreMiddleware): a private run's pages, the account's submissions and the API's
answers to a key held only their viewer's data and carried no Cache-Control at all."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from submissions.api_keys import api_key_create

pytestmark = pytest.mark.django_db


def _never_stored(response: Any) -> bool:
    directives = {part.strip() for part in response.get("Cache-Control", "").split(",")}
    return {"no-store", "private"} <= directives


@pytest.mark.parametrize(
    "path",
    ["/runs/{run}/", "/runs/{run}/results.json", "/runs/{run}/results.csv", "/submissions/", "/submissions/{sub}/"],
)
def test_a_private_runs_pages_seen_by_its_submitter_are_never_stored(world: Any, path: str) -> None:
    client = Client()
    client.force_login(world.owner)
    run = world.private_run
    response = client.get(path.format(run=run.pk, sub=run.submission.pk))
    assert response.status_code == 200
    assert _never_stored(response), response.get("Cache-Control")


def test_a_private_run_read_with_an_api_key_is_never_stored(world: Any) -> None:
    key = api_key_create(user=world.owner, name="reader").plaintext
    response = Client().get(f"/api/v1/runs/{world.private_run.pk}/", HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert response.status_code == 200
    assert _never_stored(response), response.get("Cache-Control")


def test_an_anonymous_visitors_public_page_keeps_its_caching(world: Any) -> None:
    response = Client().get(f"/runs/{world.public_run.pk}/")
    assert response.status_code == 200
    assert "no-store" not in response.get("Cache-Control", "")


def test_a_cache_control_a_view_chose_is_kept(world: Any) -> None:
    # The status JSON says no-store itself; the middleware adds nothing beside it.
    client = Client()
    client.force_login(world.owner)
    response = client.get(f"/submissions/{world.private_run.submission.pk}/status.json")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
