"""The site's age (X25519) identities: bundles are sealed to the current one.

Where the secrets live: a keyring file (settings.PODIUM_SITE_KEYS_FILE, one
``AGE-SECRET-KEY-...`` line per key, oldest first, ``#`` comments allowed,
mode 0600) or, when set, the PODIUM_SITE_KEYS environment variable holding the
same lines (newline- or comma-separated). Never the repository, never the
database. The newest key (last line) is the current one that uploads are sealed
to; every older key still decrypts, so a rotation never strands a bundle that
was sealed before it.

A key id is the first 16 hex characters of the SHA-256 of the public
``age1...`` recipient string: stable, public, and safe to print.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import pyrage
from django.conf import settings

SECRET_PREFIX = "AGE-SECRET-KEY-"  # noqa: S105 -- a format prefix, not a secret


class SiteKeyError(Exception):
    """The keyring is missing, unreadable or holds something that is not an age identity."""


@dataclass(frozen=True)
class SiteKey:
    key_id: str
    public_key: str  # the age1... recipient
    identity: pyrage.x25519.Identity


def key_id_for(public_key: str) -> str:
    return hashlib.sha256(public_key.encode("ascii")).hexdigest()[:16]


def _keyring_text() -> tuple[str, str]:
    """The raw keyring and a description of where it came from (for error messages)."""
    if settings.PODIUM_SITE_KEYS:
        return settings.PODIUM_SITE_KEYS, "the PODIUM_SITE_KEYS environment variable"
    path = Path(settings.PODIUM_SITE_KEYS_FILE)
    try:
        return path.read_text(encoding="ascii"), str(path)
    except FileNotFoundError:
        raise SiteKeyError(
            f"no site keys: {path} does not exist and PODIUM_SITE_KEYS is not set "
            "(run `python manage.py site_keys generate`)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SiteKeyError(f"cannot read the site keyring {path}: {exc}") from None


def parse_keyring(text: str, *, source: str = "keyring") -> list[SiteKey]:
    """Every identity in a keyring text, oldest first. Raises SiteKeyError naming the bad line."""
    keys: list[SiteKey] = []
    for number, raw in enumerate(text.replace(",", "\n").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not line.startswith(SECRET_PREFIX):
            raise SiteKeyError(f"{source}, entry {number}: expected an {SECRET_PREFIX}... line")
        try:
            identity = pyrage.x25519.Identity.from_str(line)
        except Exception:  # pyrage raises IdentityError/ValueError depending on the defect
            raise SiteKeyError(f"{source}, entry {number}: not a valid age X25519 identity") from None
        public = str(identity.to_public())
        keys.append(SiteKey(key_id=key_id_for(public), public_key=public, identity=identity))
    return keys


def site_keys() -> list[SiteKey]:
    """All site keys, oldest first; raises SiteKeyError when there are none."""
    text, source = _keyring_text()
    keys = parse_keyring(text, source=source)
    if not keys:
        raise SiteKeyError(f"no site keys in {source} (run `python manage.py site_keys generate`)")
    return keys


def current_public_key() -> tuple[str, str]:
    """(key_id, age1... recipient) of the newest key: what uploads are sealed to."""
    newest = site_keys()[-1]
    return newest.key_id, newest.public_key


def all_identities() -> list[pyrage.x25519.Identity]:
    """Every identity, newest first (the likeliest to match is tried first)."""
    return [key.identity for key in reversed(site_keys())]


def keyring_append_new_key() -> SiteKey:
    """Generate a fresh identity and append it to the keyring file (the rotate/generate step).

    Refuses when the keys come from the environment: that keyring is managed
    wherever the environment is, not by this process.
    """
    if settings.PODIUM_SITE_KEYS:
        raise SiteKeyError("site keys come from PODIUM_SITE_KEYS; add the new key there, not to a file")
    path = Path(settings.PODIUM_SITE_KEYS_FILE)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    identity = pyrage.x25519.Identity.generate()
    public = str(identity.to_public())
    # O_CREAT with 0600 so the secret is never world-readable, not even for an instant.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="ascii") as handle:
        handle.write(f"# public key: {public}\n{identity}\n")
    Path(path).chmod(0o600)
    return SiteKey(key_id=key_id_for(public), public_key=public, identity=identity)


# ------------------------------------------------------------ backup and restore


def keyring_export(recipients: list[str]) -> bytes:
    """The whole keyring (every identity, oldest first), age-encrypted to the operator's own
    recipients, ASCII-armored. Without these identities every stored bundle is undecryptable,
    so this is the one backup that cannot be recreated; it is only ever written encrypted."""
    if not recipients:
        raise SiteKeyError("give at least one --recipient (the operator's own age1... public key)")
    parsed = []
    for recipient in recipients:
        try:
            parsed.append(pyrage.x25519.Recipient.from_str(recipient.strip()))
        except Exception:
            raise SiteKeyError(f"--recipient {recipient[:80]!r}: not an age X25519 recipient (age1...)") from None
    keys = site_keys()
    lines = ["# Podium site keys (oldest first; the last is the current key)"]
    for key in keys:
        # No commas in comments: parse_keyring also splits on commas (the environment form).
        lines += [f"# key id {key.key_id} public key {key.public_key}", str(key.identity)]
    return pyrage.encrypt(("\n".join(lines) + "\n").encode("ascii"), parsed, armored=True)


def read_identity_file(path: Path) -> list[pyrage.x25519.Identity]:
    """An age identity file (``age-keygen`` output: AGE-SECRET-KEY lines, ``#`` comments)."""
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise SiteKeyError(f"--identity {path}: cannot read it: {exc}") from None
    identities = [key.identity for key in parse_keyring(text, source=f"--identity {path}")]
    if not identities:
        raise SiteKeyError(f"--identity {path}: no AGE-SECRET-KEY line in it")
    return identities


def keyring_import(data: bytes, identities: list[pyrage.x25519.Identity]) -> list[SiteKey]:
    """Decrypt an exported keyring and add the keys the keyring file lacks; returns those added.

    Keys already present stay where they are; missing ones are appended in the exported
    order, so after restoring onto a fresh host the exported current key is current again
    (clients may still seal to it). Refused when the keys come from PODIUM_SITE_KEYS.
    """
    if settings.PODIUM_SITE_KEYS:
        raise SiteKeyError(
            "site keys come from PODIUM_SITE_KEYS; decrypt the export with `age -d -i IDENTITY FILE` and put "
            "its AGE-SECRET-KEY lines there"
        )
    try:
        text = pyrage.decrypt(data, identities).decode("ascii")
    except pyrage.DecryptError:
        raise SiteKeyError("the export does not open with the given identity (or it is not an age file)") from None
    except UnicodeDecodeError:
        raise SiteKeyError("the export decrypts to something that is not a keyring") from None
    imported = parse_keyring(text, source="the export")
    if not imported:
        raise SiteKeyError("the export holds no site keys")
    path = Path(settings.PODIUM_SITE_KEYS_FILE)
    try:
        existing = {key.key_id for key in parse_keyring(path.read_text(encoding="ascii"), source=str(path))}
    except FileNotFoundError:
        existing = set()
    added = [key for key in imported if key.key_id not in existing]
    if added:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="ascii") as handle:
            for key in added:
                handle.write(f"# public key: {key.public_key} (imported)\n{key.identity}\n")
        Path(path).chmod(0o600)
    return added
