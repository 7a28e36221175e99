"""Markdown for task pages (paper.md, brief.md).

CommonMark with raw HTML disabled: a tag in a task's text is shown as text,
never interpreted, so a task author cannot inject script or style into the
site (and the CSP would refuse it anyway). Link targets are validated by
markdown-it's default ``validateLink`` (no javascript:, vbscript:, file: or
non-image data: URLs).
"""

from __future__ import annotations

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False})


def render_markdown(text: str, *, below: int = 1) -> SafeString:
    """HTML for ``text``; safe to insert because raw HTML is escaped by the renderer.

    ``below``: the level of the page heading the text sits under. The text's headings are moved
    below it (``#`` becomes ``<h{below + 1}>``, at most ``<h6>``): a paper's own ``# Title`` made a
    second and third ``<h1>`` on its task page, which breaks the outline screen readers navigate."""
    tokens = _RENDERER.parse(text or "")
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1:]) + below)}"
    return mark_safe(_RENDERER.renderer.render(tokens, _RENDERER.options, {}))  # noqa: S308 - html=False escapes every raw tag
