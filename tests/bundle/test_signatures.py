"""Canonical JSON (RFC 8785) and Ed25519 signatures over it."""

from __future__ import annotations

import base64

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from submissions.bundle import BundleError, check_signature, key_id_for, sign_object, signed_payload
from submissions.bundle.canonical_json import CanonicalJSONError, canonical_json, format_number
from submissions.bundle.signatures import (
    _SMALL_ORDER_ENCODINGS,
    generate_signing_key,
    load_private_key,
    private_key_pem,
    public_key_b64,
    small_order_public_key,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (100, "100"),
        (4.5, "4.5"),
        (0.002, "0.002"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (123456789012345680000.0, "123456789012345680000"),
        (333333333.3333333, "333333333.3333333"),
        (-1.5e-10, "-1.5e-10"),
        (9007199254740992, "9007199254740992"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
    ],
)
def test_numbers_print_like_ecmascript(value, text):
    assert format_number(value) == text


def test_canonical_json_sorts_keys_and_drops_whitespace():
    assert canonical_json({"b": [1, 2.5, None, True], "a": {"z": "é", "y": "\n"}}) == (
        '{"a":{"y":"\\n","z":"é"},"b":[1,2.5,null,true]}'.encode()
    )


def test_canonical_json_prints_del_raw_in_keys_and_values_as_rfc_8785_does():
    # RFC 8785 escapes only the controls below U+0020 (and " and \\); DEL in a key was \\u007f.
    assert canonical_json({"a\x7f": "b\x7f"}) == b'{"a\x7f":"b\x7f"}'


def test_canonical_json_sorts_keys_by_utf16_code_units():
    # U+E000 sorts after U+1F600 in UTF-16 (the emoji is a surrogate pair 0xD83D...).
    assert canonical_json({"\ue000": 1, "\U0001f600": 2}) == '{"😀":2,"\ue000":1}'.encode()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 2**60])
def test_canonical_json_refuses_values_without_a_canonical_form(value):
    with pytest.raises(CanonicalJSONError):
        canonical_json({"x": value})


def test_canonical_json_prints_floats_in_dict_values_lists_and_at_the_top_as_ecmascript_does():
    # Floats inside an object take an inlined fast path; these are the cases it must hand on.
    values = [1.0, -0.0, 0.0, 1e-7, 1e21, 123.456, 5e-324]
    expected = "1", "0", "0", "1e-7", "1e+21", "123.456", "5e-324"
    for value, text in zip(values, expected, strict=True):
        assert canonical_json({"x": value}) == f'{{"x":{text}}}'.encode()
        assert canonical_json([value]) == f"[{text}]".encode()
        assert canonical_json(value) == text.encode()


def test_canonical_json_encodes_subclasses_and_tuples_as_their_plain_values():
    from collections import OrderedDict
    from enum import IntEnum

    class Two(IntEnum):
        TWO = 2

    document = OrderedDict([("b", (Two.TWO, 0.5)), ("a", True)])
    assert canonical_json(document) == canonical_json({"a": True, "b": [2, 0.5]}) == b'{"a":true,"b":[2,0.5]}'


@pytest.mark.parametrize("key", [1, None, 1.5])
def test_canonical_json_refuses_a_key_that_is_not_a_string(key):
    with pytest.raises(CanonicalJSONError):
        canonical_json({"a": 1, key: 2})


def test_the_signed_payload_excludes_the_signature_field():
    assert signed_payload({"b": 1, "signature": {"sig": "x"}, "a": 0.5}) == b'{"a":0.5,"b":1}'


def test_a_signed_object_verifies_under_its_registered_key():
    key = generate_signing_key()
    public = public_key_b64(key)
    signed = sign_object({"task": "t", "episodes": [{"metric": 0.25}]}, key)
    assert signed["signature"]["key_id"] == key_id_for(public)
    check = check_signature(signed, {key_id_for(public): public}, where="results/t.json")
    assert (check.status, check.key_id) == ("valid", key_id_for(public))


def test_a_raw_bytes_key_works_like_base64():
    key = generate_signing_key()
    raw = base64.b64decode(public_key_b64(key))
    signed = sign_object({"a": 1}, key)
    assert check_signature(signed, {key_id_for(raw): raw}, where="x").status == "valid"


def test_an_unsigned_object_is_unsigned():
    assert check_signature({"a": 1}, {}, where="x").status == "unsigned"


def test_a_key_the_site_does_not_know_is_unregistered_not_rejected():
    key = generate_signing_key()
    check = check_signature(sign_object({"a": 1}, key), {}, where="x")
    assert (check.status, check.key_id) == ("unregistered", key_id_for(public_key_b64(key)))


def test_a_signature_over_altered_content_is_rejected_as_forged():
    key = generate_signing_key()
    public = public_key_b64(key)
    signed = sign_object({"metric": 0.5}, key)
    signed["metric"] = 0.9
    with pytest.raises(BundleError) as err:
        check_signature(signed, {key_id_for(public): public}, where="results/t.json")
    assert err.value.code == "bad_signature"
    assert err.value.message == (
        f"results/t.json: the signature by registered key {key_id_for(public)} does not verify; "
        "the signed content was altered or forged"
    )


def test_a_signature_by_another_key_under_a_registered_id_is_rejected():
    real, impostor = generate_signing_key(), generate_signing_key()
    public = public_key_b64(real)
    signed = sign_object({"metric": 0.5}, impostor)
    signed["signature"]["key_id"] = key_id_for(public)
    with pytest.raises(BundleError) as err:
        check_signature(signed, {key_id_for(public): public}, where="x")
    assert err.value.code == "bad_signature"


def test_a_garbled_signature_under_a_registered_key_is_rejected():
    key = generate_signing_key()
    public = public_key_b64(key)
    signed = sign_object({"metric": 0.5}, key)
    signed["signature"]["sig"] = "not base64!!"
    with pytest.raises(BundleError) as err:
        check_signature(signed, {key_id_for(public): public}, where="x")
    assert err.value.code == "bad_signature"


def test_private_keys_load_from_pem_and_raw_base64():
    key = generate_signing_key()
    from cryptography.hazmat.primitives import serialization

    raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    assert public_key_b64(load_private_key(private_key_pem(key))) == public_key_b64(key)
    assert public_key_b64(load_private_key(base64.b64encode(raw))) == public_key_b64(key)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_canonical_numbers_round_trip_exactly(value):
    assert float(format_number(value)) == value


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != 0))
def test_canonical_numbers_use_the_shortest_digits(value):
    text = format_number(value)
    mantissa = text.lstrip("-").split("e")[0].replace(".", "").strip("0")
    assert len(mantissa) == len(repr(abs(value)).split("e")[0].replace(".", "").strip("0"))


def test_the_fast_number_paths_print_exactly_what_the_general_rule_prints():
    """format_number's fast paths (safe ints, floats Python prints without an exponent) agree
    with the general ECMAScript rule on random and edge values."""
    import random

    from submissions.bundle.canonical_json import _format_number_general, format_number

    rng = random.Random(8785)
    values = [0.0, -0.0, 1.0, -1.0, 0.1, 1e-4, 9.999e-5, 1e15, 1e16, 123456789012345.6, 2.0**53, -(2**53), 5, 0]
    values += [rng.uniform(-1e6, 1e6) for _ in range(2000)]
    values += [rng.random() * 10 ** rng.randint(-8, 22) for _ in range(2000)]
    values += [float(rng.randint(-(10**17), 10**17)) for _ in range(500)]
    values += [rng.randint(-(2**53), 2**53) for _ in range(500)]
    for value in values:
        assert format_number(value) == _format_number_general(value), value


def _general_canonical_json(value):
    """The general encoder alone (what canonical_json's C-encoder fast path must reproduce)."""
    from submissions.bundle.canonical_json import _encode

    out = []
    _encode(value, out)
    return "".join(out).encode("utf-8")


_edge_floats = st.sampled_from(
    [
        *(0.0, -0.0, 1.0, -1.0, 1e-4, -1e-4, 9.999e-5, 1e-6, 1e-7, 1e15, 1e16, 1e21, 1e22, 2.0**53, -(2.0**53)),
        *(2.0**53 - 1, 2.0**53 + 2, 2.0**60, 123456789012345.6, 5e-324, 1.7976931348623157e308),
        *(1e-5, 2.9e-5, -2.9e-5, 12.9e-5, 1e-7, -1e-7, 1.5e21, 11.5e21, 9007199254740994.0),
    ]
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**54), max_value=2**54),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e6, max_value=1e6).map(round),
    st.floats(min_value=-1e6, max_value=1e6).map(lambda v: float(round(v))),
    _edge_floats,
    st.text(),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x7F)),
    st.text(st.characters(exclude_categories=())),  # with lone surrogates
    # Strings spelling a number whose repr() is not its JCS text (the fast path swaps those).
    st.sampled_from(["1e-05", "x 2.9e-05", "1e+16", "-1e-07", "9007199254740994.0"]),
    # Strings holding what the fast path rewrites in the text: an integral float's ".0" before a delimiter.
    st.sampled_from(["1.0,", "x.0}", "-0.0]", "[5.0]", '{"a":2.0}']),
)
_keys = st.one_of(
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=6),
    st.text(max_size=4),
    st.sampled_from(["\ue000", "\U0001f600", "a\x7f", "\u2028", "é"]),
)
_json_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(_keys, children, max_size=5),
        st.dictionaries(st.one_of(_keys, st.integers(0, 3)), children, max_size=3),
    ),
    max_leaves=30,
)


@settings(max_examples=2000, deadline=None)
@given(_json_values)
def test_the_c_encoder_fast_path_is_byte_identical_to_the_general_encoder(value):
    """canonical_json tries Python's C encoder on a converted copy first; whatever it prints must
    be what the general RFC 8785 encoder prints, and whatever the general encoder refuses must
    still be refused."""
    try:
        expected = _general_canonical_json(value)
    except CanonicalJSONError:
        with pytest.raises(CanonicalJSONError):
            canonical_json(value)
    else:
        assert canonical_json(value) == expected


@settings(max_examples=1000, deadline=None)
@given(_json_values)
def test_the_plain_texts_are_the_c_encoder_text_and_the_as_signed_reading(value):
    """plain_texts' other two texts (the results digests read them): the value encoded as it is,
    and encoded with every integral float up to 2**53 as its integer (contract._as_signed)."""
    import json

    from submissions.bundle.canonical_json import plain_texts
    from submissions.bundle.contract import _as_signed

    texts = plain_texts(value)
    if texts is None:
        return
    dump = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False).encode
    assert texts.as_is == dump(value)
    if texts.as_signed is not None:
        assert texts.as_signed == dump(_as_signed(value))
    assert texts.canonical == _general_canonical_json(value)


def test_the_fast_path_prints_the_standard_signed_results_as_the_general_encoder_does(tmp_path):
    """The demo bundle's evaluator results (what every bundle's signature checks canonicalise):
    integral metrics, tiny rates, nested rate maps."""
    import json

    from submissions.bundle.canonical_json import plain_texts
    from submissions.bundle.demo import write_paper_gap_bundle_dir

    directory = write_paper_gap_bundle_dir(tmp_path / "bundle", sign_with=generate_signing_key())
    for path in sorted((directory / "results").glob("*.json")):
        document = json.loads(path.read_bytes())
        assert canonical_json(document) == _general_canonical_json(document)
        assert plain_texts(document) is not None  # the C-encoder path, not the general encoder
        assert signed_payload(document) == _general_canonical_json(
            {k: v for k, v in document.items() if k != "signature"}
        )


def test_a_document_nested_too_deep_for_the_fast_path_is_left_to_the_general_encoder(monkeypatch):
    """Near the recursion limit the C-encoder path may give up where the general encoder does
    not: its RecursionError is never the answer."""
    from submissions.bundle import canonical_json as module

    def too_deep(value, counts):
        raise RecursionError

    monkeypatch.setattr(module, "_scan", too_deep)
    assert canonical_json({"a": [1.0, {"b": None}]}) == b'{"a":[1,{"b":null}]}'


# A key-less forgery: R the identity point, S = 0.
_KEYLESS_SIGNATURE = b"\x01" + bytes(63)


def _forges(raw: bytes, payload: bytes) -> bool:
    """Whether cryptography itself verifies the key-less forgery of ``payload`` under ``raw``."""
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(_KEYLESS_SIGNATURE, payload)
    except InvalidSignature:
        return False
    return True


def _small_order_encodings() -> list[bytes]:
    return sorted(
        encoding[:31] + bytes([encoding[31] | sign]) for encoding in _SMALL_ORDER_ENCODINGS for sign in (0, 0x80)
    )


@pytest.mark.parametrize("raw", _small_order_encodings(), ids=lambda raw: raw.hex()[:8] + ".." + raw.hex()[-2:])
def test_every_refused_small_order_key_is_one_under_which_a_signature_is_forged_without_a_private_key(raw):
    assert small_order_public_key(raw)
    # The list holds weak keys only: under a wrong constant, no message would verify.
    assert any(_forges(raw, b"message %d" % n) for n in range(64))


def test_a_generated_key_is_not_small_order_and_admits_no_keyless_forgery():
    raw = base64.b64decode(public_key_b64(generate_signing_key()))
    assert not small_order_public_key(raw)
    assert not any(_forges(raw, b"message %d" % n) for n in range(64))


def test_a_registered_small_order_key_trusts_no_signature_even_one_that_verifies():
    raw = bytes(32)
    # A payload the forgery verifies for, found as an attacker would, by varying it.
    forged = next(obj for n in range(64) if _forges(raw, signed_payload(obj := {"metric": 0.5, "n": n})))
    signature = {"key_id": key_id_for(raw), "alg": "ed25519", "sig": base64.b64encode(_KEYLESS_SIGNATURE).decode()}
    with pytest.raises(BundleError) as err:
        check_signature({**forged, "signature": signature}, {key_id_for(raw): raw}, where="results/t.json")
    assert err.value.code == "bad_signature"
    assert "small-order point" in err.value.message
