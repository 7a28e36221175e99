"""The API's content negotiation (DRF's setting DEFAULT_CONTENT_NEGOTIATION_CLASS).

Its own module: DRF imports it while defining APIView, so it may import nothing that imports
rest_framework.views (leaderboard.api_errors does).
"""

from __future__ import annotations

from collections.abc import Iterable

from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer


class ContentNegotiation(DefaultContentNegotiation):
    """DRF's negotiation, but a ``?format=`` no renderer of the endpoint has is a 406 naming the
    parameter and the formats it answers: DRF raised Http404, a "Nothing at <path>" that told a
    client its address was wrong when its parameter was."""

    def filter_renderers(self, renderers: Iterable[BaseRenderer], format: str) -> list[BaseRenderer]:
        renderers = list(renderers)
        matching = [renderer for renderer in renderers if renderer.format == format]
        if not matching:
            offered = ", ".join(sorted({str(renderer.format) for renderer in renderers}))
            raise exceptions.NotAcceptable(
                f"format: {format[:20]!r} is not a format this endpoint answers; it answers {offered}."
            )
        return matching
