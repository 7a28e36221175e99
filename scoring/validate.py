"""Number checks shared by every scoring rule.

Each check either returns the value as a ``float`` or raises
:class:`scoring.errors.ScoringError` with a message of the form
``"<where>: <field> must be <expected>, got <value>"``.
"""

from __future__ import annotations

import math

from scoring.errors import ScoringError

__all__ = [
    "at_least",
    "fail",
    "finite",
    "non_negative",
    "non_negative_int",
    "positive",
    "positive_int",
    "unit_interval",
]


def fail(where: str, field: str, expected: str, value: object) -> ScoringError:
    """Build (not raise) the canonical error for ``field`` at ``where``."""
    return ScoringError(f"{where}: {field} must be {expected}, got {value!r}")


def _as_float(where: str, field: str, expected: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(where, field, expected, value)
    number = float(value)
    if not math.isfinite(number):
        raise fail(where, field, expected, value)
    return number


def finite(where: str, field: str, value: object) -> float:
    """Any finite real number (bools are refused)."""
    return _as_float(where, field, "a finite number", value)


def non_negative(where: str, field: str, value: object) -> float:
    """A finite number >= 0."""
    expected = "a finite number >= 0"
    number = _as_float(where, field, expected, value)
    if number < 0:
        raise fail(where, field, expected, value)
    return number


def positive(where: str, field: str, value: object) -> float:
    """A finite number > 0."""
    expected = "a finite number > 0"
    number = _as_float(where, field, expected, value)
    if number <= 0:
        raise fail(where, field, expected, value)
    return number


def at_least(where: str, field: str, value: object, minimum: float) -> float:
    """A finite number >= ``minimum``."""
    expected = f"a finite number >= {minimum:g}"
    number = _as_float(where, field, expected, value)
    if number < minimum:
        raise fail(where, field, expected, value)
    return number


def unit_interval(where: str, field: str, value: object) -> float:
    """A finite number in [0, 1]."""
    expected = "a finite number in [0, 1]"
    number = _as_float(where, field, expected, value)
    if not 0.0 <= number <= 1.0:
        raise fail(where, field, expected, value)
    return number


def non_negative_int(where: str, field: str, value: object) -> int:
    """An ``int`` >= 0 (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail(where, field, "an integer >= 0", value)
    return value


def positive_int(where: str, field: str, value: object) -> int:
    """An ``int`` >= 1 (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise fail(where, field, "an integer >= 1", value)
    return value
