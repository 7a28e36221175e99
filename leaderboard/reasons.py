"""Public reasons staff give for a write visitors see (hiding a run, excluding race runs): one
rule for what such a reason must be, whichever service takes it."""

from __future__ import annotations

from collections.abc import Callable

# Longest public reason: a sentence or two shown on the run's page (the columns are this wide).
PUBLIC_REASON_MAX_CHARS = 500


def public_reason(reason: str | None, *, says: str, error: Callable[[str, str], Exception]) -> str:
    """``reason`` stripped, or raise ``error(code, message)``: ``reason_missing`` when it is blank
    (the message asks to say ``says``), ``reason_too_long`` past PUBLIC_REASON_MAX_CHARS."""
    reason = (reason or "").strip()
    if not reason:
        raise error("reason_missing", f"reason: say publicly {says}")
    if len(reason) > PUBLIC_REASON_MAX_CHARS:
        raise error("reason_too_long", f"reason: at most {PUBLIC_REASON_MAX_CHARS} characters, got {len(reason)}")
    return reason
