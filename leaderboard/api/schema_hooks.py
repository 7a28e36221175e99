"""drf-spectacular post-processing: document the error answers every operation can give.

Any endpoint can refuse a malformed query (400), a bad or missing credential
(401/403), an unsupported method, media type or Accept header (405/406/415)
or throttle (429), always with the one error shape of leaderboard/api_errors.py.
Declaring them once here keeps the schema truthful without repeating them on
every view.
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "Stable machine-readable code"},
                "message": {"type": "string", "description": "What went wrong, for people"},
                "fields": {"type": "object", "additionalProperties": True},
                "problems": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
            },
            "required": ["code", "message"],
        }
    },
    "required": ["error"],
}

COMMON_ERRORS = {
    "400": "Invalid request (the message says which field and what was expected)",
    "401": "Not authenticated, or an invalid API key",
    "403": "Not allowed (or a missing CSRF token on a session request)",
    "404": "Not found",
    "405": "Method not allowed",
    "406": "Not acceptable",
    "415": "Unsupported media type",
    "429": "Rate limited (see Retry-After)",
}


def add_common_error_responses(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for status, description in COMMON_ERRORS.items():
                operation["responses"].setdefault(status, {"description": description, "content": reference})
    return result
