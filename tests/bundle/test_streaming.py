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
