import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from leaderboard.models import Evaluator, SigningKey, Validator
from submissions.services.signing_keys import (
    SigningKeyError,
    evaluator_public_keys,
    signing_key_register,
    signing_key_revoke,
)


def new_public_key() -> tuple[bytes, str]:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return raw, base64.b64encode(raw).decode()


@pytest.fixture
def evaluator(db):
    return Evaluator.objects.create(simulator="robosuite")


@pytest.mark.django_db
def test_it_registers_an_evaluator_key_under_its_id(evaluator, owner):
    raw, b64 = new_public_key()
    key = signing_key_register(evaluator=evaluator, public_key_b64=b64, user=owner)
    assert (key.owner_kind, key.evaluator, key.public_key, key.registered_by) == ("evaluator", evaluator, b64, owner)
    assert key.key_id == hashlib.sha256(raw).hexdigest()[:16]
    assert evaluator_public_keys() == {key.key_id: raw}


@pytest.mark.django_db
def test_it_registers_a_validator_key(owner):
    from leaderboard.models import Benchmark

    benchmark = Benchmark.objects.create(slug="shop-race", name="Shop", scheme="race")
    validator = Validator.objects.create(slug="val", name="Val")
    key = signing_key_register(validator=validator, benchmark=benchmark, public_key_b64=new_public_key()[1], user=owner)
    assert (key.owner_kind, key.benchmark_id) == ("validator", benchmark.pk)
    assert evaluator_public_keys() == {}


@pytest.mark.django_db
def test_registering_the_same_key_twice_returns_the_same_row(evaluator, owner):
    b64 = new_public_key()[1]
    first = signing_key_register(evaluator=evaluator, public_key_b64=b64, user=owner)
    assert signing_key_register(evaluator=evaluator, public_key_b64=b64, user=owner).pk == first.pk
    assert SigningKey.objects.count() == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "public key: empty; expected the base64 of a raw 32-byte Ed25519 public key"),
        ("not base64!", "public key: not valid base64; expected the base64 of a raw 32-byte Ed25519 public key"),
        (
            base64.b64encode(b"x" * 31).decode(),
            "public key: decodes to 31 bytes; an Ed25519 public key is exactly 32 bytes",
        ),
    ],
)
@pytest.mark.django_db
def test_it_refuses_a_malformed_key_saying_what_is_wrong(evaluator, owner, value, message):
    with pytest.raises(SigningKeyError) as refused:
        signing_key_register(evaluator=evaluator, public_key_b64=value, user=owner)
    assert str(refused.value) == message
    assert SigningKey.objects.count() == 0


@pytest.mark.django_db
def test_a_key_needs_exactly_one_owner(owner):
    with pytest.raises(SigningKeyError, match="exactly one evaluator, validator or judge"):
        signing_key_register(public_key_b64=new_public_key()[1], user=owner)


@pytest.mark.django_db
def test_a_revoked_key_no_longer_attests_and_cannot_come_back(evaluator, owner):
    b64 = new_public_key()[1]
    key = signing_key_register(evaluator=evaluator, public_key_b64=b64, user=owner)
    signing_key_revoke(signing_key=key, user=owner)
    assert evaluator_public_keys() == {}
    with pytest.raises(SigningKeyError, match="was revoked and cannot be registered again"):
        signing_key_register(evaluator=evaluator, public_key_b64=b64, user=owner)
