"""The age envelope (https://age-encryption.org/v1) with X25519 recipients.

All cryptography is pyrage's (bindings to the Rust ``age`` crate).  This
module only streams files through it and turns its terse exceptions into
stable :class:`BundleError` codes.

Decryption is file to file: the ciphertext is read from disk and the
plaintext written to an anonymous temporary file, so memory stays flat
whatever the bundle size.  The plaintext is only used after age has
authenticated every chunk (a failure anywhere discards the temp file).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

import pyrage
from pyrage import x25519

from submissions.bundle.errors import BundleError

__all__ = [
    "AGE_ARMOR_MAGIC",
    "AGE_MAGIC",
    "decrypt_to_tempfile",
    "generate_identity",
    "parse_identities",
    "parse_recipient",
    "seal_file",
]

AGE_MAGIC = b"age-encryption.org/v1\n"
AGE_ARMOR_MAGIC = b"-----BEGIN AGE ENCRYPTED FILE-----"
AGE_ARMOR_END = b"-----END AGE ENCRYPTED FILE-----"
# age STREAM: a 16-byte nonce, then 64 KiB plaintext chunks each followed by a
# 16-byte Poly1305 tag (https://age-encryption.org/v1, "payload").
_NONCE = 16
_TAG = 16
_CHUNK = 64 * 1024
_SEALED_CHUNK = _CHUNK + _TAG
# A tar archive is always a whole number of 512-byte blocks, and `seal` pads
# zstd payloads to 512 too; used to tell a cut-short file from an altered one.
_BLOCK = 512


def generate_identity() -> tuple[str, str]:
    """A new age X25519 identity: ``(AGE-SECRET-KEY-1..., age1...)``."""
    identity = x25519.Identity.generate()
    return str(identity), str(identity.to_public())


def parse_recipient(text: str) -> x25519.Recipient:
    """An ``age1...`` public key, or ValueError with a readable message."""
    try:
        return x25519.Recipient.from_str(text.strip())
    except Exception as exc:  # pyrage raises its own RecipientError
        raise ValueError(f"not an age X25519 recipient (age1...): {text.strip()[:20]!r}") from exc


def parse_identities(keys: Iterable[str]) -> list[x25519.Identity]:
    """Identities from AGE-SECRET-KEY strings or key-file texts.

    Blank lines and ``#`` comments (as written by ``age-keygen``) are skipped,
    so the content of an identity file can be passed as is.
    """
    identities: list[x25519.Identity] = []
    for blob in keys:
        for raw_line in str(blob).splitlines():
            line = raw_line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                identities.append(x25519.Identity.from_str(line))
            except Exception as exc:
                raise ValueError("not an age X25519 identity (AGE-SECRET-KEY-1...)") from exc
    if not identities:
        raise ValueError("no age identity given")
    return identities


def seal_file(src: str | os.PathLike[str], dest: str | os.PathLike[str], recipients: Sequence[str]) -> None:
    """Encrypt ``src`` to ``dest`` for ``recipients`` (age1... strings), streaming."""
    parsed = [parse_recipient(r) for r in recipients]
    with open(src, "rb") as reader, open(dest, "wb") as writer:
        pyrage.encrypt_io(reader, writer, parsed)


def _header_length(head: bytes) -> int | None:
    """Offset just past the ``--- <mac>`` line, or None if not found."""
    marker = head.find(b"\n--- ")
    if marker < 0:
        return None
    end = head.find(b"\n", marker + 1)
    return None if end < 0 else end + 1


def _payload_failure(path: Path, size: int, plaintext_written: int, name: str) -> BundleError:
    """Classify an authentication failure of the payload as truncated or corrupted.

    A failed chunk before the last one can only be an altered byte.  For the
    last chunk the two are cryptographically indistinguishable, so the
    lengths decide: a cut-short file leaves a nonce or a tag incomplete, or a
    plaintext that is not a whole number of 512-byte blocks (every tar is).
    """
    with open(path, "rb") as f:
        head = f.read(64 * 1024)
        f.seek(max(0, size - 128))
        tail = f.read()
    header = _header_length(head)
    truncated = BundleError(
        "truncated",
        f"{name}: the encrypted payload ends early (the file was cut short, {size} bytes); upload the complete file",
    )
    corrupted = BundleError(
        "corrupted",
        f"{name}: the encrypted payload failed authentication at byte {plaintext_written} of the plaintext: "
        "the file was altered after sealing",
    )
    if head.startswith(AGE_ARMOR_MAGIC):
        # ASCII armor: a complete file ends with the END line.
        return corrupted if tail.rstrip().endswith(AGE_ARMOR_END) else truncated
    if header is None:
        return corrupted
    body = size - header - _NONCE
    if body <= _TAG:
        return truncated
    chunks = -(-body // _SEALED_CHUNK)
    failed_chunk = plaintext_written // _CHUNK
    if failed_chunk < chunks - 1:
        return corrupted
    last = body - (chunks - 1) * _SEALED_CHUNK
    if last <= _TAG:
        return truncated
    plaintext = body - chunks * _TAG
    return truncated if plaintext % _BLOCK else corrupted


def decrypt_to_tempfile(
    path: str | os.PathLike[str],
    identities: Sequence[x25519.Identity],
    *,
    max_bytes: int,
    name: str = "bundle",
    tmp_dir: str | None = None,
) -> IO[bytes]:
    """Decrypt the age file at ``path`` into an anonymous temp file (rewound).

    Every identity is tried (old site keys keep decrypting after rotation).
    Raises BundleError: empty_file, too_large, not_age_file, wrong_key,
    truncated, corrupted.  The caller closes the returned file.
    """
    source = Path(path)
    size = source.stat().st_size
    if size == 0:
        raise BundleError("empty_file", f"{name}: the file is empty (0 bytes)")
    if size > max_bytes:
        raise BundleError("too_large", f"{name}: the file has {size} bytes, more than the limit of {max_bytes} bytes")
    with open(source, "rb") as f:
        head = f.read(len(AGE_ARMOR_MAGIC))
    if not head.startswith((AGE_MAGIC, AGE_ARMOR_MAGIC)):
        if AGE_MAGIC.startswith(head):
            raise BundleError("truncated", f"{name}: the file ends inside the age header ({size} bytes)")
        raise BundleError(
            "not_age_file",
            f"{name}: not an age-encrypted file (it must start with 'age-encryption.org/v1'); seal it with age or "
            "'python -m submissions.bundle seal'",
        )
    out = tempfile.TemporaryFile(dir=tmp_dir)  # noqa: SIM115 -- returned to the caller, who closes it
    try:
        with open(source, "rb") as reader:
            pyrage.decrypt_io(reader, out, list(identities))
    except pyrage.DecryptError as exc:
        out.close()
        raise _header_failure(str(exc), name, size) from None
    except OSError:
        written = out.tell()
        out.close()
        raise _payload_failure(source, size, written, name) from None
    except BaseException:
        out.close()
        raise
    out.seek(0)
    return out


def _header_failure(reason: str, name: str, size: int) -> BundleError:
    lowered = reason.lower()
    if "no matching keys" in lowered:
        return BundleError(
            "wrong_key",
            f"{name}: the bundle was not sealed to this server's public key (no site key opens it); "
            "seal it to the key shown on the upload page",
        )
    if "incomplete" in lowered or "fill whole buffer" in lowered or "unexpected end" in lowered:
        return BundleError("truncated", f"{name}: the file ends inside the age header ({size} bytes)")
    if "mac" in lowered:
        return BundleError("corrupted", f"{name}: the age header MAC does not verify: the header was altered")
    return BundleError("corrupted", f"{name}: the age header is malformed ({reason})")
