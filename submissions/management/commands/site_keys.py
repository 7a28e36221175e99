"""`manage.py site_keys generate [--if-missing] | rotate | list | export | import | check`.

Prints key ids and public keys only, never a secret: ``export`` writes the
identities encrypted to the operator's own age recipient, and ``import`` reads
such a file back (docs/deploy.md, "Backups").
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from submissions import site_keys
from submissions.bundle.errors import BundleError
from submissions.models import Submission
from submissions.services.stored_bundles import bundle_local_path, open_stored_bundle


class Command(BaseCommand):
    help = "Generate, rotate, list, back up (export/import) or check the site's age keys."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        generate = sub.add_parser("generate", help="create the first site key")
        generate.add_argument(
            "--if-missing", action="store_true", help="do nothing (and succeed) when a key already exists"
        )
        sub.add_parser("rotate", help="append a new current key; older keys keep decrypting")
        sub.add_parser("list", help="show key ids and public keys (never secrets)")
        export = sub.add_parser("export", help="write every identity, age-encrypted to your own recipient")
        export.add_argument(
            "--recipient",
            action="append",
            required=True,
            help="an age1... public key of the operator (repeatable); only its identity can read the export",
        )
        export.add_argument("--output", help="file to create (refuses to overwrite); default: standard output")
        imported = sub.add_parser("import", help="add the keys of an export to the keyring file")
        imported.add_argument("file", help="a file written by `site_keys export`")
        imported.add_argument("--identity", required=True, help="the operator's age identity file (age-keygen)")
        check = sub.add_parser("check", help="open stored bundles with the keyring (after a restore or rotation)")
        check.add_argument("--limit", type=int, default=20, help="newest accepted bundles to open (default 20)")

    def handle(self, *args, action: str, **options):
        try:
            if action == "list":
                self._list()
            elif action == "generate":
                self._generate(if_missing=options["if_missing"])
            elif action == "export":
                self._export(recipients=options["recipient"], output=options["output"])
            elif action == "import":
                self._import(file=Path(options["file"]), identity=Path(options["identity"]))
            elif action == "check":
                self._check(limit=options["limit"])
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

    def _export(self, *, recipients: list[str], output: str | None) -> None:
        armored = site_keys.keyring_export(recipients)
        count = len(site_keys.site_keys())
        if output is None:
            # Armored age is ASCII, and encrypted: safe on a terminal or in a pipe.
            self.stdout.write(armored.decode("ascii"), ending="")
            self.stderr.write(f"exported {count} site key(s)")
            return
        try:
            fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise CommandError(f"--output {output}: already exists; choose a new file name") from None
        except OSError as exc:
            raise CommandError(f"--output {output}: cannot create it: {exc.strerror}") from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(armored)
        self.stdout.write(f"exported {count} site key(s) to {output}")

    def _import(self, *, file: Path, identity: Path) -> None:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"{file}: cannot read it: {exc.strerror}") from None
        added = site_keys.keyring_import(data, site_keys.read_identity_file(identity))
        for key in added:
            self.stdout.write(f"imported site key {key.key_id} {key.public_key}")
        current = site_keys.site_keys()[-1]
        self.stdout.write(f"{len(added)} key(s) added; current key {current.key_id}")

    def _check(self, *, limit: int) -> None:
        """Open the newest stored bundles that were accepted: proof the keyring and the storage
        together still read what the database points at (run it after a restore)."""

        accepted = Submission.objects.filter(status=Submission.Status.DONE).exclude(verdict="rejected")
        failures = 0
        checked = 0
        for submission in accepted.order_by("-created_at")[: max(1, limit)]:
            checked += 1
            try:
                with bundle_local_path(submission.file.name) as path:
                    open_stored_bundle(path)
            except (BundleError, OSError) as exc:
                failures += 1
                code = getattr(exc, "code", type(exc).__name__)
                self.stdout.write(f"FAILED {submission.pk} {submission.file.name}: {code}")
                continue
            self.stdout.write(f"ok {submission.pk} {submission.file.name}")
        if failures:
            raise CommandError(f"{failures} of {checked} stored bundle(s) did not open")
        self.stdout.write(f"{checked} stored bundle(s) open with the site keys")
