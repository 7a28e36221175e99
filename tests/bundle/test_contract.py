"""The pure half of the verification contract: every trust rule decided without a database."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from submissions.bundle import open_bundle
from submissions.bundle.bundle import read_bundle_dir
from submissions.bundle.contract import EvaluatorKey, ValidatorKey, results_digest
from submissions.bundle.evaluate import evaluate_paper_gap
from submissions.bundle.evaluate_race import RaceSpec, evaluate_race_run
from submissions.bundle.signatures import generate_signing_key, key_id_for, public_key_b64

CHALLENGE = "c" * 43


def _evaluate(bundle, release, **kwargs):
    spec, rhash = release
    return evaluate_paper_gap(bundle, release_spec=spec, required_task_set_hash=rhash, bootstrap_resamples=0, **kwargs)


def _scoped(key, simulator="demo-sim", tasks=frozenset()):
    public = public_key_b64(key)
    return {key_id_for(public): EvaluatorKey(public_key=public, simulator=simulator, tasks=frozenset(tasks))}


def test_a_key_registered_for_another_simulator_is_out_of_scope(demo_dir, release, evaluator_key):
    bundle = read_bundle_dir(demo_dir(sign_with=evaluator_key, challenge=CHALLENGE))
    outcome = _evaluate(bundle, release, evaluator_keys=_scoped(evaluator_key, simulator="carla"))
    assert (outcome.verdict, outcome.error_code) == ("rejected", "key_out_of_scope")


def test_a_key_of_the_right_simulator_signs_every_task(demo_dir, release, evaluator_key):
    bundle = read_bundle_dir(demo_dir(sign_with=evaluator_key, challenge=CHALLENGE))
    outcome = _evaluate(bundle, release, evaluator_keys=_scoped(evaluator_key))
    assert outcome.verdict == "validated"
    assert outcome.message.endswith("not attested: self-declared faithfulness")
    assert {t.signature for t in outcome.tasks} == {"valid"}


def test_an_unsigned_result_of_a_withheld_task_is_refused_and_a_published_one_is_not(demo_dir, release):
    bundle = read_bundle_dir(demo_dir())
    first = min(bundle.results)
    refused = _evaluate(bundle, release, evaluator_keys={}, withheld=frozenset({first}))
    assert (refused.verdict, refused.error_code) == ("rejected", "unsigned_withheld_task")
    assert refused.breakdown is None and refused.diff == []
    assert _evaluate(bundle, release, evaluator_keys={}, withheld=frozenset()).verdict == "validated"


def test_a_signed_result_carrying_another_challenge_is_refused(demo_dir, release, evaluator_key):
    directory = demo_dir(challenge=CHALLENGE)
    path = min((directory / "results").glob("*.json"))
    doc = json.loads(path.read_text())
    doc["challenge"] = "d" * 43
    path.write_text(json.dumps(doc))
    outcome = _evaluate(read_bundle_dir(directory, members_as_sealed=True), release, evaluator_keys={})
    assert (outcome.verdict, outcome.error_code) == ("rejected", "challenge_mismatch")


def test_the_results_digest_ignores_signatures_and_challenges_but_not_values():
    doc = {"task": "t", "episodes": [{"seed": 1, "metric": 0.5}]}
    base = results_digest([("t", doc)])
    assert results_digest([("t", {**doc, "challenge": "x" * 43, "signature": {"sig": "s"}})]) == base
    assert results_digest([("t", {**doc, "episodes": [{"seed": 1, "metric": 0.6}]})]) != base


# The digests stored on submissions, as first defined (a walk, then json.dumps): however they are
# computed, they must stay these exact strings, or stored rows stop matching their duplicates.
def _stored_definition(documents, as_signed):
    def read(value):
        if type(value) is float:
            return int(value) if as_signed and value.is_integer() and abs(value) <= 2**53 else value
        if type(value) is dict:
            return {key: read(item) for key, item in value.items()}
        if type(value) is list:
            return [read(item) for item in value]
        return value

    canonical = {
        name: {key: read(value) for key, value in doc.items() if key not in ("signature", "challenge")}
        for name, doc in documents
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


# Numbers where the two readings part (integral floats, -0.0, 2**53 and its neighbours, large and
# tiny floats) and strings that look like them (".0,", quotes, backslashes, non-ASCII).
_NUMBERS = st.one_of(
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(2**54), max_value=2**54).map(float),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0**53, -(2.0**53), 2.0**53 + 2, 1e16, 1e-5, 9007199254740993.0]),
)
_TEXT = st.one_of(st.text(max_size=12), st.sampled_from(["1.0,", '"2.0]"', "\\3.0}", "-0.0", 'a"b\\']))
_VALUES = st.recursive(
    st.one_of(_NUMBERS, _TEXT, st.booleans(), st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_TEXT, inner, max_size=4)),
    max_leaves=25,
)
_DOCUMENTS = st.lists(
    st.tuples(_TEXT, st.dictionaries(st.one_of(_TEXT, st.sampled_from(["signature", "challenge"])), _VALUES)),
    max_size=3,
    unique_by=lambda pair: pair[0],
)


@settings(max_examples=400, deadline=None)
@given(_DOCUMENTS)
def test_both_results_digests_are_the_stored_definitions(documents):
    expected = (_stored_definition(documents, True), _stored_definition(documents, False))
    assert (results_digest(documents), results_digest(documents, as_signed=False)) == expected


# Documents as a signature check sees them: a challenge string (often their first key), the
# numbers where JCS, the signed reading and the stored reading part, strings spelling such numbers
# (".0," inside a string must never be rewritten), tuples, and deep nesting.
_CHALLENGED = st.tuples(
    st.dictionaries(st.one_of(_TEXT, st.sampled_from(["episodes", "task", "signature"])), _VALUES, max_size=4),
    st.one_of(st.none(), _TEXT, st.just("c" * 43), _VALUES),
).map(lambda pair: pair[0] if pair[1] is None else {**pair[0], "challenge": pair[1]})
_DOCUMENT_VALUES = st.recursive(
    st.one_of(_NUMBERS, _TEXT, st.booleans(), st.none(), st.sampled_from([9007199254740994.0, -1e-05, 1e300])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple), st.dictionaries(_TEXT, inner, max_size=4)
    ),
    max_leaves=25,
)
_SIGNED_DOCUMENTS = st.one_of(
    _CHALLENGED,
    st.dictionaries(st.one_of(_TEXT, st.sampled_from(["challenge", "signature"])), _DOCUMENT_VALUES, max_size=4),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(_TEXT, _SIGNED_DOCUMENTS), max_size=3))
def test_texts_read_once_give_the_signed_bytes_and_both_stored_digests(documents):
    """document_texts (one walk, one encoding per document) must give exactly signed_payload's
    bytes and, through results_digests, exactly the digests as first defined, whatever the document."""
    from submissions.bundle.contract import document_texts, results_digests
    from submissions.bundle.signatures import signed_payload

    texts = {}
    for name, doc in documents:
        found = document_texts(doc)
        texts[name] = found
        try:
            expected = signed_payload(doc)
        except Exception:  # no canonical form: the texts must not pretend to have one
            assert found.signed_payload is None
        else:
            assert found.signed_payload in (None, expected)
    expected = (_stored_definition(documents, True), _stored_definition(documents, False))
    assert results_digests(documents, texts) == expected
    assert results_digests(documents) == expected


def test_a_bound_signed_result_is_read_once_for_its_signature_and_digests(demo_dir, evaluator_key):
    """The standard results (v1 and v2, with the challenge as first key) take the one-encoding path:
    the signature check and both digests reuse it, and they equal what they always were."""
    from submissions.bundle.contract import document_texts, results_digests
    from submissions.bundle.signatures import signed_payload

    for challenge in (None, CHALLENGE):
        bundle = read_bundle_dir(demo_dir(sign_with=evaluator_key, challenge=challenge))
        documents = [(slug, bundle.results[slug].raw) for slug in bundle.results]
        texts = {slug: document_texts(doc) for slug, doc in documents}
        for slug, doc in documents:
            assert texts[slug].signed_payload == signed_payload(doc)
            assert texts[slug].digest is not None and texts[slug].legacy is not None
        expected = (_stored_definition(documents, True), _stored_definition(documents, False))
        assert results_digests(documents, texts) == expected


@pytest.mark.parametrize(
    ("doc", "fast"),
    [
        ({"episodes": [{"metric": 1.0, "name": "a.0,b"}]}, False),  # a string spelling ".0,": the definition
        ({"episodes": [-0.0, 0.0, 5.0, 2.0**53, -(2.0**53)]}, True),  # read as integers both ways
        ({"episodes": [9007199254740994.0]}, False),  # integral beyond 2**53: JCS "9007199254740994", digest float
        ({"episodes": (1.0, 2.5)}, False),  # a tuple: the signed reading leaves it as it is
        ({"episodes": [1e-05, 1e16]}, True),  # JCS spells them otherwise; both digests keep repr()
        ({"challenge": 7, "episodes": [1.0]}, False),  # not a string: the definition
        ({"a": 1, "challenge": "c" * 43}, False),  # not the first key: the definition
        ({"challenge": "c" * 43}, True),  # nothing left but the challenge
        ({"episodes": ["\u00e9"]}, False),  # non-ASCII text: ensure_ascii would change it
        ({"episodes": [2**60]}, False),  # no canonical form; the digests still have one
    ],
)
def test_each_way_off_the_one_encoding_path_still_gives_the_defined_digests(doc, fast):
    from submissions.bundle.contract import document_texts, results_digests

    texts = document_texts(doc)
    assert (texts.digest is not None and texts.legacy is not None) is fast
    documents = [("t", doc)]
    expected = (_stored_definition(documents, True), _stored_definition(documents, False))
    assert results_digests(documents, {"t": texts}) == expected


def test_an_integral_float_and_its_integer_share_the_signed_digest_but_not_the_stored_one():
    integral, integer = [("t", {"episodes": [{"metric": 1.0}]})], [("t", {"episodes": [{"metric": 1}]})]
    assert results_digest(integral) == results_digest(integer)
    assert results_digest(integral, as_signed=False) != results_digest(integer, as_signed=False)


def test_a_race_run_signed_by_a_key_of_another_benchmark_is_out_of_scope(tmp_path, site_identity):
    from scoring.race import TaskOutcome
    from submissions.demo_loaders.scheme_bundles import race_run_members, seal_members

    key = generate_signing_key()
    tasks = ["t1", "t2"]
    outcomes = [TaskOutcome(task_id=t, order_placed=True, verdict_status="accepted", reward=1.0) for t in tasks]
    members = race_run_members(
        benchmark="shop-race",
        release="q1",
        race=1,
        validator="v1",
        agent="a",
        version="1",
        outcomes=outcomes,
        expected_task_ids=tasks,
        key=key,
        challenge=CHALLENGE,
    )
    path = tmp_path / "run.age"
    path.write_bytes(seal_members(members, site_identity[1]))
    bundle = open_bundle(path, [site_identity[0]])
    public = public_key_b64(key)

    def spec(benchmark: str | None) -> RaceSpec:
        keys = {key_id_for(public): ValidatorKey(public_key=public, validator="v1", benchmark=benchmark)}
        return RaceSpec(benchmark="shop-race", race=1, expected_task_ids=tasks, validator_keys=keys)

    assert evaluate_race_run(bundle, spec("other-race")).error_code == "key_out_of_scope"
    accepted = evaluate_race_run(bundle, spec("shop-race"))
    assert (accepted.verdict, accepted.score.score, accepted.challenge) == ("attested", 1.0, CHALLENGE)
