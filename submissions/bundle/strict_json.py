"""Strict JSON parsing for untrusted bundle members.

Python's ``json`` accepts ``NaN``, ``Infinity`` and ``1e999`` (which becomes
infinity) and silently keeps the last of duplicate keys.  A bundle must not
smuggle any of these past the scorer, so this parser rejects them with the
member's name in the message. It also rejects strings no database column can
store (a ``\\u0000`` escape, a lone surrogate escape), naming their path, so a
bundle never reaches a write it would fail.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from leaderboard.storable_text import NUL, SURROGATE, field_path, unstorable_strings
from submissions.bundle.errors import BundleError

__all__ = ["JSONObject", "parse_json", "unstorable_text_path"]


class JSONObject(dict[str, Any]):
    """A parsed JSON object that remembers keys that appeared twice.

    Only built when an object has a repeated key (plain dicts otherwise, for
    speed); the top-level object of such a document is one too, with
    ``nested_duplicates`` set.  Duplicates are reported by the schema layer,
    which knows whether the object was a task map (``duplicate_task``) or
    anything else (``invalid_json``).
    """

    duplicates: tuple[str, ...] = ()
    nested_duplicates: bool = False


class _NonFinite(ValueError):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _duplicates_object(pairs: list[tuple[str, Any]]) -> JSONObject:
    obj = JSONObject()
    dups: list[str] = []
    for key, value in pairs:
        if key in obj:
            dups.append(key)
        obj[key] = value
    obj.duplicates = tuple(dups)
    return obj


# A \u0000 or \uD800-\uDFFF escape in the text: only then can the parsed value hold a NUL or a
# lone surrogate (a raw control character is already a syntax error, and a valid pair is joined
# into one character by the parser), so only then is it walked.
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


_REASONS = {
    NUL: "a \\u0000 escape: the NUL character (U+0000), which no text field can hold; leave it out",
    SURROGATE: (
        "a \\u escape of a lone UTF-16 surrogate (U+D800..U+DFFF), which is not a character; "
        "write the character itself or a valid surrogate pair"
    ),
}


def unstorable_text_path(value: Any) -> tuple[str, str] | None:
    """The first string or key of ``value`` that cannot be stored (leaderboard.storable_text's
    rule), as (where, why), else None."""
    for path, kind, is_key in unstorable_strings(value):
        where = field_path(path)
        return ((where or "the document") + " (a key)" if is_key else where, _REASONS[kind])
    return None


def _constant(text: str) -> Any:
    raise _NonFinite(text)


# The fewest digits of an integer beyond a double's range (1.8e308 has 309): shorter ones are
# never checked, so the common integer costs one length test.
_DOUBLE_OVERFLOW_DIGITS = 309


def _int(text: str) -> int:
    """An integer, refused (as 1e400 is) when no double holds it: every number of a bundle is
    read as a double somewhere (scores, rates, claims), where such an integer raised OverflowError
    -- a worker crash retried as a server fault instead of a rejection naming the member."""
    value = int(text)
    if len(text) >= _DOUBLE_OVERFLOW_DIGITS:
        try:
            float(value)
        except OverflowError:
            raise _NonFinite(f"{text[:12]}... ({len(text.lstrip('-'))} digits)") from None
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


# The shape of a document's numbers, read off its bytes in one translate: each digit a "0", "E" an
# "e", signs deleted (an exponent "1e+400" reads "0e000"; UTF-8 has no ASCII byte inside a
# multi-byte character). Without a run of 200 digits or an exponent of 3 or more digits (strings
# count too: that only makes the test stricter), every number is below 10**(199+99), well within a
# double, and every integer far below int()'s digit limit: _float and _int would refuse nothing and
# return what the C scanner's own float() and int() return, so the document is parsed without them.
_NUMBER_SHAPE = bytes.maketrans(b"123456789E", b"000000000e")
_LONG_DIGITS = b"0" * 200


def _numbers_in_range(data: bytes) -> bool:
    shape = data.translate(_NUMBER_SHAPE, b"+-")
    return b"0e000" not in shape and _LONG_DIGITS not in shape


def _utf8_text(data: bytes, member: str) -> str:
    """``data`` as text: UTF-8 without a byte-order mark."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError("invalid_json", f"{member}: not valid UTF-8 (byte {exc.start})") from None
    if text.startswith("\ufeff"):
        raise BundleError("invalid_json", f"{member}: starts with a byte-order mark; write plain UTF-8")
    return text


def _refuse_unstorable_text(value: Any, member: str) -> None:
    found = unstorable_text_path(value)
    if found is not None:
        # Python accepts "\u0000" and "\ud800"; the first makes PostgreSQL refuse the row, the
        # second a string that cannot be encoded again: either would crash whatever stores or
        # signs it. Said with the path only (the value cannot be shown).
        where, reason = found
        raise BundleError("invalid_json", f"{member}: {where} holds {reason}")


def _loads(text: str, data: bytes, hook: Callable[[list[tuple[str, Any]]], dict[str, Any]]) -> Any:
    if _numbers_in_range(data):  # the common case: the number hooks cost about a fifth of the parse
        return json.loads(text, object_pairs_hook=hook, parse_constant=_constant)
    return json.loads(text, object_pairs_hook=hook, parse_constant=_constant, parse_float=_float, parse_int=_int)


def parse_json(data: bytes, *, member: str) -> Any:
    """Parse ``data`` (UTF-8 JSON) or raise :class:`BundleError`.

    Codes: ``invalid_json`` (encoding, syntax, duplicate key outside a task
    map is reported later by the schema layer), ``non_finite_number``.
    """
    text = _utf8_text(data, member)
    found: list[bool] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) == len(pairs):
            return obj
        found.append(True)
        return _duplicates_object(pairs)

    try:
        value = _loads(text, data, hook)
    except _NonFinite as exc:
        raise BundleError(
            "non_finite_number",
            f"{member}: {exc.text} is not a finite number; JSON numbers must be finite (no NaN or Infinity) "
            "and within a double's range (about 1.8e308)",
        ) from None
    except json.JSONDecodeError as exc:
        raise BundleError(
            "invalid_json", f"{member}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except (ValueError, RecursionError) as exc:
        # int() digit limit, absurd nesting: still bad JSON, never a traceback.
        raise BundleError("invalid_json", f"{member}: invalid JSON: {exc}") from None
    if _UNSTORABLE_ESCAPE.search(text):
        try:
            _refuse_unstorable_text(value, member)
        except RecursionError:  # the walk recurses as deep as the document nests
            raise BundleError("invalid_json", f"{member}: invalid JSON: nested too deeply to read") from None
    if found and isinstance(value, dict):
        if not isinstance(value, JSONObject):
            value = JSONObject(value)
        value.nested_duplicates = True
    return value
