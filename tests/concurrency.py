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
