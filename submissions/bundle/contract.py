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

from submissions.bundle.errors import BundleError

__all__ = ["EvaluatorKey", "JudgeKey", "ValidatorKey", "check_challenge", "results_digest"]


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
    """A registered judge key: its public identity and, per task it is calibrated for, the rubric version."""

    public_key: bytes | str
    name: str
    rubrics: Mapping[str, str] = field(default_factory=dict)


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


def results_digest(documents: Iterable[tuple[str, Mapping[str, Any]]], *, as_signed: bool = True) -> str:
    """SHA-256 over the measured content of (name, document) pairs, order-independent; two
    documents with the same signed bytes (JCS) have the same digest. ``as_signed=False`` is the
    digest stored before numbers were read as JCS reads them: matched against older rows only."""
    read = _as_signed if as_signed else (lambda value: value)
    canonical = {
        name: {key: read(value) for key, value in doc.items() if key not in _BINDING_FIELDS} for name, doc in documents
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()
