"""The admin's user and group pages: Django's own, with a username unique whatever its case, and
an account's powers (staff, superuser, groups, permissions) a superuser's alone to set.

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

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.http import HttpRequest

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


def _may_manage(request: HttpRequest, account: User | None) -> bool:
    """Whether ``request.user`` may change or delete ``account`` here: a superuser any; anyone
    else with the model permission only accounts that are neither staff nor superusers. Setting
    another account's password, staff status or permissions is taking its powers: a helper given
    ``change_user`` made itself a superuser, or replaced a superuser's password."""
    return bool(request.user.is_superuser) or account is None or not (account.is_staff or account.is_superuser)


class PodiumUserAdmin(_UserAdmin):
    form = UserCaseChangeForm
    add_form = UserCaseCreationForm

    # What only a superuser sets: an account's powers.
    POWER_FIELDS = ("is_staff", "is_superuser", "groups", "user_permissions")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        fields = list(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else [*fields, *self.POWER_FIELDS]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_manage(request, obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_manage(request, obj) and super().has_delete_permission(request, obj)


class PodiumGroupAdmin(GroupAdmin):
    """Groups carry permissions: only a superuser writes them (a helper given change_group added
    change_run to its own group)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


admin.site.unregister(User)
admin.site.register(User, PodiumUserAdmin)
admin.site.unregister(Group)
admin.site.register(Group, PodiumGroupAdmin)
