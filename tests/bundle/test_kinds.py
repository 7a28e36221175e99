"""race_run bundles (schema, required signature) and the retired scorecard kind."""

from __future__ import annotations

import hashlib
import json

import pytest

from submissions.bundle import BundleError, check_signature, key_id_for, open_bundle, sign_object
from submissions.bundle.signatures import generate_signing_key, public_key_b64


def _bundle(kind: str, member: str, doc: dict, *, agent=("agent", "1.0")) -> list[tuple[str, bytes]]:
    data = json.dumps(doc).encode()
    manifest = {
        "format": "podium-bundle/1",
        "kind": kind,
        "benchmark": "bench",
        "release": "r1",
        "agent": {"name": agent[0], "version": agent[1]},
        "members": {member: hashlib.sha256(data).hexdigest()},
    }
    return [("manifest.json", json.dumps(manifest).encode()), (member, data)]


def _outcome(task_id: str, **overrides) -> dict:
    doc = {
        "task_id": task_id,
        "order_placed": True,
        "verdict_status": "accepted",
        "reward": 1.0,
        "agent_error": False,
        "step_limit_hit": False,
        "time_limit_hit": False,
        "env_error": False,
        "verifier_error": False,
        "paid_reward": 1.0,
        "failure": None,
    }
    doc.update(overrides)
    return doc


def _race_doc(key, **overrides) -> dict:
    doc = {
        "validator": "validator-1",
        "race": 3,
        "agent": {"name": "agent", "version": "1.0"},
        "outcomes": [
            _outcome("t1"),
            _outcome("t2", verdict_status="rejected", reward=None, paid_reward=0.0, failure="rejected_order"),
        ],
        "claimed": {"status": "ok", "run_score": 0.5},
    }
    doc.update(overrides)
    return sign_object(doc, key) if key is not None else doc


def _open(seal_bytes, tar_bytes, site_identity, entries):
    return open_bundle(seal_bytes(tar_bytes(entries)), [site_identity[0]])


def test_a_scorecard_bundle_is_refused_as_retired(seal_bytes, tar_bytes, site_identity):
    # A harness-written card ("solved": true everywhere) is never trusted: cards are played on the server.
    doc = {
        "episodes": [{"level_id": "L1", "steps": 12, "solved": True, "deadlocked": False, "actions": 12}],
        "claimed": {"episodes": 100, "solved": 1, "success_rate": 0.01},
    }
    with pytest.raises(BundleError) as err:
        _open(seal_bytes, tar_bytes, site_identity, _bundle("scorecard", "scorecard.json", doc))
    assert (err.value.code, err.value.message) == (
        "kind_retired",
        "manifest.json: kind 'scorecard' is no longer accepted: scorecards are played on the server "
        "(POST /api/v1/scorecards/, see docs/api.md), never uploaded",
    )


def test_it_reads_a_signed_race_run(seal_bytes, tar_bytes, site_identity):
    key = generate_signing_key()
    bundle = _open(seal_bytes, tar_bytes, site_identity, _bundle("race_run", "race_run.json", _race_doc(key)))
    run = bundle.race_run
    assert (run.validator, run.race, run.claimed_status, run.claimed_run_score) == ("validator-1", 3, "ok", 0.5)
    assert [o.to_scoring().task_id for o in run.outcomes] == ["t1", "t2"]
    public = public_key_b64(key)
    assert check_signature(run.raw, {key_id_for(public): public}, where="race_run.json").status == "valid"


def test_it_accepts_a_qualifying_run_with_a_null_race(seal_bytes, tar_bytes, site_identity):
    doc = _race_doc(generate_signing_key(), race=None)
    bundle = _open(seal_bytes, tar_bytes, site_identity, _bundle("race_run", "race_run.json", doc))
    assert bundle.race_run.race is None


def test_it_rejects_an_unsigned_race_run(seal_bytes, tar_bytes, site_identity):
    with pytest.raises(BundleError) as err:
        _open(seal_bytes, tar_bytes, site_identity, _bundle("race_run", "race_run.json", _race_doc(None)))
    assert (err.value.code, err.value.message) == (
        "missing_signature",
        "race_run.json: a race run must carry the validator's Ed25519 signature (field 'signature')",
    )


def test_it_rejects_a_task_reported_twice_in_a_race_run(seal_bytes, tar_bytes, site_identity):
    doc = _race_doc(generate_signing_key(), outcomes=[_outcome("t1"), _outcome("t1")])
    with pytest.raises(BundleError) as err:
        _open(seal_bytes, tar_bytes, site_identity, _bundle("race_run", "race_run.json", doc))
    assert (err.value.code, err.value.message) == (
        "duplicate_task",
        "race_run.json: outcomes[1].task_id 't1' is reported twice",
    )


def test_it_rejects_a_race_run_for_another_agent_than_the_manifest(seal_bytes, tar_bytes, site_identity):
    entries = _bundle("race_run", "race_run.json", _race_doc(generate_signing_key()), agent=("other", "2"))
    with pytest.raises(BundleError) as err:
        _open(seal_bytes, tar_bytes, site_identity, entries)
    assert (err.value.code, err.value.message) == (
        "schema_error",
        "race_run.json: agent agent 1.0 differs from manifest.json's other 2",
    )


def test_it_rejects_a_bad_verdict_status(seal_bytes, tar_bytes, site_identity):
    doc = _race_doc(generate_signing_key(), outcomes=[_outcome("t1", verdict_status="maybe")])
    with pytest.raises(BundleError) as err:
        _open(seal_bytes, tar_bytes, site_identity, _bundle("race_run", "race_run.json", doc))
    assert (err.value.code, err.value.message) == (
        "schema_error",
        "race_run.json: outcomes[0].verdict_status must be 'accepted', 'rejected' or null, got 'maybe'",
    )
