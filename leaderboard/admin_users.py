"""The admin's user pages: Django's own, with a username unique whatever its case.

The database refuses a username that differs from another only in case (the unique index on
lower(username) of leaderboard/migrations/0004). Django's add form already refuses one, as
sign-up does; its change form compares the exact name only, so renaming "carol" to "BOB" while
"bob" existed passed the form and the UPDATE then failed: a 500. The change form here refuses
it with the add form's message. Both forms take :func:`leaderboard.users.username_lock` before
they look (the admin validates and saves in one transaction), so two admins adding "bob" and
"Bob" at once get a saved account and a form error, not a saved account and a 500. Registered
once, here; leaderboard/admin.py imports this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from leaderboard.users import username_holder, username_lock

if TYPE_CHECKING:
    _UserChangeForm = UserChangeForm[User]  # generic in django-stubs only, not at runtime
    _UserAdmin = UserAdmin[User]
else:
    _UserChangeForm = UserChangeForm
    _UserAdmin = UserAdmin


class UserCaseCreationForm(AdminUserCreationForm):
    """Django's admin add form, checking under the lock and as the unique index compares names."""

    def clean_username(self) -> str:
        username = self.cleaned_data.get("username")
        if username:
            username_lock(username)
            if username_holder(username) is not None:
                raise ValidationError(self.instance.unique_error_message(User, ("username",)))
        return super().clean_username()


class UserCaseChangeForm(_UserChangeForm):
    """Django's user change form, refusing a new username that another account holds in any case."""

    def clean_username(self) -> str:
        username: str = self.cleaned_data["username"]
        username_lock(username)
        if username_holder(username, exclude_pk=self.instance.pk) is not None:
            raise ValidationError(self.instance.unique_error_message(User, ("username",)))
        return username


class PodiumUserAdmin(_UserAdmin):
    form = UserCaseChangeForm
    add_form = UserCaseCreationForm


admin.site.unregister(User)
admin.site.register(User, PodiumUserAdmin)
