"""API clients for the tests: anonymous, or carrying a fresh API key of a user (the header a
harness sends)."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from submissions.api_keys import api_key_create


def api_for(user: Any = None) -> APIClient:
    """An APIClient; with ``user``, authenticated by a new API key of theirs."""
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Api-Key {api_key_create(user=user, name='k').plaintext}")
    return client
