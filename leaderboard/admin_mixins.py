"""What the registry's admin modules share (leaderboard.admin, leaderboard.admin_races)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


class ReadOnlyFieldsMixin:
    """Every model field read-only: these rows change only through the services."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A mixin: the ModelAdmin it is mixed into supplies self.model.
        names = [f.name for f in self.model._meta.fields]  # type: ignore[attr-defined]
        return names + list(getattr(self, "extra_readonly", ()))
