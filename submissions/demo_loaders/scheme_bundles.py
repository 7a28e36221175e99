"""Writing race_run bundles (docs/bundle-format.md) for the demo and tests.

The same bytes a harness or a validator would upload: manifest.json listing
every member's SHA-256, the kind's payload member, a plain tar archive sealed
with age to the site's public key. A race run is signed by the validator's
Ed25519 key over its canonical JSON (submissions.bundle.signatures).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from scoring import race as race_scoring
from submissions.bundle.envelope import seal_file
from submissions.bundle.schema import FORMAT_V1, FORMAT_V2
from submissions.bundle.signatures import sign_object
from submissions.models import Submission
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify


def _dump(value: Any) -> bytes:
    return json.dumps(value, indent=1, sort_keys=True, allow_nan=False).encode("utf-8")


def bundle_members(
    *,
    kind: str,
    benchmark: str,
    release: str,
    agent: str,
    version: str,
    payload: Mapping[str, bytes],
    challenge: str | None = None,
) -> dict[str, bytes]:
    """manifest.json plus ``payload``, with the manifest listing every payload member's SHA-256
    (podium-bundle/2 with ``challenge``, else the retired podium-bundle/1)."""
    manifest: dict[str, Any] = {
        "format": FORMAT_V2 if challenge is not None else FORMAT_V1,
        "kind": kind,
        "benchmark": benchmark,
        "release": release,
        "agent": {"name": agent, "version": version},
        "members": {name: hashlib.sha256(data).hexdigest() for name, data in payload.items()},
    }
    if challenge is not None:
        manifest["challenge"] = challenge
    return {"manifest.json": _dump(manifest), **payload}


def outcome_document(outcome: race_scoring.TaskOutcome) -> dict[str, Any]:
    """One race_run.json outcome, with the paid reward and category the validator computed."""
    category = race_scoring.failure_category(outcome)
    return {
        "task_id": outcome.task_id,
        "order_placed": outcome.order_placed,
        "verdict_status": outcome.verdict_status,
        "reward": outcome.reward,
        "agent_error": outcome.agent_error,
        "step_limit_hit": outcome.step_limit_hit,
        "time_limit_hit": outcome.time_limit_hit,
        "env_error": outcome.env_error,
        "verifier_error": outcome.verifier_error,
        "paid_reward": race_scoring.paid_reward(outcome),
        "failure": category.code if category else None,
    }


def race_run_members(
    *,
    benchmark: str,
    release: str,
    race: int | None,
    validator: str,
    agent: str,
    version: str,
    outcomes: list[race_scoring.TaskOutcome],
    expected_task_ids: list[str],
    key: Ed25519PrivateKey,
    claimed: Mapping[str, Any] | None = None,
    challenge: str | None = None,
) -> dict[str, bytes]:
    """A signed race_run bundle; ``claimed`` defaults to the honest run score. With
    ``challenge`` it is podium-bundle/2 and the validator's signature covers the challenge."""
    if claimed is None:
        score = race_scoring.run_score(outcomes, expected_task_ids)
        claimed = {"status": score.status, "run_score": score.score}
    document = {
        "validator": validator,
        "race": race,
        "agent": {"name": agent, "version": version},
        "outcomes": [outcome_document(outcome) for outcome in outcomes],
        "claimed": dict(claimed),
    }
    if challenge is not None:
        document["challenge"] = challenge
    payload = {"race_run.json": _dump(sign_object(document, key))}
    return bundle_members(
        kind="race_run",
        benchmark=benchmark,
        release=release,
        agent=agent,
        version=version,
        payload=payload,
        challenge=challenge,
    )


def seal_members(members: Mapping[str, bytes], recipient: str) -> bytes:
    """A tar of ``members`` sealed with age to ``recipient`` (an age1... public key)."""
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    with tempfile.TemporaryDirectory(prefix="podium-seal-") as work:
        plain = Path(work, "bundle.tar")
        sealed = Path(work, "bundle.tar.age")
        with open(plain, "wb") as handle:
            handle.write(archive.getvalue())
        seal_file(plain, sealed, [recipient])
        with open(sealed, "rb") as handle:
            return handle.read()


def submit_sealed(*, user: Any, sealed: bytes, name: str, api_key: Any = None) -> Any:
    """Upload sealed bytes through the real path (submission_create, then submission_verify
    in-process) and return the submission as verification left it."""

    submission, _ = submission_create(user=user, uploaded_file=io.BytesIO(sealed), api_key=api_key, original_name=name)
    submission_verify(submission_id=submission.pk)
    return Submission.objects.get(pk=submission.pk)
