"""What the registry's admin modules share (leaderboard.admin, leaderboard.admin_races)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


class SuperuserDeletesMixin:
    """Deleting needs a superuser: a registry row (a race, a release, an agent ...) deleted from
    its changelist skipped every service and its checks (a staff helper holding only
    ``delete_race`` removed a running race and its entries)."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser) and super().has_delete_permission(request, obj)  # type: ignore[misc]


class ReadOnlyFieldsMixin(SuperuserDeletesMixin):
    """Every model field read-only: these rows change only through the services (and are
    deleted only by a superuser)."""

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # A mixin: the ModelAdmin it is mixed into supplies self.model.
        names = [f.name for f in self.model._meta.fields]  # type: ignore[attr-defined]
        return names + list(getattr(self, "extra_readonly", ()))
