"""Fixtures of the submissions area: a site keyring, a private media root, users."""

from __future__ import annotations

import pyrage
import pytest
from django.contrib.auth import get_user_model


@pytest.fixture
def site_identity(settings) -> pyrage.x25519.Identity:
    """A fresh site key, given to the process (and any worker) through PODIUM_SITE_KEYS."""
    identity = pyrage.x25519.Identity.generate()
    settings.PODIUM_SITE_KEYS = str(identity)
    return identity


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def make_user(db):
    def make(username: str):
        return get_user_model().objects.create_user(username=username, password="a-long-test-password-123")

    return make


@pytest.fixture
def owner(make_user):
    return make_user("owner")


@pytest.fixture
def stranger(make_user):
    return make_user("stranger")
