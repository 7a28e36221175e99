"""docs/bundle-format.md stays true: its signature test vector and its error-code table."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from submissions.bundle import ERROR_CODES, key_id_for, sign_object, signed_payload
from submissions.bundle.signatures import public_key_b64

DOC = (Path(__file__).resolve().parents[2] / "docs" / "bundle-format.md").read_text(encoding="utf-8")

VECTOR = {
    "task": "drones_ego_planner",
    "evaluator": {"id": "pybullet-drones-evaluator", "simulator": "pybullet-drones"},
    "episodes": [
        {"metric": 0.856939, "rates": {}, "aborted": False},
        {"metric": 1e-7, "rates": {"crash_rate": 0}, "aborted": True},
    ],
}


def test_the_documented_signature_test_vector_holds():
    seed = base64.b64decode("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    key = Ed25519PrivateKey.from_private_bytes(seed)
    public = public_key_b64(key)
    signed = sign_object(VECTOR, key)
    assert f"public key\n`{public}`, key id `{key_id_for(public)}`" in DOC
    assert f"\n{signed_payload(VECTOR).decode()}\n" in DOC
    assert f"`{signed['signature']['sig']}`" in DOC


def test_the_documented_error_codes_are_exactly_the_codes():
    table = DOC.split("## 10. Error codes", 1)[1]
    documented = re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.MULTILINE)
    assert documented == list(ERROR_CODES)
