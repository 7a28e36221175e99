"""`manage.py site_keys generate [--if-missing] | rotate | list`.

Prints key ids and public keys only, never a secret.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from submissions import site_keys


class Command(BaseCommand):
    help = "Generate, rotate or list the site's age keys (bundles are sealed to the newest)."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        generate = sub.add_parser("generate", help="create the first site key")
        generate.add_argument(
            "--if-missing", action="store_true", help="do nothing (and succeed) when a key already exists"
        )
        sub.add_parser("rotate", help="append a new current key; older keys keep decrypting")
        sub.add_parser("list", help="show key ids and public keys (never secrets)")

    def handle(self, *args, action: str, **options):
        try:
            if action == "list":
                self._list()
            elif action == "generate":
                self._generate(if_missing=options["if_missing"])
            else:
                key = site_keys.keyring_append_new_key()
                self.stdout.write(f"rotated: new current key {key.key_id} {key.public_key}")
        except site_keys.SiteKeyError as exc:
            raise CommandError(str(exc)) from None

    def _existing(self) -> list[site_keys.SiteKey]:
        try:
            return site_keys.site_keys()
        except site_keys.SiteKeyError:
            return []

    def _generate(self, *, if_missing: bool) -> None:
        existing = self._existing()
        if existing:
            if if_missing:
                newest = existing[-1]
                self.stdout.write(f"site key present: {newest.key_id} {newest.public_key}")
                return
            raise CommandError("site keys already exist; use `site_keys rotate` to add a new current key")
        key = site_keys.keyring_append_new_key()
        self.stdout.write(f"generated site key {key.key_id} {key.public_key}")

    def _list(self) -> None:
        keys = site_keys.site_keys()
        for index, key in enumerate(keys):
            marker = "current" if index == len(keys) - 1 else "old (still decrypts)"
            self.stdout.write(f"{key.key_id}  {key.public_key}  {marker}")
