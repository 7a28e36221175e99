"""What every scheme's pure ``evaluate`` shares: the trust inputs the
server hands in (scoped keys), the challenge binding of podium-bundle/2 and the results
digest behind ``duplicate_results``.

Pure: no Django, no database. A scheme is two files: its pure evaluator (this package,
``evaluate_<scheme>.py``) and its recording service (``submissions/services``), registered
in ``submissions.services.verification.SCHEMES``. Every refusal is a
:class:`submissions.bundle.errors.BundleError` (stable ``code``, human ``message``): the one
rejection type from the archive reader to the recording service.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from submissions.bundle.canonical_json import CanonicalJSONError, plain_texts
from submissions.bundle.errors import BundleError
from submissions.bundle.signatures import judged_results_sha256

__all__ = [
    "DocumentTexts",
    "EvaluatorKey",
    "JudgeKey",
    "ValidatorKey",
    "check_challenge",
    "check_judged_results",
    "document_texts",
    "results_digest",
    "results_digests",
]


@dataclass(frozen=True)
class EvaluatorKey:
    """A registered evaluator key and what it may sign: results of tasks on its simulator,
    narrowed to ``tasks`` when that is not empty or ``narrowed`` is set. ``narrowed`` with no
    ``tasks`` is a key narrowed to tasks of other benchmarks only (the server hands in the
    scope of the bundle's benchmark): it signs nothing here, it is not widened to the simulator."""

    public_key: bytes | str
    simulator: str
    tasks: frozenset[str] = frozenset()
    narrowed: bool = False

    def covers(self, *, task: str, simulator: str) -> bool:
        if simulator != self.simulator:
            return False
        return task in self.tasks if self.tasks or self.narrowed else True


@dataclass(frozen=True)
class JudgeKey:
    """A registered judge key: its public identity and, per task it is calibrated for, the rubric version.

    ``registered`` (task -> rubric the key was registered with) and ``calibrated`` (task -> the
    rubric the release's faithfulness calibration recorded) only explain a refusal: a key
    registered for a rubric the release did not calibrate is not calibrated for the task."""

    public_key: bytes | str
    name: str
    rubrics: Mapping[str, str] = field(default_factory=dict)
    registered: Mapping[str, str] = field(default_factory=dict)
    calibrated: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ValidatorKey:
    """A registered validator key: the validator it belongs to and the one benchmark it signs race runs of."""

    public_key: bytes | str
    validator: str
    benchmark: str | None


def check_challenge(found: str | None, expected: str | None, *, where: str) -> None:
    """In a podium-bundle/2 bundle every signed object carries the manifest's challenge."""
    if expected is not None and found != expected:
        raise BundleError(
            "challenge_mismatch",
            f"{where}: challenge differs from manifest.json's; every signed document of a bundle must carry "
            "the challenge the run was made for",
        )


def check_judged_results(
    named: str, results: Mapping[str, Any], *, judged_sha256: str | None, member: str, where: str
) -> None:
    """A judge's signed verdict (at ``where``) that names the results it judged (``named``, its
    ``results_sha256``) judged exactly ``results`` (``member``), or ``verdict_results_mismatch``:
    within one challenge a task may be run more than once, and a verdict of one attempt must
    not vouch for another attempt's results. ``judged_sha256``: the results' signed bytes' digest
    when a signature check already has it (None: computed here, as for unsigned results)."""
    judged = judged_sha256
    if judged is None:  # unsigned results: the same bytes a signature would have covered
        try:
            judged = judged_results_sha256(results)
        except CanonicalJSONError:
            judged = ""
    if named != judged:
        raise BundleError(
            "verdict_results_mismatch",
            f"{where}: the judge's verdict names results with SHA-256 {named}, but {member}'s signed bytes "
            f"have SHA-256 {judged or '(none: not printable as canonical JSON)'}; a judge's verdict counts "
            "only for the results it judged (sign the results first, then have the judge sign the verdict)",
        )


# Fields that bind a document to one upload rather than describe what was measured:
# the digest leaves them out, so re-sealing or re-signing the same results is recognised.
_BINDING_FIELDS = frozenset({"signature", "challenge"})


# JCS (what a signature covers) prints an integral double as an integer: 1.0 and 1, 0.0 and -0.0
# and 0 are the same signed bytes. Up to 2**53 (beyond, JCS refuses an integer) the digest reads
# them the same way, so rewriting a signed result's numbers keeps its signature *and* its digest.
_MAX_SAFE_INTEGER = 2**53


def _as_signed(value: Any) -> Any:
    """``value`` with every number JCS prints as an integer written as that integer."""
    kind = type(value)
    if kind is float:
        return int(value) if value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER else value
    if kind is dict:
        return {key: _as_signed(item) for key, item in value.items()}
    if kind is list:
        return [_as_signed(item) for item in value]
    return value


def _defined_digest(documents: Iterable[tuple[str, Mapping[str, Any]]], *, as_signed: bool) -> str:
    """The digest by its definition: each document without its binding fields, read as signed
    (``_as_signed``) or as it is, all dumped as one sorted ASCII JSON object."""
    read = _as_signed if as_signed else (lambda value: value)
    canonical = {
        name: {key: read(value) for key, value in doc.items() if key not in _BINDING_FIELDS} for name, doc in documents
    }
    return _sha256(json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class DocumentTexts:
    """One document encoded once (canonical_json.plain_texts) for its signature and both results
    digests: the bytes its signature covers, and its text inside each digest. Each is None where it
    is computed the defining way instead (the signed bytes by signed_payload)."""

    signed_payload: bytes | None = None
    digest: str | None = None
    legacy: str | None = None


_NO_TEXTS = DocumentTexts()


def _without_challenge(text: str | None, head: str) -> str | None:
    """An object's text without its first item, ``head`` (``{"challenge":"..."``), or None."""
    if text is None:
        return None
    if text.startswith(head) and text[len(head) : len(head) + 1] == ",":
        return "{" + text[len(head) + 1 :]
    return "{}" if text == head + "}" else None


def document_texts(doc: Mapping[str, Any]) -> DocumentTexts:
    """``doc``'s signed bytes (signatures.signed_payload) and its texts in results_digests,
    from one walk and one encoding where the document is plain; the digests' texts are the
    signed text without its challenge when that text is ASCII (then ensure_ascii changes nothing)
    and the challenge, a string, is its first key (then its item is the text's first)."""
    payload = {key: value for key, value in doc.items() if key != "signature"}
    texts = plain_texts(payload)
    if texts is None:
        return _NO_TEXTS
    digest: str | None = texts.as_signed
    legacy: str | None = texts.as_is
    if not texts.as_is.isascii():
        return DocumentTexts(texts.canonical)
    if "challenge" in payload:
        challenge = payload["challenge"]
        if type(challenge) is not str or min(payload) != "challenge":
            return DocumentTexts(texts.canonical)
        head = '{"challenge":' + json.dumps(challenge)
        digest, legacy = _without_challenge(digest, head), _without_challenge(legacy, head)
    return DocumentTexts(texts.canonical, digest, legacy)


def results_digests(
    documents: Iterable[tuple[str, Mapping[str, Any]]], texts: Mapping[str, DocumentTexts] | None = None
) -> tuple[str, str]:
    """``(results_digest(documents), results_digest(documents, as_signed=False))``, each document
    encoded once; ``texts`` the documents' :func:`document_texts` where the caller has them."""
    named = list(documents)
    # A name given twice keeps its last document, as defined (unpacked as the definition unpacks).
    by_name = {name: doc for name, doc in named}  # noqa: C416
    parts: list[tuple[str, DocumentTexts]] = []
    if all(type(name) is str for name in by_name):
        for name in sorted(by_name):
            found = texts.get(name) if texts is not None else None
            found = found or document_texts(by_name[name])
            if found.digest is None or found.legacy is None:
                break
            parts.append((json.dumps(name), found))
        else:
            digest = "{" + ",".join(f"{key}:{found.digest}" for key, found in parts) + "}"
            legacy = "{" + ",".join(f"{key}:{found.legacy}" for key, found in parts) + "}"
            return _sha256(digest), _sha256(legacy)
    return _defined_digest(named, as_signed=True), _defined_digest(named, as_signed=False)


def results_digest(documents: Iterable[tuple[str, Mapping[str, Any]]], *, as_signed: bool = True) -> str:
    """SHA-256 over the measured content of (name, document) pairs, order-independent; two
    documents with the same signed bytes (JCS) have the same digest. ``as_signed=False`` is the
    digest stored before numbers were read as JCS reads them: matched against older rows only."""
    if not as_signed:  # alone, the definition is the cheaper way (results_digests gives both from one encoding)
        return _defined_digest(documents, as_signed=False)
    return results_digests(documents)[0]
