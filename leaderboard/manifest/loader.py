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
from leaderboard.storable_text import NUL, SURROGATE, field_path, unstorable_kind, unstorable_strings

__all__ = ["Lines", "field_path", "parse_yaml", "unstorable"]


class Lines:
    """Looks up the line of a field path in a composed YAML node tree."""

    def __init__(self, root: yaml.Node | None) -> None:
        self.root = root
        # Each mapping's keys, indexed once when first asked: scanning them for every path part
        # of every problem made a file of many problems quadratic (16,000 took minutes).
        self._keys: dict[int, dict[Any, tuple[yaml.Node, int]]] = {}

    def _child(self, node: yaml.MappingNode, part: Any) -> tuple[yaml.Node, int] | None:
        keys = self._keys.get(id(node))
        if keys is None:
            # The last occurrence of a key wins, as it did (a repeated key is its own problem).
            keys = {
                key.value: (value, key.start_mark.line) for key, value in node.value if isinstance(key, yaml.ScalarNode)
            }
            self._keys[id(node)] = keys
        try:
            return keys.get(part)
        except TypeError:  # an unhashable path part names no key
            return None

    def line(self, path: tuple[Any, ...]) -> int | None:
        """The line of the deepest node on ``path`` (a mapping field's key line, a list item's own line)."""
        node = self.root
        if node is None:
            return None
        line = node.start_mark.line
        for part in path:
            child = None
            if isinstance(node, yaml.MappingNode):
                found = self._child(node, part)
                if found is not None:
                    child, line = found
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
                child = node.value[part]
                line = child.start_mark.line
            if child is None:
                break
            node = child
        return line + 1


_REASONS = {
    NUL: "holds a NUL character (U+0000), which no text field can hold; leave it out",
    SURROGATE: "holds a lone UTF-16 surrogate (U+D800..U+DFFF), which is not a character",
}


def unstorable(text: str) -> str | None:
    """Why ``text`` cannot be stored, in a manifest's words, else None (leaderboard.storable_text's rule)."""
    kind = unstorable_kind(text)
    return None if kind is None else _REASONS[kind]


def _unstorable_strings(value: Any) -> Iterable[tuple[tuple[Any, ...], str]]:
    for path, kind, is_key in unstorable_strings(value):
        yield path, f"a key {_REASONS[kind]}" if is_key else _REASONS[kind]


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


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader refusing aliases (``*name``): a manifest needs none, and aliases make a small
    file a graph every later walk (duplicate keys, line numbers, storable text) follows
    exponentially (six levels of ten took 9 s), or forever when one refers to itself."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None,
                None,
                "an alias (*name); a manifest writes every value out, with no anchors or aliases",
                event.start_mark,
            )
        return super().compose_node(parent, index)


def parse_yaml(raw: bytes, file: str, problems: list[Problem]) -> tuple[Any, Lines] | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(file, None, "", f"is not UTF-8 text (byte {exc.start}); expected UTF-8 YAML"))
        return None
    try:
        # Inside the try: the reader refuses a control character (a NUL, U+0003, even in a
        # comment) as the loader is built, and that was a traceback.
        loader = _NoAliasLoader(text)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
        problems.append(
            Problem(
                file, line, "",
                f"is not valid YAML: holds the control character U+{code:04X}, which YAML allows nowhere "
                "(not even in a comment); remove it",
            )
        )  # fmt: skip
        return None
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except (RecursionError, ValueError, KeyError, AttributeError, TypeError, yaml.YAMLError) as exc:
        problems.append(_yaml_problem(file, exc))
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


def _yaml_problem(file: str, exc: BaseException) -> Problem:
    """The problem a YAML file that cannot be read is reported as (never a traceback)."""
    if isinstance(exc, RecursionError):
        return Problem(file, None, "", "is not valid YAML: nested too deeply to read")
    if isinstance(exc, ValueError):
        # Raised while constructing a value, not parsing: an integer over Python's digit limit
        # (4,300), a date that does not exist (2026-02-30). No line: the constructor has none.
        return Problem(file, None, "", f"is not valid YAML: a value cannot be read ({exc})")
    if isinstance(exc, (KeyError, AttributeError, TypeError)):
        # PyYAML's constructors of explicit tags raise these on a value they cannot read
        # (`!!bool maybe`, `!!timestamp hello`); the message would name PyYAML's internals.
        return Problem(file, None, "", "is not valid YAML: a tagged value (!!bool, !!timestamp ...) cannot be read")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        detail = exc.problem or "malformed YAML"
        if mark is not None:
            detail += f" at column {mark.column + 1}"
        if exc.context and exc.context_mark is not None and exc.context_mark is not mark:
            detail += f" ({exc.context} started at line {exc.context_mark.line + 1})"
        return Problem(file, mark.line + 1 if mark else None, "", f"is not valid YAML: {detail}")
    return Problem(file, None, "", f"is not valid YAML: {exc}")
