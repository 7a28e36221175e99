"""Schemathesis against the generated OpenAPI schema, in-process through the WSGI app.

Runs in the normal suite (no marker): every operation gets a bounded number of
generated requests, authenticated as staff so the admin and submitter paths are
exercised too. No response may be a 5xx or disagree with the schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from submissions.api_keys import api_key_create

# Conformance of every response, and refusal of schema-violating input. Not
# positive_data_acceptance: a schema-valid upload of random bytes is rightly refused
# as "not a bundle", which the schema cannot express.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]

MAX_EXAMPLES = 25


# Loading the schema needs no database: the schema view reads only code.
schema = schemathesis.openapi.from_wsgi("/api/v1/schema/?format=json", get_wsgi_application())


@pytest.fixture
def in_process_wsgi() -> Iterator[None]:
    """Keep the test's database connection open across WSGI requests.

    The WSGI handler closes "old" connections at the start and end of every request;
    inside the test's transaction that would close it (PostgreSQL). Django's own test
    client disconnects the same handlers.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def staff_key(world: Any, media: Any, settings: Any, in_process_wsgi: None) -> str:
    import pyrage

    settings.PODIUM_SITE_KEYS = str(pyrage.x25519.Identity.generate())
    # Rate limits are tested elsewhere; here they would only turn generated requests into 429s.
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    world.benchmark.daily_submission_limit = 10_000
    world.benchmark.save()
    return api_key_create(user=world.staff, name="schemathesis").plaintext


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_the_api_conforms_to_its_schema(case: Any, staff_key: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Api-Key {staff_key}"}, checks=CHECKS)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_the_api_conforms_to_its_schema_for_anonymous_visitors(case: Any, staff_key: str) -> None:
    # Same world, no credentials: the 401/403 answers must conform too.
    case.call_and_validate(checks=CHECKS)
