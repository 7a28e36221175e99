"""The health probes answered before anything reads the ``Host`` header.

A load balancer or orchestrator probes a web host by its own address
(``http://10.0.0.5:8000/healthz``), which is not in ``ALLOWED_HOSTS``: Django's
host check (CommonMiddleware's first ``get_host()``) answered the probes 400, so a
liveness check would restart a healthy host and readiness never saw it ready.
The probes build no URL from the host and show nothing about the site, so they
are answered here, first of all middleware; every other path is validated as before.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBase

from leaderboard.views.health import readyz
from leaderboard.views.paper_gap import healthz

PROBES: dict[str, Callable[[HttpRequest], HttpResponseBase]] = {"/healthz": healthz, "/readyz": readyz}


class HealthProbeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        probe = PROBES.get(request.path_info)
        if probe is not None:
            return probe(request)
        return self.get_response(request)
