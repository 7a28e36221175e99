"""SVG badges an agent's README can embed: its rank and score on a release.

Built as a string with every text value XML-escaped; the width is estimated
from the character count (Verdana-ish 11px metrics), like shields.io badges.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

_CHAR_WIDTH = 7
_PADDING = 10


def _width(text: str) -> int:
    return len(text) * _CHAR_WIDTH + 2 * _PADDING


def badge_svg(*, label: str, value: str, ok: bool = True) -> str:
    """A two-part badge: ``label`` on grey, ``value`` on green (ranked) or grey (not ranked)."""
    left, right = _width(label), _width(value)
    total = left + right
    colour = "#1a7f37" if ok else "#6e7781"
    label_x, value_x = left / 2, left + right / 2
    title = escape(f"{label}: {value}")
    label_text, value_text = escape(label), escape(value)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        f'<rect width="{left}" height="20" rx="3" fill="#444d56"/>'
        f'<rect x="{left}" width="{right}" height="20" rx="3" fill="{colour}"/>'
        f'<rect x="{left}" width="4" height="20" fill="{colour}"/>'
        f'<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11" text-anchor="middle">'
        f'<text x="{label_x:g}" y="14">{label_text}</text>'
        f'<text x="{value_x:g}" y="14">{value_text}</text>'
        f"</g></svg>"
    )
