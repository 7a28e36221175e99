"""The tar inside the envelope: read as a stream, with every limit enforced."""

from __future__ import annotations

import io
import tarfile

import pytest
import zstandard

from submissions.bundle import BundleError, Limits, open_bundle
from submissions.bundle.archive import iter_members


def _error(path, key, **kwargs) -> BundleError:
    with pytest.raises(BundleError) as err:
        open_bundle(path, [key], **kwargs)
    return err.value


def _symlink(target: str):
    def shape(info: tarfile.TarInfo) -> None:
        info.type = tarfile.SYMTYPE
        info.linkname = target

    return shape


def _hardlink(target: str):
    def shape(info: tarfile.TarInfo) -> None:
        info.type = tarfile.LNKTYPE
        info.linkname = target

    return shape


def _device(info: tarfile.TarInfo) -> None:
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3


def _fifo(info: tarfile.TarInfo) -> None:
    info.type = tarfile.FIFOTYPE


def _directory(info: tarfile.TarInfo) -> None:
    info.type = tarfile.DIRTYPE


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../evil.json", "bundle: member '../evil.json' contains '..'; paths must stay inside the archive"),
        (
            "results/../../etc/passwd",
            "bundle: member 'results/../../etc/passwd' contains '..'; paths must stay inside the archive",
        ),
        ("/etc/passwd", "bundle: member '/etc/passwd' has an absolute path; use paths relative to the root"),
        ("C:/windows.json", "bundle: member 'C:/windows.json' has an absolute path; use paths relative to the root"),
        ("a\\b.json", "bundle: member 'a\\\\b.json' has a NUL or backslash in its name"),
    ],
)
def test_it_rejects_unsafe_member_paths(seal_bytes, site_identity, name, message, tar_bytes):
    path = seal_bytes(tar_bytes([(name, b"{}")]))
    err = _error(path, site_identity[0])
    assert (err.code, err.message) == ("unsafe_path", message)


def test_it_rejects_a_symlink_member(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([("manifest.json", _symlink("/etc/passwd"))]))
    err = _error(path, site_identity[0])
    assert err.code == "link_member"
    assert err.message == "bundle: member 'manifest.json' is a symbolic link; only regular files are allowed"


def test_it_rejects_a_hard_link_member(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([("a.json", b"{}"), ("b.json", _hardlink("a.json"))]))
    err = _error(path, site_identity[0])
    assert err.code == "link_member"
    assert err.message == "bundle: member 'b.json' is a hard link; only regular files are allowed"


@pytest.mark.parametrize("shape", [_device, _fifo])
def test_it_rejects_devices_and_fifos(seal_bytes, site_identity, shape, tar_bytes):
    path = seal_bytes(tar_bytes([("dev.json", shape)]))
    err = _error(path, site_identity[0])
    assert err.code == "special_member"
    assert err.message == "bundle: member 'dev.json' is not a regular file (device, FIFO or other special file)"


def test_it_rejects_duplicate_member_names(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([("manifest.json", b"{}"), ("./manifest.json", b"{}")]))
    err = _error(path, site_identity[0])
    assert (err.code, err.message) == (
        "duplicate_member",
        "bundle: member 'manifest.json' appears twice in the archive",
    )


def test_it_rejects_too_many_members(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([(f"artifacts/{i}.bin", b"x") for i in range(6)]))
    err = _error(path, site_identity[0], limits=Limits(max_members=5))
    assert (err.code, err.message) == ("too_many_members", "bundle: the archive has more than 5 members")


def test_it_rejects_a_member_over_the_member_size_limit(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([("artifacts/big.bin", b"x" * 5000)]))
    err = _error(path, site_identity[0], limits=Limits(max_member_bytes=4096))
    assert err.code == "too_large"
    assert err.message == "bundle: member 'artifacts/big.bin' has 5000 bytes, more than the limit of 4096 bytes"


def test_it_rejects_a_json_member_over_the_json_size_limit(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([("manifest.json", b" " * 5000)]))
    err = _error(path, site_identity[0], limits=Limits(max_json_member_bytes=4096))
    assert err.code == "too_large"
    assert err.message == "bundle: JSON member 'manifest.json' has 5000 bytes, more than the limit of 4096 bytes"


def test_it_rejects_a_decompression_bomb_by_ratio(seal_bytes, site_identity, tar_bytes):
    bomb = tar_bytes([("artifacts/zeros.bin", b"\x00" * (64 * 1024 * 1024))])
    path = seal_bytes(bomb, compress=True)
    assert path.stat().st_size < 64 * 1024  # tens of MiB from a few KiB
    err = _error(path, site_identity[0])
    assert err.code == "decompression_bomb"
    assert err.message.startswith("bundle: the compressed archive expands more than 200 times (")


def test_it_rejects_a_compressed_archive_over_the_total_size(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([("artifacts/zeros.bin", b"\x00" * 300_000)]), compress=True)
    err = _error(path, site_identity[0], limits=Limits(max_total_bytes=200_000))
    assert err.code == "decompression_bomb"
    assert err.message == "bundle: the compressed archive expands to more than 200000 bytes"


def test_it_rejects_a_plain_archive_over_the_total_size(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([("artifacts/a.bin", b"\x01" * 300_000)]))
    err = _error(path, site_identity[0], limits=Limits(max_total_bytes=200_000))
    assert (err.code, err.message) == ("too_large", "bundle: the archive is larger than 200000 bytes")


def test_it_rejects_a_payload_that_is_not_a_tar(seal_bytes, site_identity):
    path = seal_bytes(b"this is not a tar archive at all" * 40)
    err = _error(path, site_identity[0])
    assert err.code == "invalid_archive"
    assert err.message == "bundle: the decrypted payload is not a tar or tar.zst archive"


def test_it_rejects_a_corrupt_zstd_stream(seal_bytes, site_identity, tar_bytes):
    good = zstandard.ZstdCompressor().compress(tar_bytes([("manifest.json", b"{}" * 3000)]))
    broken = good[:4] + bytes(b ^ 0x55 for b in good[4:40]) + good[40:]
    path = seal_bytes(broken)
    err = _error(path, site_identity[0])
    assert err.code == "invalid_archive"


def test_it_rejects_a_member_cut_short_inside_the_tar(seal_bytes, site_identity, tar_bytes):
    data = tar_bytes([("artifacts/a.bin", b"\x01" * 4000)])
    path = seal_bytes(data[:2048])
    err = _error(path, site_identity[0])
    assert err.code == "invalid_archive"


def test_it_skips_directory_entries_and_leading_dot_slash(seal_bytes, site_identity, tar_bytes, manifest_for):
    members = {"artifacts/log.txt": b"hello"}
    entries = [("./", _directory), ("./artifacts", _directory), ("./artifacts/log.txt", b"hello")]
    entries.append(("./manifest.json", manifest_for(members)))
    stream = io.BytesIO(tar_bytes(entries))
    names = [m.name for m in iter_members(stream)]
    assert names == ["artifacts/log.txt", "manifest.json"]


def test_it_hashes_artifacts_without_keeping_them(seal_bytes, tar_bytes):
    stream = io.BytesIO(tar_bytes([("artifacts/a.bin", b"abc"), ("manifest.json", b"{}")]))
    members = {m.name: m for m in iter_members(stream)}
    assert members["artifacts/a.bin"].data is None
    assert members["artifacts/a.bin"].sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert members["manifest.json"].data == b"{}"


def _sparse(info: tarfile.TarInfo) -> None:
    info.type = tarfile.GNUTYPE_SPARSE


def test_it_rejects_a_sparse_member(seal_bytes, site_identity, tar_bytes):
    path = seal_bytes(tar_bytes([("artifacts/holes.bin", _sparse)]))
    err = _error(path, site_identity[0])
    assert err.code == "special_member"
    assert err.message == (
        "bundle: member 'artifacts/holes.bin' is not a regular file (device, FIFO or other special file)"
    )


def test_it_reads_a_multi_frame_zstd_payload(seal_bytes, site_identity, tar_bytes, manifest_for):
    members = {"artifacts/a.bin": b"a" * 70_000}
    data = tar_bytes([("manifest.json", manifest_for(members)), *members.items()])
    compressor = zstandard.ZstdCompressor()
    half = len(data) // 2
    stream = io.BytesIO(compressor.compress(data[:half]) + compressor.compress(data[half:]))
    assert [m.name for m in iter_members(stream)] == ["manifest.json", "artifacts/a.bin"]


def test_sealed_zstd_payloads_are_padded_to_whole_blocks_with_a_skippable_frame(tmp_path):
    from submissions.bundle.archive import write_archive

    dest = tmp_path / "x.tar.zst"
    write_archive({"manifest.json": b"{}" * 123}, dest)
    data = dest.read_bytes()
    assert len(data) % 512 == 0
    assert [m.name for m in iter_members(io.BytesIO(data))] == ["manifest.json"]
