import pytest
from django.core.exceptions import ImproperlyConfigured

from leaderboard.site import settings as podium_settings


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


@pytest.mark.parametrize("rate", ["600/min", "5/s", "10/second", "100/hour", "1/d", "3/days"])
def test_env_rate_accepts_what_drf_understands(monkeypatch, rate):
    monkeypatch.setenv("PODIUM_RATE", rate)
    assert podium_settings.env_rate("PODIUM_RATE", "1/min") == rate


@pytest.mark.parametrize("rate", ["lots", "0/min", "10/fortnight", "10", "/min", "ten/min", "10/min/2", "-5/min"])
def test_env_rate_refuses_what_drf_would_crash_on_at_the_first_request(monkeypatch, rate):
    monkeypatch.setenv("PODIUM_RATE", rate)
    with pytest.raises(ImproperlyConfigured, match=r"PODIUM_RATE=.*expected a rate '<requests>/<period>'"):
        podium_settings.env_rate("PODIUM_RATE", "1/min")


def test_an_anonymous_api_rate_of_lots_stops_start_up_with_a_clear_message():
    import os
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parent.parent,
        env={**os.environ, "PODIUM_API_ANON_RATE": "lots"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "PODIUM_API_ANON_RATE='lots': expected a rate '<requests>/<period>'" in done.stderr


def test_beat_keeps_its_schedule_file_under_var_not_the_repository_root():
    from django.conf import settings

    assert str(settings.VAR_DIR / "celerybeat-schedule") == settings.CELERY_BEAT_SCHEDULE_FILENAME


def test_a_postgresql_connection_gives_up_on_a_silent_peer_in_seconds():
    # Read in a fresh process: the options a deployment's DATABASE_URL gets.
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json; from leaderboard.site import settings as s; print(json.dumps(s.DATABASES['default']['OPTIONS']))"
    )
    env = {**os.environ, "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/podium"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    options = json.loads(out.strip().splitlines()[-1])
    assert options["keepalives"] == 1 and options["tcp_user_timeout"] <= 15_000
    assert options["keepalives_idle"] + options["keepalives_interval"] * options["keepalives_count"] <= 15
    assert options["connect_timeout"] == 5


@pytest.mark.parametrize(
    ("name", "value", "said"),
    [
        ("REDIS_URL", "127.0.0.1:6379/15", "expected an absolute redis/rediss URL with a host"),
        ("CELERY_BROKER_URL", "redis:/nohost", "expected an absolute redis/rediss URL with a host"),
        ("SITE_URL", "podium.example.org", "expected an absolute http/https URL with a host"),
    ],
)
def test_a_url_without_its_scheme_or_host_stops_start_up_naming_the_variable(name, value, said):
    """A Redis URL without its scheme passed start-up, /readyz called the cache "not configured"
    and every cached page answered 500 (an operator's walk through docs/deploy.md)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL", "SITE_URL")}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=Path(__file__).resolve().parent.parent,
        env={**env, name: value},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert f"{name}={value!r}: {said}" in done.stderr


def test_env_redis_url_reads_a_redis_url(monkeypatch):
    monkeypatch.setenv("PODIUM_REDIS", "rediss://cache.internal:6380/1")
    assert podium_settings.env_redis_url("PODIUM_REDIS") == "rediss://cache.internal:6380/1"


@pytest.mark.parametrize(
    ("value", "options"),
    [
        ("memory://", {"others": ("memory",)}),
        ("redis+socket:///run/redis/redis.sock", {"sockets": ("redis+socket",)}),
        ("unix:///run/redis/redis.sock?db=1", {"sockets": ("unix",)}),
    ],
)
def test_env_redis_url_takes_the_other_forms_a_variable_allows(monkeypatch, value, options):
    monkeypatch.setenv("PODIUM_REDIS", value)
    assert podium_settings.env_redis_url("PODIUM_REDIS", **options) == value


def test_env_redis_url_refuses_a_socket_scheme_without_a_path(monkeypatch):
    monkeypatch.setenv("PODIUM_REDIS", "unix://")
    with pytest.raises(ImproperlyConfigured, match=r"a unix:// socket path"):
        podium_settings.env_redis_url("PODIUM_REDIS", sockets=("unix",))
