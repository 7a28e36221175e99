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
