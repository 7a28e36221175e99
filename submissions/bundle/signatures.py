"""Ed25519 signatures over canonical JSON (evaluator and validator attestation).

A signed object carries ``"signature": {"key_id", "alg": "ed25519", "sig"}``.
The signed bytes are :func:`canonical_json` (RFC 8785) of the object *without*
its ``signature`` field.  ``key_id`` is the first 16 lower-case hex digits of
SHA-256 of the raw 32-byte public key (the SigningKey.key_id of the site);
``sig`` is the standard base64 (with padding) of the 64-byte signature.

Verification has three outcomes, never more:

* ``valid``        -- the key id is registered and the signature verifies;
* ``unsigned`` / ``unregistered`` -- no signature, or a key id the site does
  not know: the run can still be validated, just not attested;
* a forged signature (registered key id, signature does not verify) raises
  ``BundleError("bad_signature")``: the bundle is rejected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from submissions.bundle.canonical_json import CanonicalJSONError, canonical_json
from submissions.bundle.errors import BundleError

__all__ = [
    "ALG",
    "UNREGISTERED",
    "UNSIGNED",
    "VALID",
    "SignatureCheck",
    "check_signature",
    "generate_signing_key",
    "judged_results_sha256",
    "key_id_for",
    "load_private_key",
    "public_key_b64",
    "sign_object",
    "signed_payload",
    "small_order_public_key",
]

ALG = "ed25519"
VALID = "valid"
UNSIGNED = "unsigned"
UNREGISTERED = "unregistered"


@dataclass(frozen=True)
class SignatureCheck:
    """``status`` is valid | unsigned | unregistered; ``key_id`` as claimed (or None);
    ``signed_sha256`` the SHA-256 (hex) of the bytes a valid signature covers, else None."""

    status: str
    key_id: str | None
    signed_sha256: str | None = None


def key_id_for(public_key: bytes | str) -> str:
    """First 16 hex digits of SHA-256 of the raw 32-byte key (raw bytes or base64)."""
    return hashlib.sha256(_raw_public(public_key)).hexdigest()[:16]


def _raw_public(public_key: bytes | str) -> bytes:
    raw = base64.b64decode(public_key, validate=True) if isinstance(public_key, str) else bytes(public_key)
    if len(raw) != 32:
        raise ValueError(f"an Ed25519 public key has 32 bytes, got {len(raw)}")
    return raw


# Every encoding of a point of small order on Ed25519 (order 1, 2, 4 or 8; y = p - 1, p and p + 1
# are the non-canonical spellings of three of them), as libsodium's ge25519_has_small_order lists
# them; the x-sign bit (the last byte's top bit) is ignored, so each stands for two encodings.
# Under such a "public key" anyone forges a signature with no private key at all: with R the
# identity and S = 0, RFC 8032's check holds for every message whose hash is a multiple of the
# point's order (1 in 8 at worst). cryptography loads and verifies against them as OpenSSL does, so
# the site refuses them itself: at registration, and at verification for a key registered before.
_SMALL_ORDER_ENCODINGS = frozenset(
    bytes.fromhex(text)
    for text in (
        "00" * 32,  # y = 0 (order 4)
        "01" + "00" * 31,  # the identity (order 1)
        "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",  # order 8
        "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",  # order 8
        "ec" + "ff" * 30 + "7f",  # y = p - 1 (order 2)
        "ed" + "ff" * 30 + "7f",  # y = p, i.e. 0 (order 4)
        "ee" + "ff" * 30 + "7f",  # y = p + 1, i.e. 1 (order 1)
    )
)


def small_order_public_key(raw: bytes) -> bool:
    """True for a 32-byte Ed25519 public key that is a small-order point: no signature under it
    proves anything (see _SMALL_ORDER_ENCODINGS)."""
    return len(raw) == 32 and raw[:31] + bytes([raw[31] & 0x7F]) in _SMALL_ORDER_ENCODINGS


def signed_payload(obj: Mapping[str, Any]) -> bytes:
    """The exact bytes a signature covers: JCS of ``obj`` minus ``signature``."""
    return canonical_json({k: v for k, v in obj.items() if k != "signature"})


def judged_results_sha256(results: Mapping[str, Any]) -> str:
    """What a judge's signed verdict names as the results it judged (``results_sha256``): the
    SHA-256 (hex) of the results document's signed bytes, i.e. JCS of it minus ``signature``.
    For a signed result this is the digest of exactly what the evaluator signed
    (:attr:`SignatureCheck.signed_sha256`), so re-sealing or re-formatting keeps it; any change
    to what was measured, or to the challenge, changes it. Raises CanonicalJSONError for a
    document JCS cannot print."""
    return hashlib.sha256(signed_payload(results)).hexdigest()


def generate_signing_key() -> Ed25519PrivateKey:
    """A fresh Ed25519 private key."""
    return Ed25519PrivateKey.generate()


def private_key_pem(key: Ed25519PrivateKey) -> bytes:
    """Unencrypted PKCS#8 PEM (what ``ed25519-keygen`` writes)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def load_private_key(data: bytes | str) -> Ed25519PrivateKey:
    """Load a PKCS#8 PEM Ed25519 private key, or a base64 raw 32-byte seed (bytes or text)."""
    text = (data.encode("ascii") if isinstance(data, str) else data).strip()
    if text.startswith(b"-----BEGIN"):
        key = serialization.load_pem_private_key(text, password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("the PEM key is not an Ed25519 private key")
        return key
    raw = base64.b64decode(text, validate=True)
    if len(raw) != 32:
        raise ValueError(f"a raw Ed25519 private key has 32 bytes, got {len(raw)}")
    return Ed25519PrivateKey.from_private_bytes(raw)


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """Base64 of the raw 32-byte public key (what admins register)."""
    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode("ascii")


def sign_object(obj: Mapping[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """A copy of ``obj`` with a ``signature`` field over its canonical form."""
    signature = key.sign(signed_payload(obj))
    signed = {k: v for k, v in obj.items() if k != "signature"}
    signed["signature"] = {
        "key_id": key_id_for(public_key_b64(key)),
        "alg": ALG,
        "sig": base64.b64encode(signature).decode("ascii"),
    }
    return signed


def check_signature(
    obj: Mapping[str, Any],
    signing_keys: Mapping[str, bytes | str],
    *,
    where: str,
    payload: bytes | None = None,
) -> SignatureCheck:
    """Check ``obj["signature"]`` against the registered ``signing_keys``.

    ``signing_keys`` maps key_id -> raw 32-byte public key (bytes or base64).
    The signature object's shape is validated by the schema layer; this
    raises ``bad_signature`` when a registered key does not verify it.
    ``payload`` is ``signed_payload(obj)`` where the caller already has it
    (contract.document_texts), else None.
    """
    signature = obj.get("signature")
    if signature is None:
        return SignatureCheck(UNSIGNED, None)
    key_id = signature["key_id"]
    public = signing_keys.get(key_id)
    if public is None:
        return SignatureCheck(UNREGISTERED, key_id)
    forged = BundleError(
        "bad_signature",
        f"{where}: the signature by registered key {key_id} does not verify; the signed content was altered or forged",
    )
    try:
        sig = base64.b64decode(signature["sig"], validate=True)
        if payload is None:
            payload = signed_payload(obj)
    except (binascii.Error, ValueError, CanonicalJSONError):
        raise forged from None
    try:
        raw = _raw_public(public)
        if small_order_public_key(raw):
            # Registered before the site refused such keys: a signature under it proves nothing.
            raise BundleError(
                "bad_signature",
                f"{where}: registered key {key_id} is a small-order point, under which anyone can forge a "
                "signature; no signature by it is trusted (the site's staff should revoke it)",
            )
        Ed25519PublicKey.from_public_bytes(raw).verify(sig, payload)
    except (InvalidSignature, ValueError):
        raise forged from None
    return SignatureCheck(VALID, key_id, hashlib.sha256(payload).hexdigest())
