"""The age envelope: every way a sealed file can be unreadable maps to one code."""

from __future__ import annotations

from pathlib import Path

import pytest

from submissions.bundle import BundleError, Limits, open_bundle


def _open(path: Path, key: str, **kwargs):
    return open_bundle(path, [key], **kwargs)


def _header_end(data: bytes) -> int:
    marker = data.index(b"\n--- ")
    return data.index(b"\n", marker + 1) + 1


def test_it_opens_a_bundle_sealed_to_the_site_key(sealed_demo, site_identity):
    bundle = _open(sealed_demo(), site_identity[0])
    assert bundle.kind == "paper_gap"
    assert len(bundle.results) == 11


def test_it_opens_with_an_old_key_after_rotation(sealed_demo, site_identity, other_identity):
    path = sealed_demo()
    bundle = open_bundle(path, [other_identity[0], site_identity[0]])
    assert bundle.manifest.agent.name == "demo-agent"


def test_it_rejects_an_empty_file(tmp_path, site_identity):
    path = tmp_path / "empty.age"
    path.write_bytes(b"")
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert (err.value.code, err.value.message) == ("empty_file", "bundle: the file is empty (0 bytes)")


def test_it_rejects_a_file_that_is_not_age(tmp_path, site_identity):
    path = tmp_path / "plain.tar"
    path.write_bytes(b"manifest.json\x00" + b"\x00" * 600)
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert err.value.code == "not_age_file"
    assert err.value.message == (
        "bundle: not an age-encrypted file (it must start with 'age-encryption.org/v1'); seal it with age or "
        "'python -m submissions.bundle seal'"
    )


def test_it_rejects_a_bundle_sealed_to_another_key(sealed_demo, site_identity, other_identity, demo_dir):
    from submissions.bundle.demo import seal_dir

    path = seal_dir(demo_dir(), other_identity[1])
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert err.value.code == "wrong_key"
    assert err.value.message == (
        "bundle: the bundle was not sealed to this server's public key (no site key opens it); "
        "seal it to the key shown on the upload page"
    )


def test_it_rejects_a_file_truncated_inside_the_header(sealed_demo, site_identity):
    path = sealed_demo()
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert (err.value.code, err.value.message) == (
        "truncated",
        "bundle: the file ends inside the age header (60 bytes)",
    )


def test_it_rejects_a_file_truncated_inside_the_magic_line(sealed_demo, site_identity):
    path = sealed_demo()
    path.write_bytes(path.read_bytes()[:10])
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert err.value.code == "truncated"


@pytest.mark.parametrize("keep", [0.5, 0.9, 0.999])
def test_it_rejects_a_file_truncated_inside_the_payload(sealed_demo, site_identity, keep):
    path = sealed_demo(artifact_bytes=300_000)
    data = path.read_bytes()
    cut = int(len(data) * keep)
    path.write_bytes(data[:cut])
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert err.value.code == "truncated"
    assert err.value.message == (
        f"bundle: the encrypted payload ends early (the file was cut short, {cut} bytes); upload the complete file"
    )


def test_it_rejects_a_flipped_byte_in_the_header_mac(sealed_demo, site_identity):
    path = sealed_demo()
    data = bytearray(path.read_bytes())
    # Swap one base64 character of the MAC for another valid one: a bit flip could
    # make an invalid character (A^1 is '@'), which is a malformed header instead.
    position = _header_end(data) - 5
    data[position] = ord("B") if data[position] == ord("A") else ord("A")
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert err.value.code == "corrupted"
    assert err.value.message == "bundle: the age header MAC does not verify: the header was altered"


def test_it_rejects_a_flipped_byte_in_a_middle_payload_chunk(sealed_demo, site_identity):
    path = sealed_demo(artifact_bytes=300_000)
    data = bytearray(path.read_bytes())
    data[_header_end(data) + 16 + 65552 + 100] ^= 0x80  # inside the second chunk
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert err.value.code == "corrupted"
    assert err.value.message == (
        "bundle: the encrypted payload failed authentication at byte 65536 of the plaintext: "
        "the file was altered after sealing"
    )


@pytest.mark.parametrize("compress", [True, False])
def test_it_rejects_a_flipped_byte_in_the_last_payload_chunk(sealed_demo, site_identity, compress):
    path = sealed_demo(compress=compress)
    data = bytearray(path.read_bytes())
    data[-20] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert err.value.code == "corrupted"


def test_it_rejects_a_flipped_byte_in_the_payload_nonce(sealed_demo, site_identity):
    path = sealed_demo()
    data = bytearray(path.read_bytes())
    data[_header_end(data) + 3] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0])
    assert err.value.code == "corrupted"


def test_it_rejects_a_file_over_the_size_limit_before_decrypting(sealed_demo, site_identity):
    path = sealed_demo()
    size = path.stat().st_size
    with pytest.raises(BundleError) as err:
        _open(path, site_identity[0], limits=Limits(max_bundle_bytes=1000))
    assert err.value.code == "too_large"
    assert err.value.message == f"bundle: the file has {size} bytes, more than the limit of 1000 bytes"


def test_it_names_the_file_in_messages(tmp_path, site_identity):
    path = tmp_path / "x.age"
    path.write_bytes(b"")
    with pytest.raises(BundleError) as err:
        open_bundle(path, [site_identity[0]], name="run-42.age")
    assert err.value.message == "run-42.age: the file is empty (0 bytes)"


def test_it_refuses_to_run_without_an_identity(sealed_demo):
    with pytest.raises(ValueError, match="no age identity given"):
        open_bundle(sealed_demo(), [])


def _reads_as_altered(sealed: bytes, cut: int) -> bool:
    """Whether ``sealed`` cut at ``cut`` is, by envelope._payload_failure's documented rule, one
    the server cannot tell from an altered file: an armored file that still ends with its END
    line, or a binary one whose last chunk keeps a whole number of 512-byte plaintext blocks (a
    complete tar would). Such cuts were a rare flake of the test below: the bundle's length
    varies with its contents, so the seeded cut positions sometimes landed on one."""
    from submissions.bundle import envelope

    if sealed.startswith(envelope.AGE_ARMOR_MAGIC):
        return sealed[:cut].rstrip().endswith(envelope.AGE_ARMOR_END)
    header = envelope._header_length(sealed[: 64 * 1024])
    if header is None:
        return False
    body = cut - header - envelope._NONCE
    if body <= envelope._TAG:
        return False
    chunks = -(-body // envelope._SEALED_CHUNK)
    if body - (chunks - 1) * envelope._SEALED_CHUNK <= envelope._TAG:
        return False
    return (body - chunks * envelope._TAG) % envelope._BLOCK == 0


@pytest.mark.parametrize("armored", [False, True])
def test_every_truncation_and_every_payload_flip_gets_its_own_code(sealed_demo, site_identity, tmp_path, armored):
    import random

    import pyrage
    from pyrage import x25519

    sealed = sealed_demo(artifact_bytes=150_000).read_bytes()
    if armored:
        identity = x25519.Identity.from_str(site_identity[0])
        sealed = pyrage.encrypt(pyrage.decrypt(sealed, [identity]), [identity.to_public()], armored=True)
    start = sealed.index(b"\n", sealed.index(b"\n---" if not armored else b"\n", 40) + 1) + 1
    rng = random.Random(4)
    path = tmp_path / "fuzz.age"
    seen = set()
    for _ in range(25):
        cut = rng.randrange(1, len(sealed))
        if _reads_as_altered(sealed, cut):
            continue  # indistinguishable from an altered file by design (see the helper)
        path.write_bytes(sealed[:cut])
        with pytest.raises(BundleError) as err:
            _open(path, site_identity[0])
        seen.add(("cut", err.value.code))
        data = bytearray(sealed)
        position = rng.randrange(start, len(data) - 40)
        if armored and data[position : position + 1] in (b"\n", b"="):
            continue
        data[position] ^= 0x04 if armored else 0x10  # armored: stay inside the base64 alphabet
        path.write_bytes(bytes(data))
        with pytest.raises(BundleError) as err:
            _open(path, site_identity[0])
        seen.add(("flip", err.value.code))
    assert seen == {("cut", "truncated"), ("flip", "corrupted")}
