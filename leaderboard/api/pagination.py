"""LimitOffset pagination that refuses a malformed limit or offset instead of ignoring it."""

from __future__ import annotations

from typing import Any

from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request

from leaderboard.api_errors import ApiError
from leaderboard.api_query import MAX_ID, whole_number


class StrictLimitOffsetPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 500

    def _read(self, request: Request, name: str, *, minimum: int) -> int | None:
        raw = request.query_params.get(name)
        if raw is None or raw == "":
            return None
        value = whole_number(raw, minimum=minimum)
        if value is None:
            # A larger limit is accepted and served as max_limit rows (DRF's rule), so the
            # message says so rather than naming the bound of the integer parser alone.
            cap = f" (a page holds at most {self.max_limit})" if name == self.limit_query_param else ""
            raise ApiError(
                code="invalid_query",
                message=f"{name}: expected a whole number from {minimum} to {MAX_ID}{cap}, got {raw[:20]!r}.",
            )
        return value

    def get_limit(self, request: Request) -> int:
        limit = self._read(request, self.limit_query_param, minimum=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        return self._read(request, self.offset_query_param, minimum=0) or 0

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1 if parameter["name"] == self.limit_query_param else 0
            parameter["schema"]["maximum"] = MAX_ID
            if parameter["name"] == self.limit_query_param:
                parameter["description"] = f"Results per page (default {self.default_limit}, at most {self.max_limit})."
        return parameters
