"""Fixtures for the bundle tests: keys, the demo release, and sealers of
arbitrary (also malicious) archives.  Pure: no database is touched."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyrage
import pytest
import zstandard
from pyrage import x25519

from submissions.bundle.demo import demo_release_spec, seal_dir, write_paper_gap_bundle_dir
from submissions.bundle.signatures import generate_signing_key, key_id_for, public_key_b64


@pytest.fixture(scope="session")
def site_identity() -> tuple[str, str]:
    identity = x25519.Identity.generate()
    return str(identity), str(identity.to_public())


@pytest.fixture(scope="session")
def other_identity() -> tuple[str, str]:
    identity = x25519.Identity.generate()
    return str(identity), str(identity.to_public())


@pytest.fixture(scope="session")
def release() -> tuple[Any, str]:
    return demo_release_spec()


@pytest.fixture(scope="session")
def evaluator_key() -> Any:
    return generate_signing_key()


@pytest.fixture(scope="session")
def registered_keys(evaluator_key: Any) -> dict[str, str]:
    public = public_key_b64(evaluator_key)
    return {key_id_for(public): public}


@pytest.fixture
def demo_dir(tmp_path: Path) -> Callable[..., Path]:
    """Write a demo paper-gap directory (kwargs go to write_paper_gap_bundle_dir)."""
    counter = iter(range(1000))

    def make(**kwargs: Any) -> Path:
        kwargs.setdefault("episodes_per_task", 20)
        return write_paper_gap_bundle_dir(tmp_path / f"bundle{next(counter)}", **kwargs)

    return make


@pytest.fixture
def sealed_demo(demo_dir: Callable[..., Path], site_identity: tuple[str, str]) -> Callable[..., Path]:
    """Write and seal a demo paper-gap bundle to the site key; returns the .age path."""

    def make(**kwargs: Any) -> Path:
        compress = kwargs.pop("compress", True)
        return seal_dir(demo_dir(**kwargs), site_identity[1], compress=compress)

    return make


def _tar_bytes(entries: Iterable[tuple[str, bytes | Callable[[tarfile.TarInfo], None]]]) -> bytes:
    """A tar of regular files (bytes) or of entries shaped by a callable on their TarInfo."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, value in entries:
            info = tarfile.TarInfo(name)
            if callable(value):
                value(info)
                tar.addfile(info)
            else:
                info.size = len(value)
                tar.addfile(info, io.BytesIO(value))
    return buffer.getvalue()


@pytest.fixture
def seal_bytes(tmp_path: Path, site_identity: tuple[str, str]) -> Callable[..., Path]:
    """Encrypt raw plaintext bytes to the site key (optionally zstd first)."""
    counter = iter(range(1000))

    def make(plaintext: bytes, *, compress: bool = False, recipient: str | None = None) -> Path:
        if compress:
            plaintext = zstandard.ZstdCompressor().compress(plaintext)
        path = tmp_path / f"raw{next(counter)}.age"
        path.write_bytes(pyrage.encrypt(plaintext, [x25519.Recipient.from_str(recipient or site_identity[1])]))
        return path

    return make


def _manifest_for(members: dict[str, bytes], **overrides: Any) -> bytes:
    """A paper-gap manifest.json listing ``members`` with their real hashes."""
    import hashlib

    doc: dict[str, Any] = {
        "format": "podium-bundle/1",
        "kind": "paper_gap",
        "benchmark": "ale-robotics",
        "release": "v0.5",
        "required_task_set_hash": "0" * 64,
        "agent": {"name": "a", "version": "1"},
        "tasks": {"t": {"genre": "open"}},
        "effort_tier": "standard",
        "runtime_seconds": 1.0,
        "tokens": {"input": 1, "output": 1},
        "members": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()},
    }
    doc.update(overrides)
    return json.dumps(doc).encode()


@pytest.fixture
def tar_bytes() -> Callable[..., bytes]:
    """Build a tar from (name, bytes | TarInfo-shaping callable) entries."""
    return _tar_bytes


@pytest.fixture
def manifest_for() -> Callable[..., bytes]:
    """A paper-gap manifest.json listing the given members with their real hashes."""
    return _manifest_for
