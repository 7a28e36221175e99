"""Redis down is a cache miss (leaderboard.cache.FailSoftRedisCache), never an error."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest
import redis

from leaderboard.cache import FailSoftRedisCache


@pytest.fixture
def dead_cache():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    FailSoftRedisCache._down_until = 0.0
    cache = FailSoftRedisCache(f"redis://127.0.0.1:{port}/0", {"OPTIONS": {"socket_connect_timeout": 1}})
    yield cache
    FailSoftRedisCache._down_until = 0.0


def test_reads_answer_the_default_and_writes_are_dropped_while_redis_is_down(dead_cache):
    assert dead_cache.get("board", "miss") == "miss"
    assert dead_cache.get_many(["a", "b"]) == {}
    assert dead_cache.add("counter", 0) is False
    assert dead_cache.set("board", "html") is None
    assert dead_cache.delete("board") is False
    assert dead_cache.has_key("board") is False


def test_a_counter_cannot_count_while_redis_is_down_and_says_so_as_a_missing_key(dead_cache):
    with pytest.raises(ValueError, match="cache unavailable"):
        dead_cache.incr("counter")
    with pytest.raises(ValueError):
        dead_cache.decr("counter")


def test_after_one_failure_the_process_stops_trying_redis_for_a_while(dead_cache, monkeypatch):
    dead_cache.get("first")
    assert FailSoftRedisCache._down_until > time.monotonic()
    calls = []
    monkeypatch.setattr(
        "django.core.cache.backends.redis.RedisCache.get", lambda *args, **kwargs: calls.append(args) or "hit"
    )
    assert dead_cache.get("second", "miss") == "miss"
    assert calls == []  # answered without a connection attempt


def test_api_key_failures_are_not_counted_while_redis_is_down_so_the_throttle_fails_open(dead_cache, monkeypatch):
    from submissions import api_keys

    monkeypatch.setattr(api_keys, "cache", dead_cache)
    assert api_keys.failed_attempts("203.0.113.9") == 0
    assert api_keys.record_failed_attempt("203.0.113.9") == 1
    assert api_keys.failed_attempts("203.0.113.9") == 0


@pytest.fixture
def full_redis():
    """A real Redis that refuses every write (maxmemory 1 byte, noeviction), as a Redis at its
    memory limit does; it answers PING and reads."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("needs the redis-server binary")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--maxmemory", "1", "--maxmemory-policy", "noeviction"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.exceptions.ConnectionError:
            if time.monotonic() > deadline:
                server.kill()
                raise
            time.sleep(0.05)
    FailSoftRedisCache._down_until = 0.0
    yield url
    FailSoftRedisCache._down_until = 0.0
    server.kill()
    server.wait()


def test_a_redis_that_refuses_writes_is_a_miss_not_an_error(full_redis):
    cache = FailSoftRedisCache(full_redis, {})
    assert cache.set("board", "html") is None  # OOM: dropped, not raised
    assert cache.add("counter", 0) is False
    with pytest.raises(ValueError, match="cache unavailable"):
        cache.incr("counter")


def test_a_redis_that_refuses_writes_leaves_pages_and_the_api_serving(full_redis, client, settings, db):
    # Django's own setting_changed handler rebuilds the cache handlers for the new CACHES.
    settings.CACHES = {"default": {"BACKEND": "leaderboard.cache.FailSoftRedisCache", "LOCATION": full_redis}}
    assert client.get("/").status_code == 200
    assert client.get("/api/v1/benchmarks/").status_code == 200


def test_readyz_fails_the_cache_when_redis_refuses_writes(full_redis, client, settings):
    settings.REDIS_URL = full_redis
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["cache"] == "unavailable"
