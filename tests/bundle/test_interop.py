"""Interoperability with Debian's age command-line tool, both ways."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from submissions.bundle import open_bundle
from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir

AGE = shutil.which("age") or "/usr/bin/age"

if not Path(AGE).exists():
    if os.environ.get("REQUIRE_SERVICES"):
        pytest.fail("the age command-line tool is missing (apt-get install age) and REQUIRE_SERVICES is set")
    pytest.skip("the age command-line tool is missing: apt-get install age", allow_module_level=True)


def test_a_bundle_sealed_by_the_age_cli_opens(tmp_path, site_identity):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=10)
    archive = tmp_path / "run.tar"
    with tarfile.open(archive, "w") as tar:  # a harness's own tar, "./"-prefixed names and directory entries
        tar.add(directory, arcname=".")
    sealed = tmp_path / "run.age"
    subprocess.run([AGE, "-r", site_identity[1], "-o", str(sealed), str(archive)], check=True)
    bundle = open_bundle(sealed, [site_identity[0]])
    assert bundle.manifest.agent.name == "demo-agent"
    assert len(bundle.results) == 11


def test_an_armored_bundle_sealed_by_the_age_cli_opens(tmp_path, site_identity):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=10)
    archive = tmp_path / "run.tar"
    with tarfile.open(archive, "w") as tar:
        for path in sorted(directory.rglob("*.json")):
            tar.add(path, arcname=path.relative_to(directory).as_posix())
    sealed = tmp_path / "run.age"
    subprocess.run([AGE, "-a", "-r", site_identity[1], "-o", str(sealed), str(archive)], check=True)
    assert open_bundle(sealed, [site_identity[0]]).kind == "paper_gap"


def test_a_bundle_sealed_by_our_tool_opens_with_age_d(tmp_path, site_identity):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=10)
    sealed = seal_dir(directory, site_identity[1], compress=False)
    identity = tmp_path / "site.key"
    identity.write_text(site_identity[0] + "\n")
    plain = tmp_path / "plain.tar"
    subprocess.run([AGE, "-d", "-i", str(identity), "-o", str(plain), str(sealed)], check=True)
    with tarfile.open(plain) as tar:
        names = sorted(tar.getnames())
    assert names[:3] == ["faithfulness.json", "manifest.json", "results/act-aloha-transfer.json"]
    with tarfile.open(plain) as tar:
        assert tar.extractfile("manifest.json").read() == (directory / "manifest.json").read_bytes()


def test_a_zstd_bundle_sealed_by_our_tool_decrypts_with_age_d(tmp_path, site_identity):
    import zstandard

    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=10)
    sealed = seal_dir(directory, site_identity[1])
    identity = tmp_path / "site.key"
    identity.write_text(site_identity[0] + "\n")
    plain = subprocess.run([AGE, "-d", "-i", str(identity), str(sealed)], check=True, capture_output=True).stdout
    assert plain[:4] == b"\x28\xb5\x2f\xfd"
    assert b"manifest.json" in zstandard.ZstdDecompressor().decompressobj().decompress(plain)


@pytest.mark.skipif(not shutil.which("zstd"), reason="the zstd command-line tool is missing (apt-get install zstd)")
def test_a_tar_zst_made_by_the_tar_and_zstd_tools_opens(tmp_path, site_identity):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=10)
    archive = tmp_path / "run.tar"
    subprocess.run(["tar", "-C", str(directory), "-cf", str(archive), "."], check=True)
    subprocess.run(["zstd", "-q", "-19", str(archive), "-o", str(tmp_path / "run.tar.zst")], check=True)
    sealed = tmp_path / "run.age"
    subprocess.run([AGE, "-r", site_identity[1], "-o", str(sealed), str(tmp_path / "run.tar.zst")], check=True)
    assert len(open_bundle(sealed, [site_identity[0]]).results) == 11
