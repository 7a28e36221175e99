"""Sign an unsealed bundle directory's documents in place, as the tool's ``sign-results``
(an evaluator over its results) and ``sign-faithfulness`` (a judge over its verdicts) do.

Each signature covers the manifest's challenge (podium-bundle/2, docs/bundle-format.md
section 11.3) with the document, and manifest.json's ``members`` map is rewritten after
the files change, so the directory stays ready to pack. A file is replaced whole or not at
all: it is written beside the old one and renamed over it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from submissions.bundle.canonical_json import CanonicalJSONError
from submissions.bundle.errors import BundleError
from submissions.bundle.schema import check_no_duplicate_keys, parse_faithfulness
from submissions.bundle.seal import write_members
from submissions.bundle.signatures import judged_results_sha256, sign_object
from submissions.bundle.strict_json import parse_json

__all__ = ["SignError", "manifest_challenge", "sign_faithfulness", "sign_results", "signed_verdict"]

MANIFEST = "manifest.json"
FAITHFULNESS = "faithfulness.json"


class SignError(Exception):
    """The directory cannot be signed as asked (no such file, task or challenge): the
    signer's to fix, not a fault in the bundle's content (that is a BundleError)."""


def manifest_challenge(directory: str | os.PathLike[str]) -> str | None:
    """The challenge in ``directory``'s manifest.json (podium-bundle/2), or None."""
    path = Path(directory, MANIFEST)
    manifest = parse_json(path.read_bytes(), member=MANIFEST) if path.is_file() else {}
    challenge = manifest.get("challenge") if isinstance(manifest, dict) else None
    return challenge if isinstance(challenge, str) else None


def sign_results(directory: str | os.PathLike[str], key: Ed25519PrivateKey, *, tasks: Sequence[str] = ()) -> int:
    """Sign every ``results/*.json`` (only ``tasks``' when given) with the evaluator's ``key``,
    first adding the manifest's challenge when it has one; return how many were signed.

    One evaluator key is registered for one simulator, so a bundle spanning several
    simulators is signed once per key, each over its own ``tasks``."""
    where = f"{directory}/results"
    by_task = {path.stem: path for path in sorted(Path(directory, "results").glob("*.json"))}
    if not by_task:
        raise SignError(f"{where}: no results/*.json to sign")
    challenge = manifest_challenge(directory)
    chosen = _chosen(by_task, tasks, where=where, what="results")
    for slug in chosen:
        path = by_task[slug]
        rel = path.relative_to(directory).as_posix()
        doc = _object(parse_json(path.read_bytes(), member=rel), rel)
        if challenge is not None:
            doc["challenge"] = challenge
        _replace_json(path, _signed(doc, key, where=rel))
    _refresh_members(directory)
    return len(chosen)


def sign_faithfulness(
    directory: str | os.PathLike[str], key: Ed25519PrivateKey, *, rubric_version: str, tasks: Sequence[str] = ()
) -> int:
    """Sign the verdicts of ``faithfulness.json`` (only ``tasks``' when given) with the judge's
    ``key``, in the signed form ``{task, faithful, judge, rubric_version, challenge,
    results_sha256, signature}``; return how many were signed (:func:`signed_verdict`). Each
    verdict names the results it judged, ``results/<task>.json`` as it is now: sign the results
    first. Nothing is written when a verdict would be refused by the server's schema."""
    path = Path(directory, FAITHFULNESS)
    if not path.is_file():
        raise SignError(f"{path}: no {FAITHFULNESS} to sign")
    if not rubric_version.strip():
        raise SignError("rubric version: empty; give the rubric version the judge's key is calibrated for")
    challenge = manifest_challenge(directory)
    if challenge is None:
        # Only podium-bundle/2 reads a signed verdict: without a challenge inside it, a verdict
        # could be lifted into another account's run.
        raise SignError(
            f"{Path(directory, MANIFEST)}: no challenge; a judge signs a verdict together with the run's challenge "
            "(podium-bundle/2): ask the site for one (POST /api/v1/challenges/) and write it into manifest.json first"
        )
    doc = parse_json(path.read_bytes(), member=FAITHFULNESS)
    # What the server would refuse in the file as it is (a task twice, a missing or unknown
    # field, a verdict that is not true or false) is refused with the server's code: a signer
    # that read past it would sign one of two verdicts, or a field the server never reads.
    verdicts = parse_faithfulness(doc, bound=True)
    check_no_duplicate_keys(doc, where=FAITHFULNESS)
    chosen = _chosen(verdicts, tasks, where=FAITHFULNESS, what="verdict")
    signed = {slug: verdict.raw for slug, verdict in verdicts.items()}
    for slug in chosen:
        verdict = verdicts[slug]
        signed[slug] = signed_verdict(
            slug,
            faithful=verdict.faithful,
            judge=verdict.judge,
            rubric_version=rubric_version,
            challenge=challenge,
            results_sha256=_judged_results(directory, slug),
            key=key,
        )
    parse_faithfulness(signed, bound=True)  # e.g. a rubric version over the schema's 100 characters
    _replace_json(path, signed)
    _refresh_members(directory)
    return len(chosen)


def _judged_results(directory: str | os.PathLike[str], slug: str) -> str:
    """``results_sha256`` of ``results/<slug>.json`` in ``directory`` (what the judge judged)."""
    rel = f"results/{slug}.json"
    path = Path(directory, rel)
    if not path.is_file():
        raise SignError(f"{path}: no results for task {slug!r}; a judge's verdict names the results it judged")
    try:
        return judged_results_sha256(_object(parse_json(path.read_bytes(), member=rel), rel))
    except CanonicalJSONError as exc:
        raise BundleError("invalid_json", f"{rel}: cannot be printed as canonical JSON: {exc}") from None


def signed_verdict(
    task: str,
    *,
    faithful: bool,
    judge: str,
    rubric_version: str,
    challenge: str,
    results_sha256: str | None,
    key: Ed25519PrivateKey,
) -> dict[str, Any]:
    """One judge-signed faithfulness verdict (docs/bundle-format.md 11.3): the signature covers
    the task, the verdict, the rubric version the judge was calibrated with, the run's
    challenge and the judged results (``results_sha256``, :func:`judged_results_sha256`), so it
    cannot be moved to another task, rubric, run or attempt. ``results_sha256=None`` writes the
    older form without it, which the server reads but which attests nothing."""
    verdict = {"task": task, "faithful": faithful, "judge": judge, "rubric_version": rubric_version}
    if results_sha256 is not None:
        verdict["results_sha256"] = results_sha256
    return _signed({**verdict, "challenge": challenge}, key, where=f"{FAITHFULNESS}: {task}")


def _chosen(available: Any, tasks: Sequence[str], *, where: str, what: str) -> list[str]:
    """``tasks``, each of which must be in ``available``; all of ``available`` when none is named."""
    if not tasks:
        return sorted(available)
    missing = sorted(set(tasks) - set(available))
    if missing:
        raise SignError(f"{where}: no {what} for task(s) {', '.join(missing)}")
    return sorted(set(tasks))


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BundleError("schema_error", f"{where}: the document must be an object")
    return dict(value)


def _signed(doc: dict[str, Any], key: Ed25519PrivateKey, *, where: str) -> dict[str, Any]:
    try:
        return sign_object(doc, key)
    except ValueError as exc:  # a value JCS cannot print (an integer beyond 2^53)
        raise BundleError("schema_error", f"{where}: cannot be signed ({exc})") from None


def _replace_json(path: Path, doc: object) -> None:
    with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, encoding="utf-8") as tmp:
        json.dump(doc, tmp, indent=1, sort_keys=True, allow_nan=False)
        tmp.write("\n")
    Path(tmp.name).replace(path)


def _refresh_members(directory: str | os.PathLike[str]) -> None:
    # The signed files' digests changed: a map left as it was would be stale (member_hash_mismatch).
    if Path(directory, MANIFEST).is_file():
        write_members(directory)
