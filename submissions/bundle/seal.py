"""Seal a bundle directory: write manifest.json's members map, tar (+zstd), age-encrypt.

``seal`` writes the ``members`` map itself (the SHA-256 of every file but
manifest.json), so a harness only has to write its files; it cannot get the
hashes wrong.  Everything streams through temp files: a large artifact is
never held in memory.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from submissions.bundle.archive import write_archive
from submissions.bundle.envelope import seal_file
from submissions.bundle.errors import BundleError
from submissions.bundle.strict_json import parse_json

__all__ = ["MembersDrift", "directory_members", "members_drift", "seal_dir", "write_members"]

MANIFEST = "manifest.json"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def directory_members(directory: str | os.PathLike[str]) -> dict[str, Path]:
    """Relative POSIX name -> path of every regular file under ``directory``.

    Symlinks and special files are refused (they could not be sealed safely).
    """
    root = Path(directory)
    if not (root / MANIFEST).is_file():
        raise BundleError("missing_member", f"{root}/{MANIFEST}: missing; a bundle directory starts with its manifest")
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            raise BundleError("link_member", f"{rel}: is a symbolic link; only regular files can be sealed")
        if path.is_dir():
            continue
        if not path.is_file():
            raise BundleError("special_member", f"{rel}: is not a regular file")
        out[rel] = path
    return out


def computed_members(directory: str | os.PathLike[str]) -> dict[str, str]:
    """The members map ``seal`` would write: name -> SHA-256 (manifest.json excluded)."""
    return {name: _sha256_file(path) for name, path in directory_members(directory).items() if name != MANIFEST}


@dataclass(frozen=True)
class MembersDrift:
    """How a members map as written differs from the files it describes, each kind with the
    code a server gives a bundle packed with that map (docs/bundle-format.md section 2)."""

    changed: tuple[str, ...] = ()  # listed with another SHA-256 than the file's: member_hash_mismatch
    unlisted: tuple[str, ...] = ()  # a file the map does not list: unexpected_member
    absent: tuple[str, ...] = ()  # listed, but no such file: missing_member

    def __bool__(self) -> bool:
        return bool(self.changed or self.unlisted or self.absent)


def members_drift(written: object, files: Mapping[str, str]) -> MembersDrift:
    """Compare manifest.json's ``members`` as ``written`` with ``files`` (name -> SHA-256 of
    every file but manifest.json, what ``seal`` would write). Anything but a map of names
    counts as listing nothing."""
    listed = written if isinstance(written, Mapping) else {}
    return MembersDrift(
        changed=tuple(sorted(name for name in files if name in listed and listed[name] != files[name])),
        unlisted=tuple(sorted(name for name in files if name not in listed)),
        absent=tuple(sorted(str(name) for name in listed if name not in files)),
    )


def write_members(directory: str | os.PathLike[str]) -> dict[str, str]:
    """Rewrite manifest.json's ``members`` from the files on disk; return the map."""
    path = Path(directory) / MANIFEST
    doc = parse_json(path.read_bytes(), member=MANIFEST)
    if not isinstance(doc, dict):
        raise BundleError("schema_error", f"{MANIFEST}: the document must be an object")
    members = computed_members(directory)
    doc["members"] = members
    path.write_text(json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8")
    return members


def seal_dir(
    directory: str | os.PathLike[str],
    recipients: str | Sequence[str],
    dest: str | os.PathLike[str],
    *,
    compress: bool = True,
    update_members: bool = True,
) -> Path:
    """Seal ``directory`` into the age file ``dest`` for ``recipients`` (age1...).

    With ``update_members`` (the default, what the CLI does) manifest.json's
    members map is rewritten first; pass False to seal the files exactly as
    they are (tests that tamper after hashing).
    """
    if isinstance(recipients, str):
        recipients = [recipients]
    if update_members:
        write_members(directory)
    members = directory_members(directory)
    dest_path = Path(dest)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "bundle.tar"
        write_archive(dict(members.items()), archive, compress=compress)
        seal_file(archive, dest_path, list(recipients))
    return dest_path
