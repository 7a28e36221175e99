"""The YAML line loader: YAML text -> plain data plus the line of every field (pure: PyYAML only).

Safe loading only (yaml.SafeLoader); the composed node tree is kept so every
problem can name its line, and duplicate keys (which PyYAML silently lets the
last one win) are reported rather than resolved. So is a string no database column can
store: a double-quoted ``"\\0"`` (NUL, which PostgreSQL refuses in text and jsonb) or a
lone surrogate escape (``"\\ud800"``, which cannot be encoded to UTF-8): either failed the
sync's write or its hash, a 500 instead of a named problem.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from leaderboard.manifest.types import Problem

__all__ = ["Lines", "field_path", "parse_yaml", "unstorable"]


def field_path(path: tuple[Any, ...]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class Lines:
    """Looks up the line of a field path in a composed YAML node tree."""

    def __init__(self, root: yaml.Node | None) -> None:
        self.root = root

    def line(self, path: tuple[Any, ...]) -> int | None:
        """The line of the deepest node on ``path`` (a mapping field's key line, a list item's own line)."""
        node = self.root
        if node is None:
            return None
        line = node.start_mark.line
        for part in path:
            child = None
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if isinstance(key, yaml.ScalarNode) and key.value == part:
                        child, line = value, key.start_mark.line
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                child = node.value[part]
                line = child.start_mark.line
            if child is None:
                break
            node = child
        return line + 1


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, else None: the one rule for a manifest's YAML strings and text files."""
    if "\x00" in text:
        return "holds a NUL character (U+0000), which no text field can hold; leave it out"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone UTF-16 surrogate (U+D800..U+DFFF), which is not a character"
    return None


def _unstorable_strings(value: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str):
        reason = unstorable(value)
        if reason:
            yield path, reason
    elif isinstance(value, dict):
        for key, item in value.items():
            reason = unstorable(key) if isinstance(key, str) else None
            if reason:
                yield path, f"a key {reason}"
            else:
                yield from _unstorable_strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _unstorable_strings(item, (*path, index))


def _duplicate_keys(node: yaml.Node | None, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], int, str]]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen:
                    yield path, key.start_mark.line + 1, key.value
                seen.add(key.value)
                yield from _duplicate_keys(value, (*path, key.value))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*path, index))


def parse_yaml(raw: bytes, file: str, problems: list[Problem]) -> tuple[Any, Lines] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(file, None, "", f"is not UTF-8 text (byte {exc.start}); expected UTF-8 YAML"))
        return None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        detail = exc.problem or "malformed YAML"
        if mark is not None:
            detail += f" at column {mark.column + 1}"
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            detail += f" ({exc.context} started at line {exc.context_mark.line + 1})"
        problems.append(Problem(file, mark.line + 1 if mark else None, "", f"is not valid YAML: {detail}"))
        return None
    except yaml.YAMLError as exc:
        problems.append(Problem(file, None, "", f"is not valid YAML: {exc}"))
        return None
    finally:
        loader.dispose()
    for path, line, key in _duplicate_keys(node):
        problems.append(Problem(file, line, field_path((*path, key)), "duplicate key; each key may appear once"))
    lines = Lines(node)
    bad = list(_unstorable_strings(data))
    for path, reason in bad:
        problems.append(Problem(file, lines.line(path), field_path(path), reason))
    # Like a YAML error, the file is not parsed further: its fields would only repeat the problem.
    return None if bad else (data, lines)
