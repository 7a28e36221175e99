"""What test runs leave in the broker is removed: queues, bindings, unacknowledged messages
(marked services: against the configured Redis broker, under a queue prefix of its own)."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from tests.broker_leftovers import clean, main


@pytest.fixture
def broker():
    import redis

    client = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
    yield client
    client.close()


def leave_behind(broker, queue: str, tag: str) -> None:
    """What a worker killed mid-task leaves: its queue, binding and an unacknowledged delivery."""
    broker.rpush(queue, b"{}")
    broker.rpush(f"{queue}\x06\x163", b"{}")
    broker.sadd(f"_kombu.binding.{queue}", f"{queue}\x06\x16\x06\x16{queue}")
    broker.sadd(f"_kombu.binding_permanent.{queue}", f"{queue}\x06\x16\x06\x16{queue}")
    broker.hset("unacked", tag, json.dumps([{"body": "..."}, queue, queue]))
    broker.zadd("unacked_index", {tag: 1.0})


@pytest.mark.services
def test_clean_removes_the_prefixed_queues_and_their_unacked_messages_and_leaves_other_queues_alone(broker, capsys):
    prefix = f"podium-test-leftover-{uuid.uuid4().hex[:8]}-"
    other = f"other-{uuid.uuid4().hex[:8]}"
    mine_tag, other_tag = f"{prefix}tag", f"{other}-tag"
    leave_behind(broker, f"{prefix}q", mine_tag)
    leave_behind(broker, other, other_tag)
    try:
        assert main([os.environ["CELERY_BROKER_URL"], prefix]) == 0
        assert "removed 4 key(s) and 1 unacknowledged message(s)" in capsys.readouterr().out
        assert not broker.exists(
            f"{prefix}q", f"{prefix}q\x06\x163", f"_kombu.binding.{prefix}q", f"_kombu.binding_permanent.{prefix}q"
        )
        assert not broker.hexists("unacked", mine_tag)
        assert broker.zscore("unacked_index", mine_tag) is None
        assert broker.hexists("unacked", other_tag) and broker.exists(other)
    finally:
        broker.delete(other, f"{other}\x06\x163", f"_kombu.binding.{other}", f"_kombu.binding_permanent.{other}")
        broker.hdel("unacked", other_tag, mine_tag)
        broker.zrem("unacked_index", other_tag, mine_tag)


def test_clean_refuses_an_empty_prefix():
    with pytest.raises(ValueError, match="prefix"):
        clean("redis://127.0.0.1:1/0", "")
