"""A table's visible caption sits above its sideways-scrolling box, not inside it: a <caption>
scrolls away with a wide table on a phone (visual review). A caption only screen readers get
(.visually-hidden) stays in its table; the one above names the table through aria-labelledby."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

TEMPLATES = Path(settings.BASE_DIR) / "templates"
SCROLL_BOX = re.compile(r'<div class="(?:table-scroll|chart-table__scroll)"')
CAPTION_ABOVE = re.compile(r'<p class="table-caption" id="([^"]+)">')


def templates() -> dict[str, str]:
    return {str(path.relative_to(TEMPLATES)): path.read_text() for path in sorted(TEMPLATES.rglob("*.html"))}


def visible_captions_in_scroll_boxes(text: str) -> list[str]:
    found = []
    for box in SCROLL_BOX.finditer(text):
        inside = text[box.end() : text.find("</table>", box.end())]
        found += [tag for tag in re.findall(r"<caption\b[^>]*>", inside) if "visually-hidden" not in tag]
    return found


def test_no_template_puts_a_visible_caption_inside_a_scrolling_box() -> None:
    offenders = {name: found for name, text in templates().items() if (found := visible_captions_in_scroll_boxes(text))}
    assert offenders == {}


def test_every_caption_above_a_table_names_the_table_that_follows_it() -> None:
    checked, unnamed = [], []
    for name, text in templates().items():
        for caption in CAPTION_ABOVE.finditer(text):
            checked.append(f"{name}: {caption.group(1)}")
            table = re.search(r"<table\b[^>]*>", text[caption.end() :])
            if table is None or f'aria-labelledby="{caption.group(1)}"' not in table.group():
                unnamed.append(f"{name}: {caption.group(1)}")
    assert unnamed == []
    assert "leaderboard/board.html: board-caption" in checked
