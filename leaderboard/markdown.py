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


def render_markdown(text: str) -> SafeString:
    """HTML for ``text``; safe to insert because raw HTML is escaped by the renderer."""
    return mark_safe(_RENDERER.render(text or ""))  # noqa: S308 - html=False escapes every raw tag
