"""The admin's user pages: Django's own, with a username unique whatever its case.

The database refuses a username that differs from another only in case (the unique index on
lower(username) of leaderboard/migrations/0004). Django's add form already refuses one, as
sign-up does; its change form compares the exact name only, so renaming "carol" to "BOB" while
"bob" existed passed the form and the UPDATE then failed: a 500. The change form here refuses
it with the add form's message. Registered once, here; leaderboard/admin.py imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserChangeForm
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

if TYPE_CHECKING:
    _UserChangeForm = UserChangeForm[User]  # generic in django-stubs only, not at runtime
    _UserAdmin = UserAdmin[User]
else:
    _UserChangeForm = UserChangeForm
    _UserAdmin = UserAdmin


class UserCaseChangeForm(_UserChangeForm):
    """Django's user change form, refusing a new username that another account holds in any case."""

    def clean_username(self) -> str:
        username: str = self.cleaned_data["username"]
        taken = User.objects.filter(username__iexact=username).exclude(pk=self.instance.pk)
        if taken.exists():
            raise ValidationError(self.instance.unique_error_message(User, ("username",)))
        return username


class PodiumUserAdmin(_UserAdmin):
    form = UserCaseChangeForm


admin.site.unregister(User)
admin.site.register(User, PodiumUserAdmin)
