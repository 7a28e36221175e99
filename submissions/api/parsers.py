"""The API's JSON parser: DRF's, refusing what parses but cannot be stored or read back.

Python's ``json`` reads all of these, and each failed later, as a 500:

- a body nested a few thousand levels deep raises RecursionError, which DRF's parser does not
  catch (``malformed_request`` here, like any unreadable body);
- a ``\\u0000`` escape is a NUL, which PostgreSQL refuses in text and jsonb columns, and a lone
  surrogate escape (``\\ud800``) is a string that cannot be encoded to UTF-8 again, so a form
  that saved it or an error message that quoted it crashed (``invalid_text``, naming the field);
- ``1e400`` reads as infinity, which no JSON response can carry (``non_finite_number``).

Checked once here, for every JSON body of every endpoint, by the same walk the bundle's
strict parser uses (``submissions.bundle.strict_json``).
"""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils.json import strict_constant

from leaderboard.request_text import InvalidText
from submissions.bundle.strict_json import unstorable_text_path


class NonFiniteNumber(APIException):
    status_code = 400
    default_code = "non_finite_number"


def _non_finite_path(value: Any, path: str = "") -> str | None:
    """The path of the first number that is not finite (``1e400`` reads as infinity), else None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path or "the body")
    if isinstance(value, dict):
        items = [(f"{path}.{key}" if path else str(key), item) for key, item in value.items()]
    elif isinstance(value, list):
        items = [(f"{path}[{index}]", item) for index, item in enumerate(value)]
    else:
        return None
    return next((found for here, item in items if (found := _non_finite_path(item, here))), None)


def strict_body_refusal(data: Any) -> APIException | None:
    """Why a parsed JSON body is refused (``invalid_text``, ``non_finite_number``), else None.

    The one rule: :class:`StrictJSONParser` raises it, and the play API's fast lane
    (submissions.api.scorecards), which reads its short bodies without DRF, hands any body
    it refuses to the DRF view, so a body is refused on either path alike. May raise
    RecursionError for a body nested deeper than Python recurses (the parser answers it)."""
    found = unstorable_text_path(data)
    if found is not None:
        where, reason = found
        return InvalidText(f"{where}: holds {reason}")
    overflowing = _non_finite_path(data)
    if overflowing is not None:
        return NonFiniteNumber(
            f"{overflowing}: is not a finite number (it overflows a double); JSON numbers must be finite"
        )
    return None


class DuplicateKey(ValueError):
    """A JSON object naming one key twice: Python keeps the last, so a client sending
    ``{"benchmark": "a", "benchmark": "b"}`` had its body read as it never said it."""


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` of every JSON body the API reads (here and the play fast lane)."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        raise DuplicateKey(f"the key {repeated[:60]!r} appears twice in one object; send each field once")
    return data


class StrictJSONParser(JSONParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        try:
            data = self._load(stream, parser_context)
            # The walks recurse as deep as the body nests: within the same guard as the parse.
            refusal = strict_body_refusal(data)
        except RecursionError:
            raise ParseError(
                "JSON parse error - the body is nested too deeply to read; no field of this API nests more than a "
                "few levels"
            ) from None
        if refusal is not None:
            raise refusal
        return data

    def _load(self, stream: IO[Any], parser_context: Mapping[str, Any] | None) -> Any:
        """DRF's JSONParser.parse (its encoding, its strict constants), refusing repeated keys."""
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            decoded = codecs.getreader(encoding)(stream)
            return json.load(decoded, parse_constant=strict_constant, object_pairs_hook=refuse_duplicate_keys)
        except ValueError as exc:  # DuplicateKey too
            raise ParseError(f"JSON parse error - {exc}") from None
