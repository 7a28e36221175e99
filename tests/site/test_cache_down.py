"""Redis down is a cache miss (leaderboard.cache.FailSoftRedisCache), never an error."""

from __future__ import annotations

import socket
import time

import pytest

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
