"""The canonical JSON form that signatures cover: RFC 8785 (JCS).

JCS is chosen over "json.dumps(sort_keys=True)" because it is specified
independently of Python: harnesses written in Go, Rust or JavaScript can
produce the same bytes with an off-the-shelf JCS library.  In short:

* objects: keys sorted by their UTF-16 code units, no whitespace anywhere;
* strings: JSON escapes only for ``"``, ``\\``, and control characters
  (``\\b \\f \\n \\r \\t``, others as ``\\u00xx``), everything else as UTF-8;
* numbers: IEEE-754 doubles printed like ECMAScript ``Number.prototype.toString``
  (shortest round-trip digits; ``1`` not ``1.0``; ``1e-7``; ``1e+21``);
  integers beyond 2**53 cannot be represented and are refused;
* ``true``, ``false``, ``null`` literally.
"""

from __future__ import annotations

import functools
import json
import math
import re
from decimal import Decimal
from typing import Any, NamedTuple

__all__ = ["CanonicalJSONError", "PlainTexts", "canonical_json", "format_number", "plain_texts"]

# Integers above this lose precision as IEEE doubles, so two harnesses could
# disagree about their canonical text.
_MAX_SAFE_INTEGER = 2**53


class CanonicalJSONError(ValueError):
    """A value that has no canonical JSON form (NaN, huge int, bad type)."""


def format_number(value: float | int) -> str:
    """ECMAScript Number::toString of ``value`` (RFC 8785 section 3.2.2.3)."""
    # Fast paths (every signed result holds thousands of numbers): a safe integer prints as
    # itself, and where Python's repr() of a finite float needs no exponent (1e-4 <= |x| < 1e16)
    # ECMAScript uses fixed notation too, with the same shortest round-trip digits; only an
    # integral float's ".0" differs. Everything else takes the general path below.
    kind = type(value)
    if kind is int and -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        return str(value)
    if kind is float and value != 0:  # -0.0 prints as "0": the general path
        text = repr(value)
        if "e" not in text and "n" not in text:  # not an exponent, nan or inf
            return text.removesuffix(".0")
    return _format_number_general(value)


def _format_number_general(value: float | int) -> str:
    if isinstance(value, bool):
        raise CanonicalJSONError("a bool is not a number")
    if isinstance(value, int):
        if abs(value) > _MAX_SAFE_INTEGER:
            raise CanonicalJSONError(f"integer {value} is beyond 2**53 and has no exact canonical form")
        value = float(value)
    if not math.isfinite(value):
        raise CanonicalJSONError(f"{value!r} has no JSON form")
    if value == 0:
        return "0"  # also -0.0
    sign = "-" if value < 0 else ""
    # repr() is the shortest string that round-trips, the same digits ES uses.
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(str(d) for d in digit_tuple).rstrip("0") or "0"
    trailing = len("".join(str(d) for d in digit_tuple)) - len(digits)
    exponent = int(exponent) + trailing
    k = len(digits)
    n = exponent + k  # value = 0.digits * 10**n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text


def _string(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalJSONError("a string contains a lone surrogate") from exc
    # json.dumps with ensure_ascii=False escapes exactly what JCS escapes,
    # with lower-case hex for \u00xx, as RFC 8785 requires.
    return json.dumps(value, ensure_ascii=False)


@functools.lru_cache(maxsize=1024)
def _key_string(key: str) -> str:
    """An ASCII object key's JSON text; keys repeat thousands of times per document. Escaped as
    a string value is (DEL, U+007F, stays raw: RFC 8785 escapes only controls below U+0020)."""
    return json.dumps(key, ensure_ascii=False)


def _append_float(value: float, append: Any) -> None:
    """format_number's fast path for a float, appended (the hot case: signed results are mostly floats)."""
    if value != 0:  # -0.0 prints as "0": the general path
        text = repr(value)
        if "e" not in text and "n" not in text:  # not an exponent, nan or inf
            append(text.removesuffix(".0"))
            return
    append(_format_number_general(value))


# One flat dispatch on purpose (C901 waived): the hottest loop of signature checks, and a call
# per branch would cost what the exact-type dispatch saves.
def _encode(value: Any, out: list[str]) -> None:  # noqa: C901
    # Dispatch on the exact type first (what a JSON parser returns), most frequent first; bools,
    # None and subclasses (an int subclass, an OrderedDict) take the general branches at the end.
    # A signed result holds thousands of values: about a fifth less CPU than isinstance checks first.
    append = out.append
    kind = type(value)
    if kind is float:
        _append_float(value, append)
    elif kind is dict:
        # Code-point order equals UTF-16 order unless a key holds a character above U+FFFF next to
        # one in U+E000..U+FFFF; ASCII keys (every key of a result document) sort directly.
        if all(type(key) is str and key.isascii() for key in value):
            keys = sorted(value)
        else:
            for key in value:
                if not isinstance(key, str):
                    raise CanonicalJSONError(f"object key {key!r} is not a string")
            keys = sorted(value, key=lambda k: k.encode("utf-16-be"))
        append("{")
        for index, key in enumerate(keys):
            if index:
                append(",")
            append(_key_string(key) if key.isascii() else _string(key))
            append(":")
            item = value[key]
            if type(item) is float and item != 0:  # _append_float inlined: the hottest line
                text = repr(item)
                if "e" not in text and "n" not in text:
                    append(text.removesuffix(".0"))
                    continue
            _encode(item, out)
        append("}")
    elif kind is int:
        append(format_number(value))
    elif kind is str:
        append(_string(value))
    elif kind is list or kind is tuple:
        append("[")
        for index, item in enumerate(value):
            if index:
                append(",")
            _encode(item, out)
        append("]")
    elif value is None:
        append("null")
    elif value is True:
        append("true")
    elif value is False:
        append("false")
    elif isinstance(value, int | float):
        append(format_number(value))
    elif isinstance(value, str):
        append(_string(value))
    elif isinstance(value, dict):
        _encode(dict(value), out)
    elif isinstance(value, list | tuple):
        _encode(list(value), out)
    else:
        raise CanonicalJSONError(f"{type(value).__name__} is not a JSON value")


class _NotPlain(Exception):
    """A value the C encoder would print differently from JCS: the general encoder takes it."""


# Python's C JSON encoder prints exactly what JCS prints for a "plain" value (below) except for
# some floats: strings are escaped alike (the general encoder's _string uses it too), ASCII keys
# sort alike, safe integers print alike, and repr() of a float is ECMAScript's text wherever
# repr() needs no exponent (1e-4 <= |x| < 1e16) and the float is not integral. An integral float
# below 1e16 is printed "5.0" (repr) where JCS says "5" (-0.0: "0"); any other float repr()
# prints with an exponent ("1e-05", "1e+16") where JCS may not. canonical_json encodes the value
# as it is, then rewrites those number tokens in the text; a walk of the value first checks it is
# plain and counts them, so that a string which happens to spell one is never rewritten. A signed
# result is almost all plain.
_c_encode = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, sort_keys=True, separators=(",", ":"), check_circular=False
).encode

# The ".0" of a number token "N.0" (an integral float below 1e16): what follows a number inside a
# container in the C encoder's compact text is one of , } ].
_INTEGRAL_TAIL = re.compile(r"\.0(?=[,}\]])")
_NEGATIVE_ZERO = re.compile(r"-0\.0(?=[,}\]])")


class _Counts:
    """What :func:`_scan` found: integral floats below 1e16 (printed "N.0"), how many of them are
    -0.0, whether one lies beyond 2**53 or sits in a tuple (the results digest reads those two
    differently, see plain_texts), and the repr() of each float printed with an exponent."""

    __slots__ = ("beyond_safe", "integral", "negative_zeros", "odd", "tuples")

    def __init__(self) -> None:
        self.integral = 0
        self.negative_zeros = 0
        self.beyond_safe = False
        self.tuples = False
        self.odd: dict[str, int] = {}


def _scan_float(value: float, counts: _Counts) -> None:
    if value.is_integer():
        if -1e16 < value < 1e16:
            counts.integral += 1
            if value == 0 and math.copysign(1.0, value) < 0:
                counts.negative_zeros += 1
            elif not -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
                counts.beyond_safe = True
            return
    elif 1e-4 <= abs(value) < 1e16:
        return
    if not math.isfinite(value):
        raise _NotPlain  # the general encoder refuses it
    # repr() uses an exponent where JCS may not (1e-05: "0.00001", 1e+16: "10000000000000000").
    shown = repr(value)
    counts.odd[shown] = counts.odd.get(shown, 0) + 1


# One flat walk on purpose (C901 waived): it runs over every value of a signed result.
def _scan(value: Any, counts: _Counts) -> None:  # noqa: C901
    """Raise _NotPlain unless ``value`` is plain, counting into ``counts`` the floats whose
    repr() is not their JCS text.

    Plain: exact types only (what a JSON parser returns), ASCII string keys, safe integers,
    finite floats; a subclass, a non-ASCII or non-string key, an unsafe integer, nan or inf
    takes the general path.
    """
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                raise _NotPlain
            item_kind = type(item)
            if item_kind is float:
                if 1e-4 <= item < 1e16:  # the hot cases, checked inline
                    if not item.is_integer():
                        continue
                    if item <= _MAX_SAFE_INTEGER:
                        counts.integral += 1
                        continue
                _scan_float(item, counts)
            elif item_kind is int:
                if not -_MAX_SAFE_INTEGER <= item <= _MAX_SAFE_INTEGER:
                    raise _NotPlain
            elif not (item_kind is str or item_kind is bool or item is None):
                _scan(item, counts)
    elif kind is list or kind is tuple:
        if kind is tuple:
            counts.tuples = True
        for item in value:
            _scan(item, counts)
    elif kind is float:
        _scan_float(value, counts)
    elif kind is int:
        if not -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
            raise _NotPlain
    elif not (kind is str or kind is bool or value is None):
        raise _NotPlain


class PlainTexts(NamedTuple):
    """A plain object's texts, from one walk and one C-encoder pass (see :func:`plain_texts`)."""

    # json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False): numbers as they are.
    as_is: str
    # That text with every integral float of magnitude up to 2**53 printed as its integer (-0.0 as
    # 0), i.e. the text of submissions.bundle.contract's "as signed" reading of the value; None
    # where that reading differs otherwise (an integral float beyond 2**53, or one in a tuple).
    as_signed: str | None
    # canonical_json(value).
    canonical: bytes


def plain_texts(value: Any) -> PlainTexts | None:
    """The texts of a plain object (or list), or None: then canonical_json takes the general
    encoder and a caller wanting the other texts computes them its own way."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return None  # a number at the top has no delimiter after it: the general encoder
    counts = _Counts()
    try:
        _scan(value, counts)
        text = _c_encode(value)
    except (_NotPlain, RecursionError):
        # RecursionError: nested about as deep as the recursion limit, where the general encoder
        # alone decides, as it always did.
        return None
    signed = text
    if counts.integral:
        # Each integral float below 1e16 is a number token "N.0" followed by a delimiter: when the
        # text holds no other ".0" before a delimiter (no string spells one), dropping every such
        # ".0" prints each of those floats as its integer and touches nothing else.
        if counts.negative_zeros:
            # "-0.0" -> "0.0" first, so it becomes "0" (JCS and the as-signed reading print -0.0 so);
            # the count below still covers it, and when it holds, every "-0.0" before a delimiter
            # was a -0.0 token (no other float prints so).
            signed = _NEGATIVE_ZERO.sub("0.0", signed)
        signed, found = _INTEGRAL_TAIL.subn("", signed)
        if found != counts.integral:
            return None
    canonical = signed
    for shown, count in counts.odd.items():
        # Each such float is a number token of the text spelled exactly ``shown`` (no delimiter
        # in it, so no other occurrence overlaps one). Only when no string or other number holds
        # that spelling too is every occurrence swapped for the JCS text.
        if canonical.count(shown) != count:
            return None
        canonical = canonical.replace(shown, format_number(float(shown)))
    try:
        data = canonical.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the general encoder refuses it
        return None
    return PlainTexts(text, None if counts.beyond_safe or counts.tuples else signed, data)


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value."""
    # The C encoder on the plain value: about a third of the CPU of the general encoder on a
    # signed result (each bundle checks a signature per task). Byte-identical output is
    # property-tested against the general encoder (tests/bundle/test_signatures.py).
    texts = plain_texts(value)
    if texts is not None:
        return texts.canonical
    out: list[str] = []
    _encode(value, out)
    return "".join(out).encode("utf-8")
