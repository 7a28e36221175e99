"""Podium result bundles: format, standalone tool and pure verification.

Importable without Django or a database (stdlib, pyrage, cryptography,
zstandard, PyYAML, ``scoring`` and ``leaderboard.manifest`` only).  The
format is specified in docs/bundle-format.md.

Public API::

    open_bundle(path, identities, *, limits=DEFAULT_LIMITS) -> Bundle
    evaluate_paper_gap(bundle, *, release_spec, required_task_set_hash, signing_keys) -> Outcome
    BundleError(code, message), ERROR_CODES
    sign_results(directory, key, *, tasks=()) -> int                  # an evaluator, in place
    sign_faithfulness(directory, key, *, rubric_version, tasks=()) -> int   # a judge, in place
"""

from __future__ import annotations

from submissions.bundle.archive import DEFAULT_LIMITS, Limits
from submissions.bundle.bundle import Bundle, open_bundle, read_bundle_dir, read_payload
from submissions.bundle.errors import ERROR_CODES, BundleError
from submissions.bundle.evaluate import (
    ATTESTED,
    MISMATCH,
    REJECTED,
    VALIDATED,
    VERDICTS,
    Outcome,
    TaskCheck,
    evaluate_paper_gap,
)
from submissions.bundle.schema import FORMAT, KINDS
from submissions.bundle.sign_dir import sign_faithfulness, sign_results
from submissions.bundle.signatures import check_signature, key_id_for, sign_object, signed_payload

__all__ = [
    "ATTESTED",
    "DEFAULT_LIMITS",
    "ERROR_CODES",
    "FORMAT",
    "KINDS",
    "MISMATCH",
    "REJECTED",
    "VALIDATED",
    "VERDICTS",
    "Bundle",
    "BundleError",
    "Limits",
    "Outcome",
    "TaskCheck",
    "check_signature",
    "evaluate_paper_gap",
    "key_id_for",
    "open_bundle",
    "read_bundle_dir",
    "read_payload",
    "sign_faithfulness",
    "sign_object",
    "sign_results",
    "signed_payload",
]
