"""One rule for every API query string: a parameter that is present must carry a value, once.

HTML forms send empty fields and the pages treat them as absent, but the API is
for scripts, and its schema types every parameter (an integer offset, a boolean
`complete`, an enum `verdict`). `?offset=` is not an integer, so it is refused
with the API's JSON error instead of being silently read as "no filter". No API parameter
takes several values, so one given twice (`?limit=1&limit=2`) is refused too: read as the last,
a script's intent was silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from leaderboard.api.errors import error_body

API_PREFIX = "/api/"

# The largest id a database column can hold (PostgreSQL bigint, SQLite INTEGER): a larger
# number can name no row, and handing it to the database is an overflow error (a 500).
MAX_ID = 2**63 - 1
# ASCII digits only: str.isdigit() also accepts superscripts such as "²", which int() refuses.
_WHOLE_NUMBER = re.compile(r"[0-9]{1,19}")


_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def boolean(raw: str) -> bool | None:
    """``raw`` (a query parameter or form field) as a boolean, or None when it is not one (the
    caller names the field in its 400). One parser for every such flag of the API."""
    return _BOOLEANS.get(raw.strip().lower())


def whole_number(raw: str, *, minimum: int = 0, maximum: int = MAX_ID) -> int | None:
    """``raw`` as an int in [minimum, maximum], or None when it is not one (the caller names the
    parameter in its 400). One parser for every integer in a query string, pages and API alike."""
    if not _WHOLE_NUMBER.fullmatch(raw):
        return None
    value = int(raw)
    return value if minimum <= value <= maximum else None


# drf-spectacular's docs page loads its init script as `?script` (a bare flag).
FLAG_PARAMETERS = {"/api/v1/docs/": {"script"}}


class EmptyApiQueryParameterMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX):
            flags = FLAG_PARAMETERS.get(request.path, set())
            empty = sorted({name for name, value in request.GET.items() if value == "" and name not in flags})
            if empty:
                names = ", ".join(name[:40] for name in empty[:5])
                return JsonResponse(
                    error_body("invalid_query", f"{names}: a query parameter that is given needs a value."),
                    status=400,
                )
            repeated = sorted(name for name, values in request.GET.lists() if len(values) > 1)
            if repeated:
                names = ", ".join(name[:40] for name in repeated[:5])
                return JsonResponse(
                    error_body("invalid_query", f"{names}: given more than once; give each query parameter once."),
                    status=400,
                )
        return self.get_response(request)
