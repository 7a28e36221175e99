"""Where a manifest's files come from: a directory or a zip archive (the only file I/O here).

Invariants: nothing under a ``reference/`` directory is ever opened, from a
directory or from a zip; a symlink never leads out of a manifest directory; a
zip's limits are checked on the real decompressed bytes, never on its headers.
"""

from __future__ import annotations

import io
import lzma
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from leaderboard.manifest.types import MAX_FILE_BYTES, RELEASE_FILE, ManifestError, Problem

__all__ = [
    "MAX_FILE_BYTES",
    "DirSource",
    "ManifestSource",
    "MemorySource",
    "ZipLimits",
    "read_manifest_dir",
    "read_manifest_zip",
]

# Read a zip member in pieces of this size, so an oversized one is stopped early.
_ZIP_CHUNK_BYTES = 64 * 1024


class ManifestSource:
    """Read access to the files of one manifest (leaderboard.manifest.types.ManifestFiles).

    Implementations never open anything under a ``reference/`` directory.
    """

    label: str = "manifest"

    def read(self, relpath: str, *, limit: int = MAX_FILE_BYTES) -> bytes | None:
        """The file's bytes, or None when it does not exist; more than ``limit`` bytes is a problem."""
        raise NotImplementedError

    def task_dirs(self) -> list[str]:
        """Names of the directories directly under ``tasks/``."""
        raise NotImplementedError

    def files_under(self, directory: str) -> list[str]:
        """The paths of every file below ``directory`` (at any depth), sorted. A ``reference/``
        folder among them is listed as its own path with a trailing slash ("…/reference/"),
        nothing inside it: its name is read, never its files."""
        raise NotImplementedError


def _is_hidden_reference(relpath: str) -> bool:
    return "reference" in PurePosixPath(relpath).parts


class DirSource(ManifestSource):
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.label = str(root)

    def read(self, relpath: str, *, limit: int = MAX_FILE_BYTES) -> bytes | None:
        if _is_hidden_reference(relpath):
            raise ManifestError([Problem(relpath, None, "", "the hidden reference/ tree is never read")])
        target = (self.root / relpath).resolve()
        # A symlink must not lead out of the manifest (e.g. to a reference tree elsewhere), nor
        # into the manifest's own hidden reference/ tree.
        if not target.is_relative_to(self.root):
            raise ManifestError([Problem(relpath, None, "", "points outside the manifest directory")])
        if _is_hidden_reference(target.relative_to(self.root).as_posix()):
            raise ManifestError(
                [Problem(relpath, None, "", "leads into the hidden reference/ tree, which is never read")]
            )
        if not target.is_file():
            return None
        size = target.stat().st_size
        if size > limit:
            raise ManifestError([Problem(relpath, None, "", f"is {size} bytes; at most {limit} are accepted")])
        return target.read_bytes()

    def task_dirs(self) -> list[str]:
        tasks = self.root / "tasks"
        if not tasks.is_dir():
            return []
        return sorted(entry.name for entry in tasks.iterdir() if entry.is_dir())

    def files_under(self, directory: str) -> list[str]:
        base = self.root / directory
        if _is_hidden_reference(directory) or not base.is_dir():
            return []
        found: list[str] = []
        # os.walk does not follow a symlinked directory; a symlinked file is listed, and read()
        # refuses it when it leads out of the manifest or into a reference/ tree.
        for folder, subdirs, names in os.walk(base):
            here = Path(folder).relative_to(self.root).as_posix()
            if "reference" in subdirs:
                found.append(f"{here}/reference/")  # named, never entered
            subdirs[:] = sorted(name for name in subdirs if name != "reference")
            found.extend(f"{here}/{name}" for name in names)
        return sorted(found)


class MemorySource(ManifestSource):
    def __init__(self, files: Mapping[str, bytes], label: str, *, hidden: Iterable[str] = ()) -> None:
        self.files = dict(files)
        self.label = label
        # Paths under a reference/ folder that a zip held and that were skipped unread: names only.
        self.hidden = frozenset(hidden)

    def read(self, relpath: str, *, limit: int = MAX_FILE_BYTES) -> bytes | None:
        # A zip's members were bounded while unpacking (ZipLimits); ``limit`` adds nothing.
        return self.files.get(relpath)

    def task_dirs(self) -> list[str]:
        names = set()
        for name in self.files:
            parts = PurePosixPath(name).parts
            if len(parts) >= 3 and parts[0] == "tasks":
                names.add(parts[1])
        return sorted(names)

    def files_under(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        found = {name for name in self.files if name.startswith(prefix) and not _is_hidden_reference(name)}
        for name in self.hidden:
            if name.startswith(prefix):
                parts = PurePosixPath(name).parts
                found.add("/".join(parts[: parts.index("reference") + 1]) + "/")
        return sorted(found)


def read_manifest_dir(path: str | Path) -> ManifestSource:
    """A manifest directory as a source (files are read lazily, ``reference/`` never)."""
    root = Path(path)
    if not root.is_dir():
        raise ManifestError([Problem(str(path), None, "", "expected a manifest directory containing release.yaml")])
    return DirSource(root)


@dataclass(frozen=True)
class ZipLimits:
    """Bounds on an uploaded manifest archive (checked on the real decompressed bytes)."""

    max_members: int = 1000
    max_file_bytes: int = MAX_FILE_BYTES
    max_total_bytes: int = 32 * 1024 * 1024


def _zip_member_problem(name: str, info: zipfile.ZipInfo) -> str | None:
    if "\x00" in name or "\\" in name:
        return "has a malformed name (NUL or backslash)"
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        return "is an absolute path; expected paths relative to the manifest"
    if ".." in PurePosixPath(name).parts:
        return "climbs out of the manifest (..); refused"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "is a symbolic link; refused"
    if info.flag_bits & 0x1:
        return "is encrypted; expected a plain zip"
    return None


def read_manifest_zip(
    data: bytes | BinaryIO, *, limits: ZipLimits | None = None, label: str = "upload.zip"
) -> ManifestSource:
    """Read a zipped manifest into memory, safely.

    Refuses absolute paths, ``..``, symlinks, encrypted members, more than
    ``limits.max_members`` members and more bytes than the limits allow
    (counted while decompressing, never trusting the headers). Members under
    ``reference/`` are skipped without being decompressed. A zip of the
    directory itself (one top-level folder holding release.yaml) is accepted.
    """
    limits = limits or ZipLimits()
    stream = io.BytesIO(data) if isinstance(data, bytes | bytearray) else data
    try:
        archive = zipfile.ZipFile(stream)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise ManifestError(
            [Problem(label, None, "", "is not a zip archive; expected a .zip of the manifest directory")]
        ) from None
    with archive:
        infos = archive.infolist()
        _check_members(infos, limits, label)
        members = [info for info in infos if not info.is_dir()]
        prefix = _root_prefix({info.filename for info in members})
        files = _unpack(archive, members, prefix, limits, label)
        hidden = [
            info.filename[len(prefix) :]
            for info in members
            if info.filename.startswith(prefix) and _is_hidden_reference(info.filename[len(prefix) :])
        ]
    return MemorySource(files, label, hidden=hidden)


def _check_members(infos: list[zipfile.ZipInfo], limits: ZipLimits, label: str) -> None:
    """Refuse the archive, naming every bad member, before anything is decompressed."""
    if len(infos) > limits.max_members:
        raise ManifestError(
            [Problem(label, None, "", f"has {len(infos)} members; at most {limits.max_members} are accepted")]
        )
    problems = [
        Problem(info.filename, None, "", reason)
        for info in infos
        if (reason := _zip_member_problem(info.filename, info)) is not None
    ]
    seen: set[str] = set()
    for info in infos:
        # Which of two same-named members wins differs between unzip tools; refuse the ambiguity.
        if info.filename in seen:
            problems.append(Problem(info.filename, None, "", "appears twice in the archive; refused"))
        seen.add(info.filename)
    if problems:
        raise ManifestError(problems)


def _root_prefix(names: set[str]) -> str:
    """ "" for a zip of the manifest's contents; "<folder>/" for a zip of the directory itself."""
    if RELEASE_FILE in names:
        return ""
    tops = {PurePosixPath(name).parts[0] for name in names if len(PurePosixPath(name).parts) > 1}
    if len(tops) == 1 and f"{next(iter(tops))}/{RELEASE_FILE}" in names:
        return f"{next(iter(tops))}/"
    return ""


def _skipped(relpath: str) -> bool:
    """Never unpacked: the hidden reference tree, and macOS archive litter."""
    parts = PurePosixPath(relpath).parts
    return not parts or _is_hidden_reference(relpath) or parts[0] == "__MACOSX" or parts[-1] == ".DS_Store"


def _unpack(
    archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], prefix: str, limits: ZipLimits, label: str
) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    total = 0
    for info in members:
        if not info.filename.startswith(prefix):
            continue
        relpath = info.filename[len(prefix) :]
        if _skipped(relpath):
            continue
        content = _read_member(archive, info, limits.max_file_bytes)
        if content is None:
            raise ManifestError([Problem(relpath, None, "", f"is larger than {limits.max_file_bytes} bytes; refused")])
        total += len(content)
        if total > limits.max_total_bytes:
            raise ManifestError(
                [Problem(label, None, "", f"unpacks to more than {limits.max_total_bytes} bytes; refused")]
            )
        files[relpath] = content
    return files


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes | None:
    chunks = []
    size = 0
    try:
        with archive.open(info) as member:
            while chunk := member.read(_ZIP_CHUNK_BYTES):
                size += len(chunk)
                if size > limit:
                    return None
                chunks.append(chunk)
    # zlib.error and LZMAError: a member whose compressed data is damaged (a 500 before).
    except (
        zipfile.BadZipFile,
        OSError,
        RuntimeError,
        NotImplementedError,
        EOFError,
        zlib.error,
        lzma.LZMAError,
    ) as exc:
        raise ManifestError([Problem(info.filename, None, "", f"cannot be decompressed ({exc})")]) from None
    return b"".join(chunks)
