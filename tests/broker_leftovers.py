"""Remove what test runs leave in the Celery broker (Redis): their queues, bindings and
unacknowledged messages.

Kombu's Redis transport keeps a delivered-but-unacknowledged message (acks_late) in the
``unacked`` hash (and ``unacked_index``) until it is acknowledged; a worker killed with
kill -9 (the fault tests do that on purpose) never acknowledges, so the message stays
there and is restored into its queue by whichever worker next starts on that Redis
database, long after the test database it refers to is gone. This removes, for the
queues whose names start with the given prefix: the queue lists (with their priority
sub-lists), the ``_kombu.binding.*`` sets and their unacked messages.

Used by tests/conftest.py at the end of a session (its own queue only) and by .ci/run
(every ``podium-test-`` queue)::

    python -m tests.broker_leftovers redis://127.0.0.1:6379/0 [prefix]
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import redis

UNACKED = "unacked"
UNACKED_INDEX = "unacked_index"
# Kombu's binding sets: "_kombu.binding.<exchange>" and, in newer kombu, "_kombu.binding_permanent.<exchange>".
BINDING_PREFIXES = ("_kombu.binding.", "_kombu.binding_permanent.")
DEFAULT_PREFIX = "podium-test-"


@dataclass(frozen=True)
class Cleaned:
    keys: int
    unacked: int
    unacked_left: int  # unacknowledged messages of other queues, left alone


def _routes(raw: bytes) -> tuple[str, str]:
    """(exchange, routing key) of an ``unacked`` entry; ("", "") when unreadable."""
    try:
        _payload, exchange, routing_key = json.loads(raw)
    except (ValueError, TypeError):
        return "", ""
    return str(exchange or ""), str(routing_key or "")


def clean(url: str, prefix: str = DEFAULT_PREFIX) -> Cleaned:
    if not prefix:
        raise ValueError("prefix: expected a non-empty queue-name prefix")
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=500))
        for binding in BINDING_PREFIXES:
            keys += client.scan_iter(match=f"{binding}{prefix}*", count=500)
        if keys:
            client.delete(*keys)
        removed = 0
        left = 0
        for tag, raw in client.hscan_iter(UNACKED, count=500):
            exchange, routing_key = _routes(raw)
            if exchange.startswith(prefix) or routing_key.startswith(prefix):
                client.pipeline().hdel(UNACKED, tag).zrem(UNACKED_INDEX, tag).execute()
                removed += 1
            else:
                left += 1
        return Cleaned(keys=len(keys), unacked=removed, unacked_left=left)
    finally:
        client.close()


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print("usage: python -m tests.broker_leftovers REDIS_URL [QUEUE_PREFIX]", file=sys.stderr)
        return 2
    prefix = argv[1] if len(argv) == 2 else DEFAULT_PREFIX
    result = clean(argv[0], prefix)
    print(
        f"broker: removed {result.keys} key(s) and {result.unacked} unacknowledged message(s) of "
        f"{prefix}* queues; {result.unacked_left} unacknowledged message(s) of other queues remain"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
