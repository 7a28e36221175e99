"""The site's admin: Django's, with every registered ModelAdmin guarding its action selections.

Django's changelist filters ``pk__in`` the posted ``_selected_action`` values as they come: a
forged value that is not a primary key of the model ("abc" for an integer id, a malformed UUID)
raised a ValueError or ValidationError, a 500 for a staff member's hand-made request. The guard
refuses such a selection with an admin message instead, before any action runs. It is mixed into
every ModelAdmin at registration (Django's own admins, User and Group, included), so no admin
class can be registered without it.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.apps import AdminConfig
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseBase


def selection_refusal(model: Any, values: list[str]) -> str | None:
    """Why ``values`` (posted row selections) are not primary keys of ``model``; None when they all are."""
    pk = model._meta.pk
    for value in values:
        try:
            pk.get_prep_value(pk.to_python(value))
        except (ValidationError, ValueError, TypeError, OverflowError):
            return f"The selection {value[:40]!r} is not a {model._meta.verbose_name} id; nothing was done."
    return None


class SelectionGuardMixin:
    """Refuse an action on posted selections that are not this model's primary keys."""

    def response_action(self, request: HttpRequest, queryset: QuerySet[Any]) -> HttpResponseBase | None:
        refusal = selection_refusal(self.model, request.POST.getlist(helpers.ACTION_CHECKBOX_NAME))  # type: ignore[attr-defined]
        if refusal is not None:
            # None: Django's changelist then redirects back with no action taken.
            self.message_user(request, refusal, messages.ERROR)  # type: ignore[attr-defined]
            return None
        return super().response_action(request, queryset)  # type: ignore[misc]


class PodiumAdminSite(admin.AdminSite):
    def register(self, model_or_iterable: Any, admin_class: Any = None, **options: Any) -> None:
        admin_class = admin_class or admin.ModelAdmin
        if not issubclass(admin_class, SelectionGuardMixin):
            # A subclass, as Django itself makes one when register() is given options.
            admin_class = type(
                admin_class.__name__, (SelectionGuardMixin, admin_class), {"__module__": admin_class.__module__}
            )
        super().register(model_or_iterable, admin_class, **options)


class PodiumAdminConfig(AdminConfig):
    """django.contrib.admin with PodiumAdminSite as ``admin.site`` (Django's documented override)."""

    default_site = "leaderboard.admin_site.PodiumAdminSite"
