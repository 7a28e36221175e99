import pytest
from django.core.exceptions import ImproperlyConfigured

from leaderboard import settings as podium_settings


def test_env_bool_fails_loudly_on_a_value_that_is_not_a_boolean(monkeypatch):
    monkeypatch.setenv("PODIUM_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match=r"PODIUM_FLAG='maybe': expected one of 1/0"):
        podium_settings.env_bool("PODIUM_FLAG", False)


def test_env_int_fails_loudly_below_its_minimum(monkeypatch):
    monkeypatch.setenv("PODIUM_N", "0")
    with pytest.raises(ImproperlyConfigured, match=r"expected a whole number >= 1"):
        podium_settings.env_int("PODIUM_N", 5, minimum=1)


def test_env_int_reads_a_valid_value(monkeypatch):
    monkeypatch.setenv("PODIUM_N", "7")
    assert podium_settings.env_int("PODIUM_N", 5, minimum=1) == 7


def test_every_response_carries_a_content_security_policy_without_unsafe_inline(client, db):
    response = client.get("/")
    assert response.status_code == 200
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
