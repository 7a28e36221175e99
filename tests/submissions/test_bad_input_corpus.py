"""Issue 4's bad-input corpus: every case is sealed, uploaded and verified through the
real path, and must end with its exact error code and nothing else in the database
changed (row counts of every other table compared before and after)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pyrage
import pytest
import zstandard
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.apps import apps

from submissions.bundle import seal as sealing
from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
from submissions.bundle.signatures import public_key_b64
from submissions.models import Submission
from submissions.services.signing_keys import signing_key_register
from submissions.services.submissions import SubmissionRejected, submission_create
from submissions.services.verification import submission_verify


class Corpus:
    """Builds each bad bundle as bytes; `recipient` is the site's public key."""

    def __init__(self, tmp: Path, recipient: str, signing_key: Ed25519PrivateKey) -> None:
        self.tmp = tmp
        self.recipient = recipient
        self.signing_key = signing_key
        self.count = 0

    def directory(self, **kwargs) -> Path:
        self.count += 1
        return write_paper_gap_bundle_dir(self.tmp / f"dir-{self.count}", **kwargs)

    def sealed(self, directory: Path, *, recipient: str | None = None, compress: bool = True) -> bytes:
        target = self.tmp / f"sealed-{self.count}.age"
        sealing.seal_dir(directory, recipient or self.recipient, target, compress=compress, update_members=False)
        return target.read_bytes()

    def good(self) -> bytes:
        return self.sealed(self.directory())

    def tampered(self, tamper: str, **kwargs) -> bytes:
        directory = self.directory(tamper=tamper, **kwargs)
        return seal_dir(directory, self.recipient).read_bytes()

    def edited(self, member: str, edit) -> bytes:
        """A good bundle with one member's text edited, members re-hashed (a consistent but bad bundle)."""
        directory = self.directory()
        path = directory / member
        path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
        if member != "manifest.json":
            sealing.write_members(directory)
        return self.sealed(directory)

    def raw_tar(self, entries: list[tarfile.TarInfo | tuple[str, bytes]], *, zstd: bool = False) -> bytes:
        """An archive built by hand (for what our own writer refuses to produce), sealed."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for entry in entries:
                if isinstance(entry, tarfile.TarInfo):
                    tar.addfile(entry)
                else:
                    name, data = entry
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        payload = buffer.getvalue()
        if zstd:
            payload = zstandard.ZstdCompressor().compress(payload)
        return pyrage.encrypt(payload, [pyrage.x25519.Recipient.from_str(self.recipient)])

    def raw_blocks(self, blocks: bytes) -> bytes:
        """Tar bytes written block by block (headers tarfile's writer would never emit), ended and sealed."""
        payload = blocks + bytes(1024)  # the two zero blocks that end an archive
        return pyrage.encrypt(payload, [pyrage.x25519.Recipient.from_str(self.recipient)])


# Tar headers written by hand, for the bounded-header cases.
OVER_HEADER_LIMIT = 64 * 1024 + 1  # one byte over submissions.bundle.archive.Limits.max_header_bytes


def pax_header(records: dict[str, str], kind: bytes = tarfile.XHDTYPE) -> bytes:
    return tarfile.TarInfo._create_pax_generic_header(records, kind, "utf-8")


def member(name: str, data: bytes = b"{}", fmt: int = tarfile.USTAR_FORMAT, **fields) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for field, value in fields.items():
        setattr(info, field, value)
    return info.tobuf(fmt, "utf-8", "surrogateescape") + data + bytes(-len(data) % 512)


def flip(data: bytes, position: int) -> bytes:
    return data[:position] + bytes([data[position] ^ 0x01]) + data[position + 1 :]


def link(name: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = "/etc/passwd"
    return info


def header_end(data: bytes) -> int:
    return data.index(b"\n---") + 1


# case -> (how to build it, expected error code)
CASES = {
    "sealed_to_another_key": (
        lambda c: c.sealed(c.directory(), recipient=str(pyrage.x25519.Identity.generate().to_public())),
        "wrong_key",
    ),
    "truncated_file": (lambda c: (lambda d: d[: len(d) - 100])(c.good()), "truncated"),
    "truncated_in_the_header": (lambda c: c.good()[:40], "truncated"),
    "flipped_byte_in_the_header_mac": (lambda c: (lambda d: flip(d, header_end(d) + 6))(c.good()), "corrupted"),
    "flipped_byte_in_the_first_payload_chunk": (
        lambda c: (lambda d: flip(d, header_end(d) + 64 + 40))(c.good()),
        "corrupted",
    ),
    "flipped_byte_in_the_last_payload_chunk": (lambda c: (lambda d: flip(d, len(d) - 5))(c.good()), "corrupted"),
    "not_an_age_file": (lambda c: b"PK\x03\x04 this is a zip file, not an age file" * 10, "not_age_file"),
    "member_hash_differs_from_the_manifest": (lambda c: c.tampered("member_hash"), "member_hash_mismatch"),
    "too_many_members": (
        lambda c: c.raw_tar([(f"artifacts/{i}.txt", b"x") for i in range(2001)]),
        "too_many_members",
    ),
    "path_traversal": (lambda c: c.raw_tar([("../escape.json", b"{}")]), "unsafe_path"),
    "absolute_path": (lambda c: c.raw_tar([("/etc/cron.d/evil", b"{}")]), "unsafe_path"),
    "symbolic_link": (lambda c: c.raw_tar([link("manifest.json", tarfile.SYMTYPE)]), "link_member"),
    "hard_link": (lambda c: c.raw_tar([link("manifest.json", tarfile.LNKTYPE)]), "link_member"),
    "decompression_bomb": (
        lambda c: c.raw_tar([("artifacts/zeros.bin", bytes(64 * 1024 * 1024))], zstd=True),
        "decompression_bomb",
    ),
    "invalid_json": (
        lambda c: c.edited("score_breakdown.json", lambda text: text.replace("{", "{,", 1)),
        "invalid_json",
    ),
    "wrong_schema": (
        lambda c: c.edited("manifest.json", lambda text: text.replace('"effort_tier"', '"effort_teir"')),
        "schema_error",
    ),
    "nan": (lambda c: c.tampered("nan"), "non_finite_number"),
    "infinity": (
        lambda c: c.edited(
            "score_breakdown.json", lambda text: text.replace('"overall": ', '"overall": Infinity, "x": ', 1)
        ),
        "non_finite_number",
    ),
    # An integer no double holds: every number is read as a double somewhere (a crash, once).
    "integer_beyond_a_double": (
        lambda c: c.edited(
            "score_breakdown.json", lambda text: text.replace('"overall": ', '"x": ' + "9" * 400 + ', "overall": ', 1)
        ),
        "non_finite_number",
    ),
    "unknown_release": (lambda c: c.sealed(c.directory(benchmark="no-such-benchmark")), "unknown_release"),
    "release_hash_mismatch": (lambda c: c.tampered("release_hash"), "release_hash_mismatch"),
    "task_not_in_the_release": (lambda c: c.tampered("unknown_task"), "unknown_task"),
    "duplicate_task": (
        lambda c: c.edited(
            "manifest.json",
            lambda text: text.replace('"tasks": {', '"tasks": {\n  "orb-slam-ate": {"genre": "reproduction"},', 1),
        ),
        "duplicate_task",
    ),
    "missing_faithfulness_verdict": (lambda c: c.tampered("missing_faithfulness"), "missing_faithfulness"),
    "forged_signature": (lambda c: c.tampered("forged_signature", sign_with=c.signing_key), "bad_signature"),
    "pax_header_over_the_limit": (
        lambda c: c.raw_blocks(pax_header({"comment": "x" * OVER_HEADER_LIMIT}) + member("manifest.json")),
        "header_too_large",
    ),
    "global_pax_header_over_the_limit": (
        lambda c: c.raw_blocks(
            pax_header({"comment": "x" * OVER_HEADER_LIMIT}, tarfile.XGLTYPE) + member("manifest.json")
        ),
        "header_too_large",
    ),
    "gnu_long_name_over_the_limit": (
        lambda c: c.raw_blocks(member("a/" * (OVER_HEADER_LIMIT // 2) + "x.json", fmt=tarfile.GNU_FORMAT)),
        "header_too_large",
    ),
    "gnu_long_link_over_the_limit": (
        lambda c: c.raw_blocks(
            member("manifest.json", b"", tarfile.GNU_FORMAT, type=tarfile.SYMTYPE, linkname="l" * OVER_HEADER_LIMIT)
        ),
        "header_too_large",
    ),
    "a_chain_of_extended_headers": (
        lambda c: c.raw_blocks(pax_header({"comment": "x"}) * 9 + member("manifest.json")),
        "too_many_headers",
    ),
    "global_pax_headers_adding_up_past_the_archive_limit": (
        lambda c: c.raw_blocks(
            b"".join(
                pax_header({f"podium.k{i}": "v" * 60000}, tarfile.XGLTYPE) + member(f"artifacts/{i}.txt", b"x")
                for i in range(140)
            )
        ),
        "too_many_headers",
    ),
    "gnu_sparse_member": (
        lambda c: c.raw_blocks(member("artifacts/a.bin", b"", tarfile.GNU_FORMAT, type=tarfile.GNUTYPE_SPARSE)),
        "special_member",
    ),
    "pax_sparse_map_read_from_the_member_data": (
        lambda c: c.raw_blocks(
            pax_header({"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "a.bin"})
            + member("artifacts/GNUSparseFile.0/a.bin", b"999999999999\n" + bytes(500))
        ),
        "special_member",
    ),
}


def row_counts() -> dict[str, int]:
    return {
        model._meta.label: model.objects.count()
        for model in apps.get_models()
        if model is not Submission and model._meta.app_label in {"leaderboard", "submissions", "auth"}
    }


@pytest.fixture
def corpus(tmp_path, site_identity, demo_release, owner):
    from leaderboard.models import Evaluator

    key = Ed25519PrivateKey.generate()
    evaluator, _ = Evaluator.objects.get_or_create(simulator="demo-sim")
    signing_key_register(evaluator=evaluator, public_key_b64=public_key_b64(key), user=None)
    return Corpus(tmp_path, str(site_identity.to_public()), key)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.django_db
def test_each_bad_bundle_is_rejected_with_its_code_and_changes_nothing_else(case, corpus, owner):
    build, code = CASES[case]
    bundle = build(corpus)
    before = row_counts()
    submission, created = submission_create(user=owner, uploaded_file=io.BytesIO(bundle))
    verified = submission_verify(submission_id=submission.pk)
    assert created is True
    assert (verified.status, verified.verdict, verified.error_code) == ("done", "rejected", code), (
        verified.error_message
    )
    assert verified.error_message and "Traceback" not in verified.error_message
    assert row_counts() == before
    assert Submission.objects.count() == 1


@pytest.mark.django_db
def test_the_corpus_covers_every_case_named_by_the_issue():
    assert {code for _, code in CASES.values()} >= {
        "wrong_key", "truncated", "corrupted", "not_age_file", "member_hash_mismatch", "too_many_members",
        "unsafe_path", "link_member", "decompression_bomb", "invalid_json", "schema_error", "non_finite_number",
        "unknown_release", "release_hash_mismatch", "unknown_task", "duplicate_task", "missing_faithfulness",
        "bad_signature", "header_too_large", "too_many_headers",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("content", "limit", "code"),
    [(b"", 1024 * 1024, "empty_file"), (b"age-encryption.org/v1\n" + bytes(5000), 4096, "too_large")],
)
@pytest.mark.django_db
def test_an_empty_or_oversized_upload_is_refused_before_anything_is_written(owner, settings, content, limit, code):
    settings.PODIUM_MAX_BUNDLE_BYTES = limit
    before = row_counts()
    with pytest.raises(SubmissionRejected) as refused:
        submission_create(user=owner, uploaded_file=io.BytesIO(content))
    assert refused.value.code == code
    assert row_counts() == before
    assert Submission.objects.count() == 0


@pytest.mark.django_db
def test_a_bundle_over_the_limit_lowered_after_upload_is_rejected_by_the_worker(corpus, owner, settings):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(corpus.good()))
    settings.PODIUM_MAX_BUNDLE_BYTES = 1024
    verified = submission_verify(submission_id=submission.pk)
    assert (verified.verdict, verified.error_code) == ("rejected", "too_large")


@pytest.mark.django_db
def test_episode_metrics_whose_sum_exceeds_a_double_reach_a_verdict_instead_of_crashing_the_worker(corpus, owner):
    """Finite metrics near the largest double (1.7e308) are valid JSON and valid episodes, but
    their exact sum overflows: math.fsum raised OverflowError and the bundle crashed its
    verification on every attempt. Their mean is finite, and the bundle is judged like any other
    (its claims no longer match the recomputation)."""
    import json

    directory = corpus.directory()
    results = min((directory / "results").glob("*.json"))
    document = json.loads(results.read_text(encoding="utf-8"))
    for episode in document["episodes"][:2]:
        episode["metric"] = 1.7e308
    results.write_text(json.dumps(document), encoding="utf-8")
    sealing.write_members(directory)
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(corpus.sealed(directory)))
    verified = submission_verify(submission_id=submission.pk)
    assert (verified.status, verified.verdict, verified.error_code) == ("done", "mismatch", ""), verified.error_message
    assert any(row["path"].endswith(".measured") for row in verified.diff if row["status"] != "match")
