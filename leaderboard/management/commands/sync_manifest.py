"""`manage.py sync_manifest PATH`: sync a release manifest directory (or .zip) into the registry.

Prints what changed. On a refused manifest it prints every problem (file:line:
field: message) and exits 1 without a traceback; nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.manifest import ManifestError, ManifestSource, read_manifest_zip
from leaderboard.services.release_sync import release_sync


class Command(BaseCommand):
    help = "Sync a release manifest (a directory with release.yaml and tasks/, or a .zip of one) into the registry."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="manifest directory or .zip")
        parser.add_argument("--user", help="username recorded as the release's syncer (a staff member)")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        user = None
        if options.get("user"):
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"no user named {options['user']!r}")
        try:
            source: ManifestSource | Path = (
                read_manifest_zip(path.read_bytes(), label=path.name)
                if path.is_file() and path.suffix.lower() == ".zip"
                else path
            )
            result = release_sync(manifest=source, user=user)
        except ManifestError as exc:
            raise CommandError(f"{path}: manifest refused\n{exc}") from None
        except PermissionDenied as exc:
            raise CommandError(str(exc)) from None
        for line in result.lines():
            self.stdout.write(line)
