"""A stored bundle read back: a local scratch copy through the storage API, decrypted with
every site key and opened under the server's limits. Used by verification, the interval
follow-up, rescoring, official re-runs and the download pages."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.core.files.storage import default_storage

from submissions import site_keys
from submissions.bundle.archive import Limits
from submissions.bundle.bundle import Bundle, open_bundle


@contextlib.contextmanager
def bundle_local_path(name: str) -> Iterator[Path]:
    """A local scratch copy of the stored bundle, read through the storage API.

    Always a copy, even from local storage: the worker never assumes the bundle sits
    in its own MEDIA_ROOT (with object storage, a worker host has none of the bundles),
    and the copy is deleted when the block ends.
    """
    with tempfile.NamedTemporaryFile(prefix="podium-bundle-", suffix=".age") as local:
        try:
            with default_storage.open(name, "rb") as remote:
                shutil.copyfileobj(remote, local, 1024 * 1024)
        except (BotoCoreError, ClientError) as exc:
            # The object store is unreachable or refused (S3): storage I/O, so a transient
            # fault the task retries (TRANSIENT_ERRORS has OSError), like a local disk error.
            raise OSError(f"bundle storage: cannot read {name}: {type(exc).__name__}") from exc
        local.flush()
        yield Path(local.name)


def open_stored_bundle(path: Path) -> Bundle:
    """Decrypt and read a stored bundle with every site key and the server's limits."""
    return open_bundle(path, site_keys.all_identities(), limits=bundle_limits())


def bundle_limits() -> Limits:
    """The archive limits the server applies: the bundle package's defaults, with the site's upload cap."""
    return Limits(max_bundle_bytes=settings.PODIUM_MAX_BUNDLE_BYTES)
