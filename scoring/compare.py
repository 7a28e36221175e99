"""Compare a bundle's claimed numbers with the server's recomputation.

:func:`compare_claims` walks two nested JSON-like values (dicts, lists,
numbers, strings, bools, None) and reports every leaf.  Numbers match within
an absolute tolerance (default 1e-6); a claimed NaN or infinity is always a
diff; bools never equal numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

from scoring.validate import non_negative

__all__ = [
    "DEFAULT_TOLERANCE",
    "DIFF",
    "MATCH",
    "MISSING",
    "UNEXPECTED",
    "FieldDiff",
    "compare_claims",
    "has_mismatch",
]

DEFAULT_TOLERANCE = 1e-6
MATCH = "match"
DIFF = "diff"
MISSING = "missing"  # recomputed has it, the claim does not
UNEXPECTED = "unexpected"  # the claim has it, the recomputation does not

_ABSENT = object()


@dataclass(frozen=True)
class FieldDiff:
    """One compared leaf (or subtree, for missing/unexpected/type diffs)."""

    path: str
    claimed: object
    recomputed: object
    status: str


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _join(path: str, key: object) -> str:
    return str(key) if not path else f"{path}.{key}"


def _leaf_status(claimed: object, recomputed: object, tol: float) -> str:
    if _is_number(claimed) and _is_number(recomputed):
        a = float(claimed)
        b = float(recomputed)
        if not math.isfinite(a) or not math.isfinite(b):
            return DIFF
        return MATCH if abs(a - b) <= tol else DIFF
    if _is_number(claimed) or _is_number(recomputed):
        return DIFF
    if type(claimed) is not type(recomputed):
        return DIFF
    return MATCH if claimed == recomputed else DIFF


def _walk(path: str, claimed: object, recomputed: object, tol: float, out: list[FieldDiff]) -> None:
    if claimed is _ABSENT:
        out.append(FieldDiff(path, None, recomputed, MISSING))
        return
    if recomputed is _ABSENT:
        out.append(FieldDiff(path, claimed, None, UNEXPECTED))
        return
    if isinstance(claimed, Mapping) and isinstance(recomputed, Mapping):
        keys = sorted({str(k) for k in claimed} | {str(k) for k in recomputed})
        c = {str(k): v for k, v in claimed.items()}
        r = {str(k): v for k, v in recomputed.items()}
        for key in keys:
            _walk(_join(path, key), c.get(key, _ABSENT), r.get(key, _ABSENT), tol, out)
        return
    if _is_sequence(claimed) and _is_sequence(recomputed):
        left: Sequence[object] = claimed
        right: Sequence[object] = recomputed
        for index in range(max(len(left), len(right))):
            _walk(
                _join(path, index),
                left[index] if index < len(left) else _ABSENT,
                right[index] if index < len(right) else _ABSENT,
                tol,
                out,
            )
        return
    out.append(FieldDiff(path, claimed, recomputed, _leaf_status(claimed, recomputed, tol)))


def _is_sequence(value: object) -> TypeGuard[Sequence[object]]:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def compare_claims(
    claimed: Mapping[str, object],
    recomputed: Mapping[str, object],
    tol: float = DEFAULT_TOLERANCE,
) -> list[FieldDiff]:
    """Every leaf of ``claimed`` vs ``recomputed``, sorted by path.

    Paths join keys (and list indices) with ".", e.g. ``tasks.lift.gap``.
    Status: "match", "diff" (value, type or non-finite claim), "missing"
    (only recomputed has the key) or "unexpected" (only the claim has it).
    """
    tolerance = non_negative("compare_claims", "tol", tol)
    out: list[FieldDiff] = []
    _walk("", claimed, recomputed, tolerance, out)
    return out


def has_mismatch(diffs: Iterable[FieldDiff]) -> bool:
    """True when any entry is not a match."""
    return any(diff.status != MATCH for diff in diffs)
