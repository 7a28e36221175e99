"""`manage.py ensure_admin`: make sure the superuser `admin` exists (idempotent).

On creation the password is PODIUM_ADMIN_PASSWORD when set, else a random one;
it is printed once and stored nowhere but as Django's password hash. When the
account exists, nothing secret is printed and the password is left alone.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from leaderboard.users import username_holder, username_lock

USERNAME = "admin"


class Command(BaseCommand):
    help = "Create the superuser 'admin' (printing its password once) unless it exists."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        with transaction.atomic():
            # Two runs at once (two hosts starting): the second waits here, then finds the account.
            username_lock(USERNAME)
            existing = users.objects.filter(username=USERNAME).first()
            if existing is not None:
                if existing.is_active and existing.is_staff and existing.is_superuser:
                    self.stdout.write(f"Superuser '{USERNAME}' already exists; its password is unchanged.")
                else:
                    # Never re-empowered silently: someone took those flags away on purpose, maybe.
                    lacks = [
                        name
                        for name, flag in (("active", existing.is_active), ("staff", existing.is_staff),
                                           ("superuser", existing.is_superuser))
                        if not flag
                    ]  # fmt: skip
                    self.stdout.write(
                        f"The account '{USERNAME}' exists but is not {' or '.join(lacks)}: it cannot sign in to the "
                        "admin. Nothing was changed: give it back its flags from another superuser's admin, or run "
                        "`manage.py createsuperuser` under another name."
                    )
                return
            # Usernames are unique whatever their case (leaderboard/migrations/0004): the
            # insert below would fail with an IntegrityError, a traceback naming no account.
            variant = username_holder(USERNAME)
            if variant is not None:
                raise CommandError(
                    f"the account {variant!r} holds the username {USERNAME!r} in another case (usernames are "
                    "unique whatever their case); rename it in the admin, then run ensure_admin again."
                )
            from_env = os.environ.get("PODIUM_ADMIN_PASSWORD", "")
            password = from_env or secrets.token_urlsafe(18)
            users.objects.create_superuser(username=USERNAME, email="", password=password)
        shown = "the value of PODIUM_ADMIN_PASSWORD" if from_env else password
        self.stdout.write(f"Created superuser '{USERNAME}' with password: {shown}")
        if not from_env:
            self.stdout.write("This password is shown once and stored nowhere else; keep it now.")
