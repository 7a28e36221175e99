"""Reading (and writing) the tar inside the envelope, as a stream, with limits.

Members are read one by one from the decrypted temp file -- through zstd
when the payload starts with the zstd magic -- and never extracted to disk.
JSON members are kept in memory (they are bounded by
``Limits.max_json_member_bytes``); every other member (``artifacts/...``) is
only hashed, so memory stays flat whatever the archive size.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import zstandard

from submissions.bundle.errors import BundleError

__all__ = [
    "DEFAULT_LIMITS",
    "ZSTD_MAGIC",
    "Limits",
    "Member",
    "iter_members",
    "write_archive",
]

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# zstd skippable frame: magic 0x184D2A50 (little-endian) + 4-byte length + payload.
_SKIPPABLE_MAGIC = (0x184D2A50).to_bytes(4, "little")
_SKIPPABLE_HEADER = 8
_READ_CHUNK = 64 * 1024
_MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Resource limits applied while opening one bundle (all in bytes unless named)."""

    # The encrypted file as uploaded: the cheapest check, made before any work.
    max_bundle_bytes: int = 256 * _MiB
    # Bounds per-member bookkeeping and the time spent walking headers; a
    # real bundle has a few JSON files per task plus some artifacts.
    max_members: int = 2000
    # A single member of any kind (artifacts are hashed while streaming).
    max_member_bytes: int = 256 * _MiB
    # JSON members are parsed in memory: this bounds the parser's memory.
    max_json_member_bytes: int = 16 * _MiB
    # Everything the tar stream expands to; bounds disk-free CPU work and
    # stops a bomb that stays under the ratio but is simply huge.
    max_total_bytes: int = 1024 * _MiB
    # Decompressed / compressed bytes; legitimate JSON plus tar padding stays
    # far below this, a decompression bomb (zeros) goes far above it.
    max_compression_ratio: int = 200
    # The ratio is only judged past this much output, so that tiny archives
    # (mostly tar padding) never trip it.
    ratio_grace_bytes: int = 4 * _MiB
    # One tar header's own data: a pax extended header (x, g, X) or a GNU long
    # name / long link (L, K). tarfile reads such a header whole, into memory, before
    # any member limit applies, so it is checked before it is read. A path is at most
    # a few KiB (PATH_MAX is 4096) and a member's pax records (path, linkpath, size,
    # times, owner) fit far below this.
    max_header_bytes: int = 64 * 1024
    # Extended headers in front of one member: a real writer emits at most a pax
    # header plus a long name and a long link; a chain of thousands would be read
    # recursively (and exhaust the stack) before reaching any member.
    max_headers_per_member: int = 8
    # All extended headers of the archive together: global pax headers (g) accumulate
    # for the whole archive, so their sum is bounded too. 2000 members x 2 KiB of
    # long names stays under it.
    max_total_header_bytes: int = 8 * _MiB


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Member:
    """One regular-file member: its name, size, SHA-256 and (JSON only) bytes."""

    name: str
    size: int
    sha256: str
    data: bytes | None


class _CountingReader(io.RawIOBase):
    """Counts the bytes read from the underlying (compressed) file."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    # RawIOBase types the buffer as any writable buffer; BufferedReader hands a memoryview.
    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self.count += n
        return n


class _LimitedStream(io.RawIOBase):
    """The tar byte stream, with the total-size and ratio limits enforced."""

    def __init__(self, source: IO[bytes], counter: _CountingReader | None, limits: Limits, name: str) -> None:
        self.source = source
        self.counter = counter
        self.limits = limits
        self.name = name
        self.produced = 0

    def readable(self) -> bool:
        return True

    # RawIOBase types the buffer as any writable buffer; BufferedReader hands a memoryview.
    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        try:
            data = self.source.read(len(buffer))
        except zstandard.ZstdError as exc:
            raise BundleError("invalid_archive", f"{self.name}: the zstd stream is corrupt ({exc})") from None
        n = len(data)
        buffer[:n] = data
        self.produced += n
        self._check()
        return n

    def _check(self) -> None:
        limits = self.limits
        if self.produced > limits.max_total_bytes:
            if self.counter is not None:
                raise BundleError(
                    "decompression_bomb",
                    f"{self.name}: the compressed archive expands to more than {limits.max_total_bytes} bytes",
                )
            raise BundleError("too_large", f"{self.name}: the archive is larger than {limits.max_total_bytes} bytes")
        if self.counter is not None and self.produced > limits.ratio_grace_bytes:
            ratio = self.produced / max(self.counter.count, 1)
            if ratio > limits.max_compression_ratio:
                raise BundleError(
                    "decompression_bomb",
                    f"{self.name}: the compressed archive expands more than {limits.max_compression_ratio} times "
                    f"({self.counter.count} bytes became over {self.produced})",
                )


# Header types whose data tarfile reads into memory: pax extended/global (and Solaris'),
# GNU long name and long link.
_EXTENDED_HEADER_TYPES = (
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
)


class _HeaderRefused(Exception):
    """A tar header refused before tarfile read it (code and detail, without the bundle's name)."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


class _BoundedTarInfo(tarfile.TarInfo):
    """A TarInfo that checks every header's size before tarfile reads its data.

    ``_proc_member`` is tarfile's documented extension point ("can be overridden in a
    subclass"): it runs once per 512-byte header block, after the block is parsed and
    before the header's data is read, including for the headers that follow a pax or
    GNU long-name header (tarfile reads those through the same class). ``limits`` is set
    on a per-archive subclass (see ``_tarinfo_class``); the counters live on the TarFile.
    """

    limits: Limits = DEFAULT_LIMITS

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        limits = self.limits
        state = tarfile_.__dict__.setdefault("_podium_headers", {"chain": 0, "total": 0})
        if self.type == tarfile.GNUTYPE_SPARSE:
            # Its extension blocks are read in a loop into a list: refused, like every sparse member.
            raise _HeaderRefused("special_member", _special_member(self.name))
        if self.type in _EXTENDED_HEADER_TYPES:
            if self.size > limits.max_header_bytes:
                raise _HeaderRefused(
                    "header_too_large",
                    f"a tar extended header (type {self.type.decode('ascii', 'replace')!r}) of {self.size} bytes, "
                    f"more than the limit of {limits.max_header_bytes} bytes",
                )
            state["chain"] += 1
            state["total"] += self.size
            if state["chain"] > limits.max_headers_per_member:
                raise _HeaderRefused(
                    "too_many_headers",
                    f"more than {limits.max_headers_per_member} extended tar headers in front of one member",
                )
            if state["total"] > limits.max_total_header_bytes:
                raise _HeaderRefused(
                    "too_many_headers",
                    f"the archive's extended tar headers add up to more than {limits.max_total_header_bytes} bytes",
                )
        else:
            state["chain"] = 0
        # A private hook of tarfile's reader, absent from typeshed's TarInfo.
        member: tarfile.TarInfo = super()._proc_member(tarfile_)  # type: ignore[misc]
        return member

    # Sparse maps in pax headers (GNU sparse 0.0, 0.1, 1.0; 1.0 reads its map from the member's
    # data, as long as it says): refused before any map is read.
    def _proc_gnusparse_00(self, member: tarfile.TarInfo, *args: object) -> None:
        raise _HeaderRefused("special_member", _special_member(member.name))

    _proc_gnusparse_01 = _proc_gnusparse_00
    _proc_gnusparse_10 = _proc_gnusparse_00


def _special_member(member_name: str) -> str:
    return f"member {member_name!r} is not a regular file (device, FIFO or other special file)"


def _tarinfo_class(limits: Limits) -> type[tarfile.TarInfo]:
    return type("BoundedTarInfo", (_BoundedTarInfo,), {"limits": limits})


def _safe_name(raw: str, name: str) -> str:
    """Normalise ``raw`` ("./a/b" -> "a/b") or raise unsafe_path."""
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        # tarfile decodes names with surrogateescape: bytes that are not UTF-8 come back as lone
        # surrogates, which no database column (and no JSON diff) can store. Shown escaped.
        try:
            shown = raw.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate that did not come from a raw byte
            shown = raw.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        raise BundleError(
            "invalid_member_name",
            f"{name}: member name '{shown[:120]}' is not valid UTF-8; member names must be UTF-8 paths",
        ) from None
    if "\x00" in raw or "\\" in raw:
        raise BundleError("unsafe_path", f"{name}: member {raw!r} has a NUL or backslash in its name")
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise BundleError("unsafe_path", f"{name}: member {raw!r} has an absolute path; use paths relative to the root")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise BundleError("unsafe_path", f"{name}: member {raw!r} contains '..'; paths must stay inside the archive")
    return "/".join(parts)


def iter_members(
    payload: IO[bytes],
    *,
    limits: Limits = DEFAULT_LIMITS,
    name: str = "bundle",
    extract_to: str | os.PathLike[str] | None = None,
) -> Iterator[Member]:
    """Yield every regular-file member of the (decrypted) tar or tar.zst stream.

    Directory entries are skipped.  ``extract_to`` (the CLI's ``open -o``
    only; the server never extracts) also streams each member, after its name
    passed the safety checks, to a file under that directory.  Raises BundleError: invalid_archive,
    too_many_members, unsafe_path, link_member, special_member,
    duplicate_member, too_large, decompression_bomb, header_too_large, too_many_headers.
    Every tar header is bounded before it is read (``Limits.max_header_bytes`` and the two
    header counts), so no header shape can make this hold more than that in memory.
    """
    tar = _open_tar(payload, limits, name)
    seen: set[str] = set()
    count = 0
    try:
        while (info := _next_header(tar, name)) is not None:
            count += 1
            if count > limits.max_members:
                raise BundleError("too_many_members", f"{name}: the archive has more than {limits.max_members} members")
            member_name = _checked_member_name(info, name)
            if member_name is None:
                continue
            if member_name in seen:
                raise BundleError("duplicate_member", f"{name}: member {member_name!r} appears twice in the archive")
            seen.add(member_name)
            keep = member_name.endswith(".json")
            _check_member_size(info, member_name, keep, limits, name)
            target = None if extract_to is None else Path(extract_to, *member_name.split("/"))
            yield _read_member(tar, info, member_name, keep, name, target)
    finally:
        tar.close()


def _open_tar(payload: IO[bytes], limits: Limits, name: str) -> tarfile.TarFile:
    """The tar reader over ``payload`` (zstd-compressed or not), every byte counted against ``limits``."""
    magic = payload.read(4)
    payload.seek(0)
    counter: _CountingReader | None = None
    source: IO[bytes]
    if magic == ZSTD_MAGIC:
        counter = _CountingReader(payload)
        # Across frames: multi-frame writers (pzstd) work, and the skippable
        # frame `seal` pads with (see write_archive) is skipped by zstd itself.
        source = zstandard.ZstdDecompressor().stream_reader(
            io.BufferedReader(counter, _READ_CHUNK), read_across_frames=True
        )
    else:
        source = payload
    stream = io.BufferedReader(_LimitedStream(source, counter, limits, name), _READ_CHUNK)
    try:
        # Closed by the caller (iter_members, in its finally).
        return tarfile.open(fileobj=stream, mode="r|", tarinfo=_tarinfo_class(limits))
    except tarfile.TarError:
        raise BundleError("invalid_archive", f"{name}: the decrypted payload is not a tar or tar.zst archive") from None
    except _HeaderRefused as refused:
        raise BundleError(refused.code, f"{name}: {refused.detail}") from None


def _next_header(tar: tarfile.TarFile, name: str) -> tarfile.TarInfo | None:
    """The next member's header, None at the end; a damaged or refused header is a BundleError."""
    try:
        return tar.next()
    except tarfile.TarError as exc:
        raise BundleError("invalid_archive", f"{name}: the tar archive is damaged ({exc})") from None
    except _HeaderRefused as refused:
        raise BundleError(refused.code, f"{name}: {refused.detail}") from None


def _checked_member_name(info: tarfile.TarInfo, name: str) -> str | None:
    """The member's safe name; None for a directory entry (skipped); links, special files
    and empty names refused."""
    member_name = _safe_name(info.name, name)
    if info.issym() or info.islnk():
        raise BundleError(
            "link_member",
            f"{name}: member {info.name!r} is a {'symbolic' if info.issym() else 'hard'} link; "
            "only regular files are allowed",
        )
    if info.isdir():
        return None
    if not info.isfile() or info.issparse():
        # A sparse member expands holes to zeros locally, outside the
        # byte-count limits: refused like any special file.
        raise BundleError("special_member", f"{name}: {_special_member(info.name)}")
    if not member_name:
        raise BundleError("unsafe_path", f"{name}: member {info.name!r} has an empty name")
    return member_name


def _check_member_size(info: tarfile.TarInfo, member_name: str, keep: bool, limits: Limits, name: str) -> None:
    """The member's declared size within the limit (the tighter JSON limit for a kept .json member)."""
    if info.size > limits.max_member_bytes:
        raise BundleError(
            "too_large",
            f"{name}: member {member_name!r} has {info.size} bytes, more than the limit of "
            f"{limits.max_member_bytes} bytes",
        )
    if keep and info.size > limits.max_json_member_bytes:
        raise BundleError(
            "too_large",
            f"{name}: JSON member {member_name!r} has {info.size} bytes, more than the limit of "
            f"{limits.max_json_member_bytes} bytes",
        )


def _read_member(
    tar: tarfile.TarFile, info: tarfile.TarInfo, member_name: str, keep: bool, name: str, target: Path | None
) -> Member:
    handle = tar.extractfile(info)
    if handle is None:  # pragma: no cover -- isfile() members always have a handle
        raise BundleError("invalid_archive", f"{name}: member {member_name!r} cannot be read")
    digest = hashlib.sha256()
    parts: list[bytes] = []
    size = 0
    out: IO[bytes] | None = None
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        out = open(target, "xb")  # noqa: SIM115 -- closed in finally; "x": never overwrite
    try:
        while True:
            chunk = handle.read(_READ_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            digest.update(chunk)
            if keep:
                parts.append(chunk)
            if out is not None:
                out.write(chunk)
    except tarfile.TarError as exc:
        raise BundleError("invalid_archive", f"{name}: member {member_name!r} is damaged ({exc})") from None
    finally:
        if out is not None:
            out.close()
    if size != info.size:
        raise BundleError(
            "invalid_archive", f"{name}: member {member_name!r} is cut short ({size} of {info.size} bytes)"
        )
    return Member(name=member_name, size=size, sha256=digest.hexdigest(), data=b"".join(parts) if keep else None)


def write_archive(
    members: Mapping[str, bytes | os.PathLike[str]],
    dest: str | os.PathLike[str],
    *,
    compress: bool = True,
    level: int = 3,
) -> None:
    """Write a deterministic tar (or tar.zst) of ``members`` to ``dest``.

    Values are bytes or paths of files to stream in.  Names are sorted,
    mtime/uid/gid are 0, mode 0644, so sealing the same directory twice gives
    the same plaintext.  A zstd payload is padded to a multiple of 512 bytes
    with a zstd skippable frame (ignored by every zstd reader; it lets a
    cut-short file be told apart from an altered one, see
    envelope._payload_failure).
    """
    with open(dest, "wb") as raw:
        if compress:
            writer = zstandard.ZstdCompressor(level=level).stream_writer(raw, closefd=False)
            target: IO[bytes] = writer
        else:
            target = raw
        with tarfile.open(fileobj=target, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            for member_name in sorted(members):
                value = members[member_name]
                info = tarfile.TarInfo(member_name)
                info.mtime = 0
                info.mode = 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if isinstance(value, bytes | bytearray):
                    info.size = len(value)
                    tar.addfile(info, io.BytesIO(value))
                else:
                    path = Path(value)
                    info.size = path.stat().st_size
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
        if compress:
            writer.flush(zstandard.FLUSH_FRAME)
            writer.close()  # type: ignore[no-untyped-call]  # zstandard's stub leaves close() unannotated
            pad = -raw.tell() % 512
            if pad:
                if pad < _SKIPPABLE_HEADER:
                    pad += 512
                body = pad - _SKIPPABLE_HEADER
                raw.write(_SKIPPABLE_MAGIC + body.to_bytes(4, "little") + b"\x00" * body)
