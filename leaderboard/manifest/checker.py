"""Typed field readers for the parsers: each records a Problem (file, line, field) instead of raising (pure).

A reader returns the value when it has the expected shape, else None (after
recording why), so a parser carries on and reports every problem in one pass.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import sys
from collections.abc import Callable, Collection, Mapping
from typing import Any

from leaderboard.manifest.loader import Lines, field_path
from leaderboard.manifest.types import Problem

__all__ = [
    "ANCHOR_EXPECTED",
    "CAP_EXPECTED",
    "METRIC",
    "SIMULATOR",
    "Checker",
    "cap_ok",
    "describe",
    "is_finite_number",
    "positive",
]

# Field shapes shared by the release and task parsers.
SIMULATOR = re.compile(r"^[a-z0-9][a-z0-9_.+-]{0,99}$")
METRIC = re.compile(r"^[a-z][a-z0-9_]{0,99}$")
ANCHOR_EXPECTED = "a number > 0, or null to withhold the anchor entirely"
CAP_EXPECTED = "a number >= 1 (a cap lets beating the paper score above 1.0)"


def is_finite_number(value: Any) -> bool:
    """A YAML number a double holds: not a bool, not NaN or infinite, and not an integer beyond
    a double's range (YAML reads 400 digits as an int; float() of it raised OverflowError, a 500)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, int):
        return abs(value) <= sys.float_info.max
    return math.isfinite(value)


class Checker:
    """Typed field readers that record a Problem (with line) instead of raising."""

    def __init__(self, file: str, lines: Lines, problems: list[Problem]) -> None:
        self.file = file
        self.lines = lines
        self.problems = problems

    def problem(self, path: tuple[Any, ...], message: str) -> None:
        self.problems.append(Problem(self.file, self.lines.line(path), field_path(path), message))

    def mapping(self, value: Any, path: tuple[Any, ...], what: str = "a mapping") -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path, f"expected {what}, got {describe(value)}")
            return None
        return value

    def known_keys(self, data: Mapping[Any, Any], allowed: Collection[str], path: tuple[Any, ...]) -> None:
        for key in data:
            if key not in allowed:
                self.problem((*path, key), f"unknown field; expected one of {', '.join(sorted(allowed))}")

    def required(self, data: Mapping[str, Any], key: str, path: tuple[Any, ...]) -> bool:
        if key not in data:
            self.problem(path, f"missing required field {key!r}")
            return False
        return True

    def string(
        self,
        data: Mapping[str, Any],
        key: str,
        path: tuple[Any, ...],
        *,
        required: bool = True,
        pattern: re.Pattern[str] | None = None,
        pattern_text: str = "",
        max_len: int = 200,
        default: str = "",
    ) -> str | None:
        if key not in data or (not required and data[key] is None):
            if required:
                self.problem(path, f"missing required field {key!r}")
                return None
            return default
        value = data[key]
        where = (*path, key)
        if isinstance(value, bool) or not isinstance(value, str):
            hint = " (quote it)" if isinstance(value, int | float | dt.date) and not isinstance(value, bool) else ""
            self.problem(where, f"expected a string{hint}, got {describe(value)}")
            return None
        value = value.strip()
        if required and not value:
            self.problem(where, "expected a non-empty string")
            return None
        if pattern is not None and not pattern.match(value):
            self.problem(where, f"expected {pattern_text}, got {value!r}")
            return None
        if len(value) > max_len:
            self.problem(where, f"expected at most {max_len} characters, got {len(value)}")
            return None
        return value

    def choice(self, data: Mapping[str, Any], key: str, path: tuple[Any, ...], choices: tuple[str, ...]) -> str | None:
        if key not in data:
            self.problem(path, f"missing required field {key!r} (one of {', '.join(choices)})")
            return None
        value = data[key]
        if not isinstance(value, str) or value not in choices:
            self.problem((*path, key), f"expected one of {', '.join(choices)}, got {describe(value)}")
            return None
        return value

    def boolean(self, data: Mapping[str, Any], key: str, path: tuple[Any, ...], *, default: bool | None) -> bool | None:
        if key not in data:
            if default is None:
                self.problem(path, f"missing required field {key!r} (true or false)")
            return default
        value = data[key]
        if not isinstance(value, bool):
            self.problem((*path, key), f"expected true or false, got {describe(value)}")
            return None
        return value

    def number(
        self,
        data: Mapping[str, Any],
        key: str,
        path: tuple[Any, ...],
        *,
        expected: str,
        accept: Callable[[float], bool],
        default: float | None = None,
        echo: bool = True,
    ) -> float | None:
        """A finite number satisfying ``accept``; ``echo=False`` keeps the value out of the message."""
        if key not in data:
            return default
        value = data[key]
        where = (*path, key)
        ok = is_finite_number(value)
        if not ok or not accept(float(value)):
            got = f", got {describe(value)}" if echo or not ok else ""
            self.problem(where, f"expected {expected}{got}")
            return None
        return float(value)

    def integer(
        self, data: Mapping[str, Any], key: str, path: tuple[Any, ...], *, minimum: int, required: bool = True
    ) -> int | None:
        if key not in data:
            if required:
                self.problem(path, f"missing required field {key!r} (an integer >= {minimum})")
            return None
        value = data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.problem((*path, key), f"expected an integer >= {minimum}, got {describe(value)}")
            return None
        return value

    def sequence(self, data: Mapping[str, Any], key: str, path: tuple[Any, ...], *, required: bool) -> list[Any] | None:
        if key not in data:
            if required:
                self.problem(path, f"missing required field {key!r} (a list)")
            return None
        value = data[key]
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem((*path, key), f"expected a list, got {describe(value)}")
            return None
        return value


def describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        shown = value if len(value) <= 60 else value[:57] + "..."
        return repr(shown)
    return repr(value)


def positive(value: float) -> bool:
    return value > 0


def cap_ok(value: float) -> bool:
    return value >= 1.0
