"""Open a sealed bundle: decrypt, stream the archive, check hashes, parse members.

``open_bundle`` proves the bundle is *readable and intact*: authenticated by
age, a safe archive, every member listed in manifest.json with a matching
SHA-256, every JSON member well-formed and of the documented schema.  It does
not know releases or keys; :mod:`submissions.bundle.evaluate` decides the
verdict.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, Any

from pyrage import x25519

from submissions.bundle.archive import DEFAULT_LIMITS, Limits, Member, iter_members
from submissions.bundle.envelope import decrypt_to_tempfile, parse_identities
from submissions.bundle.errors import BundleError
from submissions.bundle.schema import (
    PAPER_GAP,
    RACE_RUN,
    EvaluatorResult,
    FaithfulnessVerdict,
    Manifest,
    RaceRun,
    check_no_duplicate_keys,
    parse_breakdown,
    parse_faithfulness,
    parse_manifest,
    parse_race_run,
    parse_result,
)
from submissions.bundle.strict_json import parse_json

__all__ = ["Bundle", "open_bundle", "read_bundle_dir", "read_payload"]

MANIFEST = "manifest.json"
BREAKDOWN = "score_breakdown.json"
FAITHFULNESS = "faithfulness.json"
RACE_RUN_MEMBER = "race_run.json"
RESULTS_PREFIX = "results/"
ARTIFACTS_PREFIX = "artifacts/"


@dataclass(frozen=True)
class Bundle:
    """A readable, intact bundle.  Which payload fields are set depends on ``kind``."""

    kind: str
    manifest: Manifest
    # paper_gap: task slug -> evaluator result (sorted by slug)
    results: dict[str, EvaluatorResult] = field(default_factory=dict)
    claimed_breakdown: dict[str, Any] | None = None
    faithfulness: dict[str, FaithfulnessVerdict] = field(default_factory=dict)
    race_run: RaceRun | None = None
    # every member other than manifest.json: name -> size in bytes
    member_sizes: dict[str, int] = field(default_factory=dict)


def _identities(identities: Iterable[str | x25519.Identity]) -> list[x25519.Identity]:
    parsed: list[x25519.Identity] = []
    texts: list[str] = []
    for item in identities:
        if isinstance(item, x25519.Identity):
            parsed.append(item)
        else:
            texts.append(item)
    if texts:
        parsed.extend(parse_identities(texts))
    if not parsed:
        raise ValueError("no age identity given")
    return parsed


def open_bundle(
    path: str | os.PathLike[str],
    identities: Sequence[str | x25519.Identity],
    *,
    limits: Limits = DEFAULT_LIMITS,
    name: str = "bundle",
    tmp_dir: str | None = None,
) -> Bundle:
    """Decrypt and read the bundle at ``path`` with any of ``identities``.

    ``identities`` are AGE-SECRET-KEY strings (or pyrage identities); all are
    tried, so keys retired by a rotation still open old bundles.  ``name`` is
    how messages refer to the file.  Raises :class:`BundleError` (never
    anything else for bad input); a bad identity is a ValueError (server
    misconfiguration, not the submitter's fault).
    """
    keys = _identities(identities)
    with decrypt_to_tempfile(path, keys, max_bytes=limits.max_bundle_bytes, name=name, tmp_dir=tmp_dir) as plain:
        return read_payload(plain, limits=limits, name=name)


def read_payload(payload: IO[bytes], *, limits: Limits = DEFAULT_LIMITS, name: str = "bundle") -> Bundle:
    """Read an already-decrypted tar / tar.zst stream into a :class:`Bundle`."""
    members: dict[str, Member] = {}
    for member in iter_members(payload, limits=limits, name=name):
        members[member.name] = member
    return _assemble(members)


def read_bundle_dir(
    directory: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS, members_as_sealed: bool = False
) -> Bundle:
    """Read an unsealed bundle directory (what ``check`` and ``seal`` work on).

    Same checks as :func:`open_bundle` after decryption, with the files of
    the directory as members (symlinks and special files are refused).  With
    ``members_as_sealed`` the manifest's members map is replaced by the one
    ``seal`` would write, i.e. the directory is judged as it will be sealed.
    """
    root = Path(directory)
    if not root.is_dir():
        raise BundleError("missing_member", f"{root}: not a directory")
    members: dict[str, Member] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            raise BundleError("link_member", f"{rel}: is a symbolic link; only regular files are allowed")
        if path.is_dir():
            continue
        if not path.is_file():
            raise BundleError("special_member", f"{rel}: is not a regular file")
        if len(members) >= limits.max_members:
            raise BundleError("too_many_members", f"{root}: more than {limits.max_members} files")
        size = path.stat().st_size
        keep = rel.endswith(".json")
        if size > (limits.max_json_member_bytes if keep else limits.max_member_bytes):
            raise BundleError("too_large", f"{rel}: {size} bytes is over the size limit")
        digest = hashlib.sha256()
        data = path.read_bytes() if keep else None
        if data is not None:
            digest.update(data)
        else:
            with open(path, "rb") as f:
                for chunk in iter(partial(f.read, 1 << 16), b""):
                    digest.update(chunk)
        members[rel] = Member(name=rel, size=size, sha256=digest.hexdigest(), data=data)
    return _assemble(members, members_as_sealed=members_as_sealed)


def _json(member: Member) -> Any:
    assert member.data is not None
    return parse_json(member.data, member=member.name)


def _require(members: dict[str, Member], member_name: str, why: str) -> Member:
    member = members.get(member_name)
    if member is None:
        raise BundleError("missing_member", f"{member_name}: missing from the bundle ({why})")
    return member


def _assemble(members: dict[str, Member], *, members_as_sealed: bool = False) -> Bundle:
    manifest_member = _require(members, MANIFEST, "every bundle starts from its run manifest")
    manifest_doc = _json(manifest_member)
    if members_as_sealed and isinstance(manifest_doc, dict):
        manifest_doc["members"] = {n: m.sha256 for n, m in members.items() if n != MANIFEST}
    manifest = parse_manifest(manifest_doc)
    check_no_duplicate_keys(manifest_doc, where=MANIFEST)
    _check_listed_members(manifest, members)
    sizes = {n: m.size for n, m in members.items() if n != MANIFEST}
    _check_member_names(manifest.kind, sizes)
    if manifest.kind == PAPER_GAP:
        return _paper_gap(manifest, members, sizes)
    member = _require(members, RACE_RUN_MEMBER, "a race_run bundle carries the validator's run")
    doc = _json(member)
    run = parse_race_run(doc, bound=manifest.bound)
    check_no_duplicate_keys(doc, where=RACE_RUN_MEMBER)
    if run.agent != manifest.agent:
        raise BundleError(
            "schema_error",
            f"race_run.json: agent {run.agent.name} {run.agent.version} differs from manifest.json's "
            f"{manifest.agent.name} {manifest.agent.version}",
        )
    return Bundle(kind=RACE_RUN, manifest=manifest, race_run=run, member_sizes=sizes)


def _check_listed_members(manifest: Manifest, members: dict[str, Member]) -> None:
    """Every member but the manifest is listed with its SHA-256, and nothing else is present."""
    for member_name in sorted(manifest.members):
        member = members.get(member_name)
        if member is None:
            raise BundleError(
                "missing_member", f"{member_name}: listed in manifest.json members but missing from the bundle"
            )
        if member.sha256 != manifest.members[member_name]:
            raise BundleError(
                "member_hash_mismatch",
                f"{member_name}: SHA-256 is {member.sha256} but manifest.json members says "
                f"{manifest.members[member_name]}; the file changed after the manifest was written",
            )
    for member_name in sorted(members):
        if member_name != MANIFEST and member_name not in manifest.members:
            raise BundleError(
                "unexpected_member", f"{member_name}: present in the bundle but not listed in manifest.json members"
            )


def _check_member_names(kind: str, sizes: dict[str, int]) -> None:
    """Only the members a bundle of ``kind`` may carry: its own files, results/<slug>.json
    (paper-gap) and anything under artifacts/."""
    allowed_top = {
        PAPER_GAP: {BREAKDOWN, FAITHFULNESS},
        RACE_RUN: {RACE_RUN_MEMBER},
    }[kind]
    for member_name in sorted(sizes):
        if member_name.startswith(ARTIFACTS_PREFIX):
            continue
        if kind == PAPER_GAP and member_name.startswith(RESULTS_PREFIX):
            if not member_name.endswith(".json") or member_name.count("/") != 1:
                raise BundleError(
                    "schema_error", f"{member_name}: evaluator results must be named results/<task-slug>.json"
                )
            continue
        if member_name not in allowed_top:
            raise BundleError(
                "schema_error",
                f"{member_name}: not a member of a {kind} bundle (allowed: "
                + ", ".join(sorted(allowed_top))
                + (", results/<slug>.json" if kind == PAPER_GAP else "")
                + ", artifacts/...)",
            )


def _paper_gap(manifest: Manifest, members: dict[str, Member], sizes: dict[str, int]) -> Bundle:
    results = _paper_gap_results(manifest, members)
    breakdown_doc = _json(_require(members, BREAKDOWN, "the claimed scores are compared with the recomputation"))
    claimed = parse_breakdown(breakdown_doc)
    check_no_duplicate_keys(breakdown_doc, where=BREAKDOWN)
    faithfulness = {}
    if FAITHFULNESS in members:
        doc = _json(members[FAITHFULNESS])
        faithfulness = parse_faithfulness(doc, bound=manifest.bound)
        check_no_duplicate_keys(doc, where=FAITHFULNESS)
        for slug in sorted(faithfulness):
            if slug not in manifest.genres:
                raise BundleError("schema_error", f"faithfulness.json: task {slug!r} has no results in this bundle")
    return Bundle(
        kind=PAPER_GAP,
        manifest=manifest,
        results=results,
        claimed_breakdown=claimed,
        faithfulness=faithfulness,
        member_sizes=sizes,
    )


def _paper_gap_results(manifest: Manifest, members: dict[str, Member]) -> dict[str, EvaluatorResult]:
    """The evaluator results by task: one per task the manifest lists, and no other."""
    results: dict[str, EvaluatorResult] = {}
    for member_name in sorted(members):
        if not member_name.startswith(RESULTS_PREFIX):
            continue
        doc = _json(members[member_name])
        result = parse_result(doc, where=member_name, bound=manifest.bound)
        check_no_duplicate_keys(doc, where=member_name)
        if result.task in results:
            raise BundleError(
                "duplicate_task",
                f"{member_name}: task {result.task!r} already has results in {results[result.task].member}",
            )
        results[result.task] = result
    for slug in sorted(manifest.genres):
        if slug not in results:
            raise BundleError(
                "missing_member",
                f"results/{slug}.json: manifest.json lists task {slug!r} but the bundle has no results for it",
            )
    for slug in sorted(results):
        if slug not in manifest.genres:
            raise BundleError(
                "schema_error",
                f"{results[slug].member}: task {slug!r} is not listed in manifest.json tasks (declare its genre there)",
            )
    return results
