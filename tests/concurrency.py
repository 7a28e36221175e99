"""Two requests at once, made deterministic: another connection's transaction writes first
and is held open a moment while the request under test reads (finds nothing yet) and then
writes the same unique row (what a double click, two CI jobs or a retried script do)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection, transaction

on_postgresql_committing = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="two connections writing at once: PostgreSQL's row locks (SQLite locks the whole file)",
)


@contextmanager
def committed_meanwhile(write: Callable[[], Any], *, hold_seconds: float = 0.6) -> Iterator[None]:
    """Run ``write`` in another connection's transaction, committed ``hold_seconds`` after the
    body starts: the body's read does not see the row yet, its insert of the same key waits
    for the commit and then meets the row (what two simultaneous requests do)."""
    written = threading.Event()
    failure: list[BaseException] = []

    def hold() -> None:
        try:
            with transaction.atomic():
                write()
                written.set()
                time.sleep(hold_seconds)
        except BaseException as exc:  # pragma: no cover - reported by the assertion below
            failure.append(exc)
            written.set()
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert written.wait(10)
    try:
        yield
    finally:
        thread.join()
    assert not failure, failure


def second_waits_for_first(first: Callable[[], Any], second: Callable[[], Any]) -> Any:
    """Run ``first`` in a transaction on its own connection and hold it open; meanwhile run
    ``second`` in a transaction on another. Asserts that ``second`` waits (a lock it shares with
    ``first``), then commits ``first`` and returns what ``second`` returned, or the exception it
    raised (a refusal is usually the point)."""
    held, release = threading.Event(), threading.Event()
    outcome: list[Any] = []

    def run_first() -> None:
        try:
            with transaction.atomic():
                first()
                held.set()
                release.wait(10)
        finally:
            connection.close()

    def run_second() -> None:
        try:
            with transaction.atomic():
                outcome.append(second())
        except Exception as exc:  # returned to the test, which asserts on it
            outcome.append(exc)
        finally:
            connection.close()

    one = threading.Thread(target=run_first)
    one.start()
    assert held.wait(10), "the first transaction did not get going"
    two = threading.Thread(target=run_second)
    two.start()
    two.join(1.0)
    waited = two.is_alive()
    release.set()
    one.join(10)
    two.join(10)
    assert waited, "the second transaction did not wait for the first"
    return outcome[0]
