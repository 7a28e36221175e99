"""Display filters of the scorecard and race pages (plain text; autoescaping still applies)."""

from __future__ import annotations

import math
from typing import Any

from django import template

from leaderboard.disclosure import round_half_away
from leaderboard.templatetags.podium import EMPTY

register = template.Library()


def _fixed(number: float, digits: int) -> str:
    """``number`` with ``digits`` decimals, rounded as the boards round (half away from zero on its
    15 significant digits): a baseline of exactly 0.7875, stored a hair below, printed 0.787."""
    return format(round_half_away(number, digits), "f")


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
    text = _fixed(abs(number), int(digits))
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
    return _fixed(number, 3) if math.isfinite(number) else EMPTY
