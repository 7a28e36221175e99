"""Display filters for visitor pages.

Seed 000: scores are dimensionless ratios (they may exceed 1.0) and are never
rendered as percentages; pass rates are fractions of episodes and may be.
Every filter returns plain text, so Django's autoescaping still applies.
"""

from __future__ import annotations

import math
import re
from typing import Any
from urllib.parse import urlencode

from django import template

register = template.Library()

EMPTY = "—"


def _finite(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@register.filter
def ratio(value: Any, digits: int = 2) -> str:
    """A score as a ratio with two decimals: 0.83, 1.12 (never 83%)."""
    number = _finite(value)
    return EMPTY if number is None else f"{number:.{int(digits)}f}"


@register.filter
def percent(value: Any) -> str:
    """A pass rate (a fraction of episodes) as a percentage: 0.97 -> 97%."""
    number = _finite(value)
    if number is None:
        return EMPTY
    shown = f"{number * 100:.1f}".removesuffix(".0")
    return f"{shown}%"


@register.filter
def duration(seconds: Any) -> str:
    """Submitter-reported runtime: 3725 -> 1h 02m; 42 -> 42s."""
    number = _finite(seconds)
    if number is None:
        return EMPTY
    total = round(number)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


@register.filter
def tokens(value: Any) -> str:
    """Token counts compactly: 1234567 -> 1.23M, 45200 -> 45.2k."""
    number = _finite(value)
    if number is None:
        return EMPTY
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(number) >= size:
            return f"{number / size:.3g}{suffix}"
    return f"{int(number)}"


@register.filter
def measured(value: Any) -> str:
    """A raw metric value with up to four significant decimals."""
    number = _finite(value)
    if number is None:
        return EMPTY
    return f"{number:.4g}"


@register.filter
def plain(value: Any) -> str:
    """A claimed or recomputed leaf of a diff as short text (JSON-like)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@register.filter
def qs(params: dict[str, Any]) -> str:
    """A dict of querystring values, URL-encoded (the caller writes the leading '?')."""
    return urlencode([(key, value) for key, value in params.items() if value not in (None, "")])


# A sentence's first word: plain lower-case letters, not a field or file name before a colon
# ("release: ...", "manifest.json: ..."), which stays as the API wrote it.
_FIRST_WORD = re.compile(r"[a-z]+(?![\w./:-])")


@register.filter
def sentence(message: Any, field: str = "") -> str:
    """A refusal's message as a sentence on a page. The services write it for the API: lower
    case, no full stop, perhaps led by the field it is about ("url: expected an http:// or
    https:// URL"). A page shows it capitalised, with its full stop, and its code after it,
    never before; ``field``, the form field the page shows it beside, is not repeated."""
    text = str(message or "").strip()
    if field and text.startswith(f"{field}: "):
        text = text[len(field) + 2 :]
    if not text:
        return ""
    if _FIRST_WORD.match(text):
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."
