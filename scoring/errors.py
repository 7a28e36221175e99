"""The single error type the scoring package raises for bad input."""

from __future__ import annotations

__all__ = ["ScoringError"]


class ScoringError(ValueError):
    """A number or field that cannot be scored.

    Raised instead of propagating NaN, infinities, out-of-range rates or
    rewards, bad anchors, unknown enum values and inconsistent inputs.  The
    message always names *where* (task slug, level, run, ...), *what* (the
    field) and what was expected, e.g.::

        task 'lift': paper_value must be a finite number > 0, got 0.0
    """
