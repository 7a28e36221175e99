"""submissions.bundle.schema: the two ways of reading evaluator episodes agree.

``_plain_episodes`` reads a whole task's episodes column by column (the common,
valid case); ``_checked_episodes`` reads them one by one and names the first bad
field. Whatever the input, the fast reader either gives exactly what the careful
one gives, or declines (None) and leaves the input to it.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from submissions.bundle.errors import BundleError
from submissions.bundle.schema import Episode, _checked_episodes, _plain_episodes, parse_result

WHERE = "results/pick.json"

# Mostly valid episodes, with every kind of wrong value mixed in.
numbers = st.one_of(
    st.floats(min_value=-2, max_value=2, allow_nan=False),
    st.integers(min_value=-3, max_value=3),
    st.booleans(),
    st.none(),
    st.text(max_size=2),
)
names = st.one_of(st.sampled_from(["collision_rate", "drop_rate"]), st.text(max_size=3), st.just("x" * 101))
# An episode names no seed (seed 003); an older evaluator's may, so both shapes are drawn.
episode = st.fixed_dictionaries(
    {
        "metric": numbers,
        "rates": st.one_of(st.dictionaries(names, numbers, max_size=2), st.lists(st.floats(0, 1), max_size=1)),
        "aborted": st.one_of(st.booleans(), st.integers(0, 1)),
    },
    optional={
        "extra": st.just(1),
        "seed": st.one_of(st.integers(min_value=-1, max_value=6), st.booleans(), st.floats(0, 3)),
    },
)
# As many keys but not the same: one swapped for another (the column reader counts keys, then fetches each).
swapped = st.tuples(episode, st.sampled_from(["seed", "metric", "rates", "aborted"])).map(
    lambda pair: {**{k: v for k, v in pair[0].items() if k != pair[1]}, "extra": 1}
)
items = st.lists(st.one_of(episode, swapped, st.just([]), st.integers()), min_size=1, max_size=6)


@settings(max_examples=400, deadline=None)
@given(items)
def test_the_column_reader_agrees_with_the_one_by_one_reader_or_declines(values):
    try:
        expected = _checked_episodes(values, WHERE)
    except BundleError:
        expected = None
    fast = _plain_episodes(values)
    if fast is not None:
        assert fast == expected
        assert all(type(item) is Episode for item in fast)


@pytest.mark.parametrize("seeded", [False, True])
@pytest.mark.parametrize("missing", ["metric", "rates", "aborted"])
def test_an_episode_with_as_many_keys_but_not_the_same_is_left_to_the_one_by_one_reader(missing, seeded):
    good = (
        {"seed": 1, "metric": 0.5, "rates": {}, "aborted": False}
        if seeded
        else {"metric": 0.5, "rates": {}, "aborted": False}
    )
    bad = {**{k: v for k, v in good.items() if k != missing}, "extra": 1}
    first = {**good, "seed": 2} if seeded else good
    assert _plain_episodes([first, bad]) is None
    with pytest.raises(BundleError, match=f"episodes\\[1\\] is missing the field '{missing}'"):
        _checked_episodes([first, bad], WHERE)


def test_an_episode_with_an_unknown_field_in_place_of_the_seed_is_refused_by_name():
    good = {"seed": 1, "metric": 0.5, "rates": {}, "aborted": False}
    bad = {"metric": 0.5, "rates": {}, "aborted": False, "extra": 1}
    assert _plain_episodes([good, bad]) is None
    with pytest.raises(BundleError) as refused:
        _checked_episodes([good, bad], WHERE)
    assert refused.value.message == (
        "results/pick.json: episodes[1] has an unknown field 'extra' (allowed: aborted, metric, rates, seed)"
    )


def test_episodes_name_no_seed_and_are_read_with_none():
    # Seed 003: "bundles carry no hidden reference solutions or hidden seeds".
    episodes = [
        {"metric": 0.5, "rates": {"collision_rate": 0.0}, "aborted": False},
        {"metric": None, "rates": {}, "aborted": True},
    ]
    expected = (
        Episode(seed=None, metric=0.5, rates={"collision_rate": 0.0}, aborted=False),
        Episode(seed=None, metric=None, rates={}, aborted=True),
    )
    assert _plain_episodes(episodes) == list(expected)
    assert parse_result(document(episodes), where=WHERE).episodes == expected


def test_an_older_evaluators_seeds_are_still_read_and_may_be_mixed_with_none():
    episodes = [
        {"seed": 7, "metric": 0.5, "rates": {}, "aborted": False},
        {"metric": 0.25, "rates": {}, "aborted": False},
    ]
    assert parse_result(document(episodes), where=WHERE).episodes == (
        Episode(seed=7, metric=0.5, rates={}, aborted=False),
        Episode(seed=None, metric=0.25, rates={}, aborted=False),
    )


def document(episodes):
    return {"task": "pick", "evaluator": {"id": "ev", "simulator": "sim"}, "episodes": episodes}


def test_plain_episodes_are_read_as_they_are():
    result = parse_result(
        document(
            [
                {"seed": 1, "metric": 0.5, "rates": {"collision_rate": 0.0}, "aborted": False},
                {"seed": 2, "metric": None, "rates": {}, "aborted": True},
            ]
        ),
        where=WHERE,
    )
    assert result.episodes == (
        Episode(seed=1, metric=0.5, rates={"collision_rate": 0.0}, aborted=False),
        Episode(seed=2, metric=None, rates={}, aborted=True),
    )


def test_integer_metrics_and_rates_are_read_as_floats():
    result = parse_result(
        document([{"seed": 1, "metric": 1, "rates": {"collision_rate": 0}, "aborted": False}]), where=WHERE
    )
    assert result.episodes == (Episode(seed=1, metric=1.0, rates={"collision_rate": 0.0}, aborted=False),)
    assert type(result.episodes[0].metric) is float
    assert type(result.episodes[0].rates["collision_rate"]) is float


@pytest.mark.parametrize(
    ("episodes", "message"),
    [
        (
            [{"seed": 1, "metric": 0.5, "rates": {}, "aborted": False}] * 2,
            "results/pick.json: episodes[1].seed must be unique within the task, got 1",
        ),
        (
            [{"seed": 1, "metric": 0.5, "rates": {"collision_rate": -0.5}, "aborted": False}],
            "results/pick.json: episodes[0].rates['collision_rate'] must be a number >= 0, got -0.5",
        ),
    ],
)
def test_a_bad_episode_is_named_exactly(episodes, message):
    with pytest.raises(BundleError) as refused:
        parse_result(document(episodes), where=WHERE)
    assert (refused.value.code, refused.value.message) == ("schema_error", message)
