"""Handing work to a worker once the writes that call for it commit.

The one rule for every follow-up enqueue (a verdict's notifications and intervals, a rescore's
computation): the writes are committed whatever the broker says, so a failed publish is logged
and left to the beat sweeper, which finds the work by its rows (a pending delivery, a run with
no interval, a rescore still proposing). It never reaches the caller, who would otherwise be
told, after its commit, that nothing changed.

Not Django's ``on_commit(..., robust=True)``: it logs a failure by the callback's
``__qualname__``, which a ``functools.partial`` lacks, so the failure's own logging raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

logger = logging.getLogger(__name__)


def enqueue_on_commit(send: Callable[[], Any], *, what: str) -> None:
    """Call ``send`` (a task's ``delay``) after the current transaction commits (at once outside
    one); a failure is logged naming ``what``, never raised."""

    def enqueue() -> None:
        try:
            send()
        except Exception:
            logger.exception("could not enqueue %s; the sweeper will", what)

    transaction.on_commit(enqueue)
