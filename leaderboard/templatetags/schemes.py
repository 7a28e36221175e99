"""Display filters of the scorecard and race pages (plain text; autoescaping still applies)."""

from __future__ import annotations

import math
from typing import Any

from django import template

from leaderboard.templatetags.podium import EMPTY

register = template.Library()


@register.filter
def signed(value: Any, digits: int = 3) -> str:
    """A vs-Field delta or Overall with its sign: +0.042, 0.000, or a minus sign (U+2212) before negatives."""
    if value is None or isinstance(value, bool):
        return EMPTY
    try:
        number = float(value)
    except (TypeError, ValueError):
        return EMPTY
    if not math.isfinite(number):
        return EMPTY
    text = f"{abs(number):.{int(digits)}f}"
    if float(text) == 0:
        return text
    return f"+{text}" if number > 0 else f"\u2212{text}"


@register.filter
def score3(value: Any) -> str:
    """A reward or raw race score in [0, 1] with three decimals."""
    if value is None or isinstance(value, bool):
        return EMPTY
    try:
        number = float(value)
    except (TypeError, ValueError):
        return EMPTY
    return f"{number:.3f}" if math.isfinite(number) else EMPTY
