"""open_bundle on intact envelopes: member hashes, JSON strictness and schemas."""

from __future__ import annotations

import json
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from submissions.bundle import BundleError, open_bundle
from submissions.bundle.seal import seal_dir


def _reseal(directory: Path, recipient: str) -> Path:
    """Seal after an edit, rewriting the members map so only the edit is wrong."""
    return seal_dir(directory, recipient, directory.with_suffix(".age"))


def _error(path: Path, key: str) -> BundleError:
    with pytest.raises(BundleError) as err:
        open_bundle(path, [key])
    return err.value


def _first_result(directory: Path) -> Path:
    return min((directory / "results").glob("*.json"))


def test_it_reads_every_member_of_a_demo_bundle(sealed_demo, site_identity):
    bundle = open_bundle(sealed_demo(), [site_identity[0]])
    assert bundle.manifest.format == "podium-bundle/1"
    assert bundle.manifest.effort_tier == "standard"
    assert sorted(bundle.results) == sorted(bundle.manifest.genres)
    assert set(bundle.faithfulness) == {s for s, g in bundle.manifest.genres.items() if g == "reproduction"}
    assert bundle.claimed_breakdown["aggregates"]["coverage"] == {"covered": 11, "required": 11, "complete": True}
    assert len(bundle.results["orb-slam-ate"].episodes) == 20


def test_it_rejects_a_member_whose_hash_differs_from_the_manifest(sealed_demo, site_identity):
    err = _error(sealed_demo(tamper="member_hash"), site_identity[0])
    assert err.code == "member_hash_mismatch"
    assert err.message.startswith("results/act-aloha-transfer.json: SHA-256 is ")
    assert err.message.endswith("; the file changed after the manifest was written")


def test_it_rejects_a_member_listed_but_absent(demo_dir, site_identity):
    from submissions.bundle.demo import seal_dir as seal_as_is

    directory = demo_dir()
    (directory / "faithfulness.json").unlink()
    err = _error(seal_as_is(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "missing_member",
        "faithfulness.json: listed in manifest.json members but missing from the bundle",
    )


def test_it_rejects_a_member_not_listed_in_the_manifest(demo_dir, site_identity):
    from submissions.bundle.demo import seal_dir as seal_as_is

    directory = demo_dir()
    (directory / "artifacts").mkdir()
    (directory / "artifacts" / "extra.log").write_text("hi")
    err = _error(seal_as_is(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "unexpected_member",
        "artifacts/extra.log: present in the bundle but not listed in manifest.json members",
    )


def test_it_rejects_a_bundle_without_manifest(seal_bytes, site_identity, tar_bytes):
    err = _error(seal_bytes(tar_bytes([("score_breakdown.json", b"{}")])), site_identity[0])
    assert (err.code, err.message) == (
        "missing_member",
        "manifest.json: missing from the bundle (every bundle starts from its run manifest)",
    )


def test_it_rejects_a_task_in_the_manifest_without_results(demo_dir, site_identity):
    directory = demo_dir()
    (directory / "results" / "orb-slam-ate.json").unlink()
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "missing_member",
        "results/orb-slam-ate.json: manifest.json lists task 'orb-slam-ate' but the bundle has no results for it",
    )


def test_it_rejects_nan_in_a_result(sealed_demo, site_identity):
    err = _error(sealed_demo(tamper="nan"), site_identity[0])
    assert (err.code, err.message) == (
        "non_finite_number",
        "results/act-aloha-transfer.json: NaN is not a finite number; JSON numbers must be finite (no NaN or "
        "Infinity) and within a double's range (about 1.8e308)",
    )


@pytest.mark.parametrize("token", ["Infinity", "-Infinity", "1e999"])
def test_it_rejects_infinities(demo_dir, site_identity, token):
    directory = demo_dir()
    path = directory / "score_breakdown.json"
    doc = json.loads(path.read_text())
    doc["aggregates"]["overall"] = "PLACEHOLDER"
    path.write_text(json.dumps(doc).replace('"PLACEHOLDER"', token))
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert err.code == "non_finite_number"
    assert err.message == (
        f"score_breakdown.json: {token} is not a finite number; JSON numbers must be finite (no NaN or Infinity) "
        "and within a double's range (about 1.8e308)"
    )


# Where an integer beyond a double's range once reached float(): an episode's metric and rate,
# a claimed value -- each a worker crash retried as a server fault. (The manifest is parsed alike;
# the sealing tool refuses to seal one with such a number.)
@pytest.mark.parametrize(
    ("member", "change"),
    [
        ("results/act-aloha-transfer.json", lambda doc: doc["episodes"][0].__setitem__("metric", "HUGE")),
        ("results/act-aloha-transfer.json", lambda doc: doc["episodes"][0]["rates"].__setitem__("x_rate", "HUGE")),
        ("score_breakdown.json", lambda doc: doc["aggregates"].__setitem__("pass_rate", "HUGE")),
    ],
)
def test_it_rejects_an_integer_no_double_holds_naming_the_member(demo_dir, site_identity, member, change):
    directory = demo_dir()
    path = directory / member
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc).replace('"HUGE"', "-" + "1" * 400))
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert err.code == "non_finite_number"
    assert err.message.startswith(f"{member}: -11111111111... (400 digits) is not a finite number;")


def test_an_integer_a_double_holds_is_read_exactly():
    from submissions.bundle.strict_json import parse_json

    largest = "1" + "0" * 308  # 1e308: 309 digits, still a double's
    assert parse_json(f'{{"n": {largest}, "m": -7}}'.encode(), member="x.json") == {"n": int(largest), "m": -7}


def _parse_outcome(data):
    from submissions.bundle.errors import BundleError
    from submissions.bundle.strict_json import parse_json

    try:
        value = parse_json(data, member="x.json")
    except BundleError as exc:
        return ("error", exc.code, exc.message)
    return ("value", json.dumps(value), repr(value))  # repr: -0.0 and 0.0, 1 and 1.0 differ


def _hooked_outcome(data):
    """What parse_json answers when it checks every number with its hooks (its only way before
    the number-shape test let plain documents skip them)."""
    from submissions.bundle import strict_json

    with mock.patch.object(strict_json, "_numbers_in_range", lambda data: False):
        return _parse_outcome(data)


@pytest.mark.parametrize(
    ("number", "in_range"),
    [
        ("1e400", False),
        ("1E+400", False),
        ("-1e-400", False),  # 3 exponent digits: checked by the hooks (it is -0.0, accepted)
        ("1.5e308", False),
        ("1e99", True),
        ("-2.5E-07", True),
        ("1" * 199, True),
        ("-" + "1" * 199 + ".5e+99", True),
        ("1" * 200, False),
        ("1" * 400, False),  # refused: no double holds it
        ("9" * 5000, False),  # beyond int()'s digit limit: invalid_json, as before
        ("0." + "1" * 300, False),  # a long fraction: checked too (only stricter)
    ],
)
def test_numbers_that_could_leave_a_doubles_range_take_the_checking_parse(number, in_range):
    from submissions.bundle.strict_json import _numbers_in_range

    data = f'{{"n": [{number}, 1.0], "s": "x"}}'.encode()
    assert _numbers_in_range(data) is in_range
    assert _parse_outcome(data) == _hooked_outcome(data)


def test_a_string_that_spells_a_long_exponent_only_makes_the_parse_check_its_numbers():
    from submissions.bundle.strict_json import _numbers_in_range, parse_json

    data = b'{"key_id": "3e1234abcd", "n": 1e5}'
    assert not _numbers_in_range(data)
    assert parse_json(data, member="x.json") == {"key_id": "3e1234abcd", "n": 100000.0}


_NUMBER_TOKENS = st.one_of(
    st.from_regex(r"-?(0|[1-9][0-9]{0,3})(\.[0-9]{1,4})?([eE][-+]?[0-9]{1,4})?", fullmatch=True),
    st.from_regex(r"-?[1-9][0-9]{190,420}(\.[0-9]{1,3})?", fullmatch=True),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers().map(str),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1e308", "1.7976931348623157e308", "1.8e308", "5e-324"]),
)
_STRINGS = st.one_of(st.text(max_size=8), st.sampled_from(["3e123", "0E-999", "1" * 250, "\\u0000", "e+1000"]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(_NUMBER_TOKENS, _STRINGS.map(json.dumps)), max_size=6), st.booleans())
def test_parse_json_answers_as_its_number_hooks_do_on_any_numbers(tokens, broken):
    """Skipping the hooks (numbers_in_range) changes no value, no error code and no message."""
    data = ("[" + ", ".join(tokens) + ("]" if not broken else ",]")).encode()
    assert _parse_outcome(data) == _hooked_outcome(data)


def test_it_rejects_invalid_json(demo_dir, site_identity):
    directory = demo_dir()
    (directory / "faithfulness.json").write_text('{"a": ')
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "invalid_json",
        "faithfulness.json: invalid JSON at line 1 column 7: Expecting value",
    )


def test_it_rejects_json_that_is_not_utf8(demo_dir, site_identity):
    directory = demo_dir()
    (directory / "faithfulness.json").write_bytes(b'{"\xff": 1}')
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == ("invalid_json", "faithfulness.json: not valid UTF-8 (byte 2)")


def test_it_rejects_a_nul_escape_in_a_key_naming_where_it_is(demo_dir, site_identity):
    # PostgreSQL refuses U+0000 in text and jsonb: stored, it would fail the verifier's write.
    directory = demo_dir()
    path = _first_result(directory)
    path.write_text(path.read_text().replace('"rates": {}', '"rates": {"a\\u0000b": 0.0}', 1))
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "invalid_json",
        "results/act-aloha-transfer.json: episodes[0].rates (a key) holds a \\u0000 escape: the NUL character "
        "(U+0000), which no text field can hold; leave it out",
    )


def test_it_rejects_a_duplicate_key(demo_dir, site_identity):
    directory = demo_dir()
    path = _first_result(directory)
    text = path.read_text()
    path.write_text(text.replace('"aborted": false', '"aborted": false, "aborted": true', 1))
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "invalid_json",
        "results/act-aloha-transfer.json: episodes[0] has the key 'aborted' twice",
    )


def test_it_rejects_a_task_listed_twice_in_the_manifest(seal_bytes, site_identity, tar_bytes, manifest_for):
    manifest = manifest_for({}).replace(
        b'"tasks": {"t": {"genre": "open"}}', b'"tasks": {"t": {"genre": "open"}, "t": {"genre": "open"}}'
    )
    err = _error(seal_bytes(tar_bytes([("manifest.json", manifest)])), site_identity[0])
    assert (err.code, err.message) == ("duplicate_task", "manifest.json: tasks lists the task 't' twice")


def test_it_rejects_two_result_files_for_one_task(demo_dir, site_identity):
    directory = demo_dir()
    source = directory / "results" / "orb-slam-ate.json"
    (directory / "results" / "orb-slam-ate-copy.json").write_text(source.read_text())
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "duplicate_task",
        "results/orb-slam-ate.json: task 'orb-slam-ate' already has results in results/orb-slam-ate-copy.json",
    )


def test_it_rejects_an_unknown_format_version(seal_bytes, site_identity, tar_bytes, manifest_for):
    manifest = manifest_for({}, format="podium-bundle/9")
    err = _error(seal_bytes(tar_bytes([("manifest.json", manifest)])), site_identity[0])
    assert (err.code, err.message) == (
        "unsupported_format",
        "manifest.json: format must be 'podium-bundle/2' (or the retired 'podium-bundle/1'), got 'podium-bundle/9' "
        "(see docs/bundle-format.md)",
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["episodes"][0].update(aborted="no"),
            "results/act-aloha-transfer.json: episodes[0].aborted must be true or false, got 'no'",
        ),
        (
            lambda d: d["episodes"][0].pop("metric"),
            "results/act-aloha-transfer.json: episodes[0] is missing the field 'metric'",
        ),
        (
            # An older evaluator's seed is read, and checked as before (seed 003: none is needed).
            lambda d: d["episodes"][0].update(seed=-1),
            "results/act-aloha-transfer.json: episodes[0].seed must be an integer >= 0, got -1",
        ),
        (
            lambda d: d["episodes"][0].update(reward=1),
            "results/act-aloha-transfer.json: episodes[0] has an unknown field 'reward' (allowed: aborted, metric, "
            "rates, seed)",
        ),
        (
            lambda d: d["episodes"][0].update(metric="0.5"),
            "results/act-aloha-transfer.json: episodes[0].metric must be a number or null, got '0.5'",
        ),
        (
            lambda d: d.update(episodes=[]),
            "results/act-aloha-transfer.json: episodes must be a list of at least 1 item(s), got []",
        ),
    ],
)
def test_it_rejects_a_result_of_the_wrong_schema(demo_dir, site_identity, edit, message):
    directory = demo_dir()
    path = _first_result(directory)
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == ("schema_error", message)


def test_it_rejects_a_negative_safety_rate(demo_dir, site_identity):
    directory = demo_dir()
    path = directory / "results" / "carla-route-completion.json"
    doc = json.loads(path.read_text())
    doc["episodes"][3]["rates"]["collision_rate"] = -0.1
    path.write_text(json.dumps(doc))
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "schema_error",
        "results/carla-route-completion.json: episodes[3].rates['collision_rate'] must be a number >= 0, got -0.1",
    )


def test_it_rejects_a_member_that_does_not_belong_to_the_kind(demo_dir, site_identity):
    directory = demo_dir()
    (directory / "scorecard.json").write_text("{}")
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert err.code == "schema_error"
    assert err.message == (
        "scorecard.json: not a member of a paper_gap bundle (allowed: faithfulness.json, score_breakdown.json, "
        "results/<slug>.json, artifacts/...)"
    )


def test_it_keeps_artifacts_out_of_memory(sealed_demo, site_identity):
    bundle = open_bundle(sealed_demo(artifact_bytes=100_000), [site_identity[0]])
    assert bundle.member_sizes["artifacts/trajectory.bin"] == 100_000


def test_it_rejects_a_duplicate_key_inside_a_claimed_task(demo_dir, site_identity):
    directory = demo_dir()
    path = directory / "score_breakdown.json"
    path.write_text(path.read_text().replace('"final": ', '"final": 1.5, "final": ', 1))
    err = _error(_reseal(directory, site_identity[1]), site_identity[0])
    assert (err.code, err.message) == (
        "invalid_json",
        "score_breakdown.json: tasks.act-aloha-transfer has the key 'final' twice",
    )


def test_a_repeated_key_deep_under_long_keys_is_refused_in_little_memory_naming_a_short_path():
    import tracemalloc

    from submissions.bundle.errors import BundleError
    from submissions.bundle.schema import check_no_duplicate_keys
    from submissions.bundle.strict_json import parse_json

    # 200 levels under 12 kB keys (2.4 MB): the path spelled at every level held depth x size
    # characters (gigabytes from 14 MB, a worker killed for memory).
    depth = 200
    text = "".join(f'{{"{f"k{i:03d}" * 3000}":' for i in range(depth)) + '{"d":1,"d":2}' + "}" * depth
    document = parse_json(text.encode(), member="score_breakdown.json")
    tracemalloc.start()
    try:
        with pytest.raises(BundleError) as refused:
            check_no_duplicate_keys(document, where="score_breakdown.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 2**20
    assert refused.value.code == "invalid_json"
    message = refused.value.message
    assert message.startswith("score_breakdown.json: k000k000") and "(196 more)" in message
    assert message.endswith("has the key 'd' twice") and len(message) < 600


def test_it_rejects_a_task_slug_with_spaces(seal_bytes, site_identity, tar_bytes, manifest_for):
    manifest = manifest_for({}, tasks={"bad slug": {"genre": "open"}})
    err = _error(seal_bytes(tar_bytes([("manifest.json", manifest)])), site_identity[0])
    assert (err.code, err.message) == (
        "schema_error",
        "manifest.json: tasks key 'bad slug' must be a slug (letters, digits, '_', '-', '.'; at most 100 characters), "
        "got 'bad slug'",
    )


def test_a_signed_verdict_whose_results_sha256_is_not_a_lowercase_sha256_is_a_schema_error_naming_the_field():
    from submissions.bundle.schema import parse_faithfulness

    signed = {
        "task": "pick",
        "faithful": True,
        "judge": "judge/1",
        "rubric_version": "r1",
        "challenge": "c" * 43,
        "signature": {"key_id": "0" * 16, "alg": "ed25519", "sig": "AA=="},
    }
    assert parse_faithfulness({"pick": {**signed, "results_sha256": "a" * 64}}, bound=True)["pick"].results_sha256 == (
        "a" * 64
    )
    with pytest.raises(BundleError) as caught:
        parse_faithfulness({"pick": {**signed, "results_sha256": "A" * 64}}, bound=True)
    assert (caught.value.code, caught.value.message) == (
        "schema_error",
        "faithfulness.json: pick.results_sha256 must be the SHA-256 of the judged results' signed bytes, "
        f"64 lowercase hex digits, got {'A' * 64!r}",
    )
