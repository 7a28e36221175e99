"""Whatever the decrypted payload holds, reading it ends in a Bundle or a BundleError."""

from __future__ import annotations

import io
import random

import pytest

from submissions.bundle import BundleError, read_payload
from submissions.bundle.archive import write_archive
from submissions.bundle.demo import write_paper_gap_bundle_dir


@pytest.mark.parametrize("compress", [False, True])
def test_mutated_payloads_are_read_or_rejected_never_crash(tmp_path, compress):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3, tasks=["orb-slam-ate"])
    members = {p.relative_to(directory).as_posix(): p.read_bytes() for p in directory.rglob("*") if p.is_file()}
    write_archive(members, tmp_path / "run.tar", compress=compress)
    original = (tmp_path / "run.tar").read_bytes()
    rng = random.Random(2026)
    codes = set()
    for _ in range(400):
        payload = bytearray(original)
        for _ in range(rng.randint(1, 8)):
            payload[rng.randrange(len(payload))] = rng.randrange(256)
        if rng.random() < 0.5:
            payload = payload[: rng.randrange(len(payload))]
        try:
            bundle = read_payload(io.BytesIO(bytes(payload)))
        except BundleError as error:
            codes.add(error.code)
        else:
            assert bundle.kind == "paper_gap"
    assert "invalid_archive" in codes
