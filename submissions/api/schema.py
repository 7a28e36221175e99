"""OpenAPI description of the Api-Key scheme (imported by leaderboard/site/api_urls.py so it registers)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.authentication import SessionScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "submissions.api_keys.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Api-Key pdm_<prefix>_<secret>` (create keys at /accounts/api-keys/).",
        }


class SessionAuthenticationScheme(SessionScheme):
    """The site's session authentication (DRF's, with its own CSRF refusal) is DRF's cookie scheme."""

    target_class = "leaderboard.api.session_auth.SessionAuthentication"
