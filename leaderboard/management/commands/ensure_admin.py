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
from django.core.management.base import BaseCommand
from django.db import transaction

USERNAME = "admin"


class Command(BaseCommand):
    help = "Create the superuser 'admin' (printing its password once) unless it exists."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        with transaction.atomic():
            if users.objects.filter(username=USERNAME).exists():
                self.stdout.write(f"Superuser '{USERNAME}' already exists; its password is unchanged.")
                return
            from_env = os.environ.get("PODIUM_ADMIN_PASSWORD", "")
            password = from_env or secrets.token_urlsafe(18)
            users.objects.create_superuser(username=USERNAME, email="", password=password)
        shown = "the value of PODIUM_ADMIN_PASSWORD" if from_env else password
        self.stdout.write(f"Created superuser '{USERNAME}' with password: {shown}")
        if not from_env:
            self.stdout.write("This password is shown once and stored nowhere else; keep it now.")
