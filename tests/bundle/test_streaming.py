"""Opening a large bundle keeps memory flat: nothing is held but the JSON members."""

from __future__ import annotations

import tracemalloc

from submissions.bundle import open_bundle


def test_opening_a_large_bundle_keeps_python_memory_bounded(sealed_demo, site_identity):
    size = 24 * 1024 * 1024
    path = sealed_demo(artifact_bytes=size)
    assert path.stat().st_size > size
    tracemalloc.start()
    try:
        bundle = open_bundle(path, [site_identity[0]])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert bundle.member_sizes["artifacts/trajectory.bin"] == size
    assert peak < 4 * 1024 * 1024, f"peak traced memory {peak} bytes while opening a {size}-byte bundle"


def test_opening_a_large_bundle_keeps_resident_memory_flat(sealed_demo, site_identity):
    """Resident memory (Rust allocations of age included), measured in a fresh process."""
    import subprocess
    import sys
    from pathlib import Path

    size = 64 * 1024 * 1024
    path = sealed_demo(artifact_bytes=size)
    probe = f"""
import re
from submissions.bundle import open_bundle

def status(field):
    return int(re.search(field + r":\\s+(\\d+) kB", open("/proc/self/status").read()).group(1))

before = status("VmRSS")
bundle = open_bundle({str(path)!r}, [{site_identity[0]!r}])
assert bundle.member_sizes["artifacts/trajectory.bin"] == {size}
print(status("VmHWM") - before)
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True)
    growth_kib = int(done.stdout.strip())
    assert growth_kib < 32 * 1024, f"resident memory grew by {growth_kib} KiB opening a 64 MiB bundle"


class _LazyPaxBomb:
    """A tar stream whose first header is a pax extended header of ``size`` bytes, produced on
    demand as it is read (never stored), then a member; counts the bytes handed out."""

    def __init__(self, size: int) -> None:
        import tarfile

        header = tarfile.TarInfo("././@PaxHeader")
        header.type = tarfile.XHDTYPE
        header.size = size
        self.head = header.tobuf(tarfile.USTAR_FORMAT, "utf-8", "surrogateescape")
        self.total = len(self.head) + size + (-size % 512)
        self.position = 0
        self.handed_out = 0

    def read(self, n: int = -1) -> bytes:
        n = self.total - self.position if n is None or n < 0 else min(n, self.total - self.position)
        out = bytearray()
        if self.position < len(self.head):
            out += self.head[self.position : self.position + n]
        out += b"9" * (n - len(out))  # the header's "records": digits, as a length field would start
        self.position += n
        self.handed_out += n
        return bytes(out)

    def seek(self, offset: int, whence: int = 0) -> int:
        assert (offset, whence) == (0, 0)  # the archive reader only rewinds after sniffing the magic
        self.position = 0
        return 0

    def tell(self) -> int:
        return self.position

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True


def test_a_600_mib_pax_header_is_refused_before_it_is_read_with_flat_memory():
    import pytest

    from submissions.bundle.archive import iter_members
    from submissions.bundle.errors import BundleError

    bomb = _LazyPaxBomb(600 * 1024 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(BundleError) as refused:
            list(iter_members(bomb, name="bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.code == "header_too_large"
    assert "629145600 bytes" in refused.value.message
    # Refused at the header block: at most the read-ahead buffers were pulled, not the header's data.
    assert bomb.handed_out <= 256 * 1024, bomb.handed_out
    assert peak < 2 * 1024 * 1024, f"peak traced memory {peak} bytes"


def test_a_600_mib_pax_header_in_a_zstd_payload_is_refused_with_flat_memory(tmp_path):
    import pytest
    import zstandard

    from submissions.bundle.archive import iter_members
    from submissions.bundle.errors import BundleError

    # The shape: a small compressed upload whose tar carries a 600 MiB pax header,
    # compressed from the lazy stream chunk by chunk (only the few compressed KiB are kept).
    bomb = _LazyPaxBomb(600 * 1024 * 1024)
    path = tmp_path / "bomb.tar.zst"
    with open(path, "wb") as out, zstandard.ZstdCompressor(level=1).stream_writer(out) as writer:
        while chunk := bomb.read(4 * 1024 * 1024):
            writer.write(chunk)
    assert path.stat().st_size < 1024 * 1024
    tracemalloc.start()
    try:
        with open(path, "rb") as payload, pytest.raises(BundleError) as refused:
            list(iter_members(payload, name="bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.code == "header_too_large"
    assert peak < 4 * 1024 * 1024, f"peak traced memory {peak} bytes"
