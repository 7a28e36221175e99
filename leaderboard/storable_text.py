"""The one rule for text Podium stores: no NUL character and no lone surrogate.

PostgreSQL refuses NUL (U+0000) in every text and jsonb column, so a NUL that reaches a write
is a DataError (a 500); SQLite would store it, hidden in a name. A lone UTF-16 surrogate
(U+D800..U+DFFF, which JSON's ``\\ud800`` escape and YAML's double quotes can produce) cannot be
encoded to UTF-8, so nothing can store, hash or sign it. Every reader of outside text (bundle
JSON, the API's JSON bodies, manifest YAML, staff's admin forms) asks this module; each words
its own refusal for its own format. Pure (no Django): the standalone bundle tool and the
manifest reader import it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

__all__ = ["NAMES", "NUL", "SURROGATE", "field_path", "unstorable_kind", "unstorable_strings"]

NUL: Literal["nul"] = "nul"
SURROGATE: Literal["surrogate"] = "surrogate"
Kind = Literal["nul", "surrogate"]
# What each kind is, for a message ("task id 2 holds <name>").
NAMES: dict[Kind, str] = {
    NUL: "a NUL character (U+0000)",
    SURROGATE: "a lone UTF-16 surrogate (U+D800..U+DFFF)",
}


def unstorable_kind(text: str) -> Kind | None:
    """Why ``text`` cannot be stored (NUL or SURROGATE), else None."""
    if "\x00" in text:
        return NUL
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE
    return None


def unstorable_strings(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Kind, bool]]:
    """Every string of a JSON- or YAML-shaped ``value`` that cannot be stored, as
    ``(path, kind, is_key)``: a bad key is reported at its object's path (and its item is not
    walked), a bad value at its own. Recurses as deep as ``value`` nests (callers that read
    outside input guard RecursionError)."""
    if isinstance(value, str):
        kind = unstorable_kind(value)
        if kind is not None:
            yield path, kind, False
    elif isinstance(value, dict):
        for key, item in value.items():
            kind = unstorable_kind(key) if isinstance(key, str) else None
            if kind is not None:
                yield path, kind, True
            else:
                yield from unstorable_strings(item, (*path, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from unstorable_strings(item, (*path, index))


def field_path(path: tuple[Any, ...]) -> str:
    """``("tasks", 2, "name")`` -> ``"tasks[2].name"``: how every message names a field."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
