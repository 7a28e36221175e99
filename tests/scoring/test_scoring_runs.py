"""Run-level paper-gap rules: macro mean, coverage, episodes, score_run (seed 000)."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.errors import ScoringError
from scoring.gap import (
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    OPEN,
    REPRODUCTION,
    Episode,
    ReleaseSpec,
    TaskResult,
    TaskSpec,
    aggregate_episodes,
    category_scores,
    coverage,
    macro_mean,
    pass_rate,
    required_task_set_hash,
    score_run,
)

# ------------------------------------------------------------------ macro mean


def test_the_seed_three_task_macro_mean_excludes_the_missing_task() -> None:
    assert macro_mean([0.54, 1.12, None]) == pytest.approx(0.83, abs=1e-12)


def test_the_zero_policy_counts_a_missing_task_as_zero() -> None:
    assert macro_mean([0.54, 1.12, None], policy="zero") == pytest.approx(1.66 / 3)


def test_macro_mean_is_none_when_no_task_is_present() -> None:
    assert macro_mean([None, None]) is None


def test_macro_mean_of_an_empty_set_is_none_under_either_policy() -> None:
    assert macro_mean([]) is None
    assert macro_mean([], policy="zero") is None


def test_the_zero_policy_scores_an_all_missing_run_as_zero() -> None:
    assert macro_mean([None, None], policy="zero") == 0.0


def test_macro_mean_rejects_an_unknown_policy() -> None:
    with pytest.raises(ScoringError) as error:
        macro_mean([1.0], policy="drop")
    assert str(error.value) == "macro_mean: missing_task_policy must be one of 'exclude', 'zero', got 'drop'"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "macro_mean: scores[1] must be a finite number >= 0, got nan"),
        (math.inf, "macro_mean: scores[1] must be a finite number >= 0, got inf"),
        (-0.1, "macro_mean: scores[1] must be a finite number >= 0, got -0.1"),
    ],
)
def test_macro_mean_rejects_bad_task_scores(value: float, message: str) -> None:
    with pytest.raises(ScoringError) as error:
        macro_mean([0.5, value])
    assert str(error.value) == message


# ------------------------------------------------------------ task set hashing


def test_the_required_task_set_hash_is_sha256_of_sorted_unique_slugs_joined_by_newlines() -> None:
    expected = hashlib.sha256(b"a_task\nb_task\nc_task").hexdigest()
    assert required_task_set_hash(["c_task", "a_task", "b_task", "a_task"]) == expected


def test_the_required_task_set_hash_has_a_pinned_value() -> None:
    assert required_task_set_hash(["lift"]) == hashlib.sha256(b"lift").hexdigest()
    assert required_task_set_hash([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_the_required_task_set_hash_ignores_input_order() -> None:
    assert required_task_set_hash(["x", "y"]) == required_task_set_hash(["y", "x"])


def test_a_slug_containing_a_newline_cannot_be_hashed() -> None:
    with pytest.raises(ScoringError) as error:
        required_task_set_hash(["a\nb"])
    assert str(error.value) == "required_task_set: slug must be a non-empty string without newlines, got 'a\\nb'"


def test_an_empty_slug_cannot_be_hashed() -> None:
    with pytest.raises(ScoringError) as error:
        required_task_set_hash([""])
    assert str(error.value) == "required_task_set: slug must be a non-empty string without newlines, got ''"


# -------------------------------------------------------------------- coverage


def test_coverage_reports_counts_missing_and_extra_slugs() -> None:
    result = coverage(["a", "b", "z"], ["a", "b", "c", "d"])
    assert (result.covered, result.required, result.complete) == (2, 4, False)
    assert result.missing == ("c", "d")
    assert result.extra == ("z",)
    assert result.hash_matches is None


def test_coverage_is_complete_when_nothing_is_missing() -> None:
    assert coverage(["b", "a"], ["a", "b"]).complete is True


def test_coverage_checks_a_claimed_hash_case_insensitively() -> None:
    claimed = required_task_set_hash(["a", "b"]).upper()
    assert coverage(["a"], ["b", "a"], claimed).hash_matches is True


def test_coverage_flags_a_claimed_hash_for_another_task_set() -> None:
    assert coverage(["a"], ["a", "b"], required_task_set_hash(["a"])).hash_matches is False


# -------------------------------------------------------------------- episodes


def test_pass_rate_is_the_share_of_episodes_not_aborted() -> None:
    episodes = [Episode(1.0), Episode(1.0, aborted=True), Episode(None), Episode(0.0)]
    assert pass_rate(episodes) == 0.75


def test_pass_rate_of_no_episodes_is_none() -> None:
    assert pass_rate([]) is None


def test_measured_is_the_mean_of_the_episodes_that_report_a_metric() -> None:
    result = aggregate_episodes([Episode(0.5), Episode(None), Episode(1.0)], [])
    assert result.measured == 0.75


def test_an_aborted_episode_still_contributes_its_metric() -> None:
    result = aggregate_episodes([Episode(1.0), Episode(0.0, aborted=True)], [])
    assert result.measured == 0.5
    assert result.pass_rate == 0.5


@pytest.mark.parametrize("episodes", [[Episode(1.7e308)] * 2, [Episode(1.7e308)] * 2 + [Episode(-1.7e308)]])
@pytest.mark.parametrize("as_list", [True, False], ids=["column path", "episode loop"])
def test_metrics_and_rates_whose_sum_exceeds_a_double_still_average_to_their_finite_mean(episodes, as_list) -> None:
    big = [Episode(e.metric, {"collision_rate": abs(e.metric)}) for e in episodes]
    result = aggregate_episodes(big if as_list else iter(big), ["collision_rate"])
    expected = math.fsum(e.metric / len(big) for e in big)
    assert result.measured == pytest.approx(expected) and math.isfinite(result.measured)
    assert result.rates["collision_rate"] == pytest.approx(1.7e308) and math.isfinite(result.rates["collision_rate"])


def test_measured_is_none_when_no_episode_reports_a_metric() -> None:
    assert aggregate_episodes([Episode(None), Episode(None)], []).measured is None


def test_a_safety_rate_is_the_mean_over_the_episodes_that_report_it() -> None:
    episodes = [Episode(1.0, {"collision_rate": 0.1}), Episode(1.0), Episode(1.0, {"collision_rate": 0.3})]
    assert aggregate_episodes(episodes, ["collision_rate"]).rates == {"collision_rate": pytest.approx(0.2)}


def test_a_safety_rate_no_episode_reports_is_none_so_it_fails_closed() -> None:
    assert aggregate_episodes([Episode(1.0)], ["collision_rate"]).rates == {"collision_rate": None}


_odd_numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, -1e-9, 1, 0, True, "0.5"]),
)
_episodes = st.lists(
    st.builds(
        Episode,
        metric=st.one_of(st.none(), st.floats(-1e6, 1e6), _odd_numbers),
        rates=st.one_of(
            st.dictionaries(st.sampled_from(["collision_rate", "drop_rate", "other"]), st.floats(0, 10), max_size=3),
            st.dictionaries(st.sampled_from(["collision_rate", "other"]), _odd_numbers, max_size=2),
            st.sampled_from([None, ()]),
        ),
        aborted=st.one_of(st.booleans(), st.sampled_from([0, 1, None])),
    ),
    max_size=12,
)


def _aggregate_or_error(episodes: object, declared: list[str]) -> object:
    try:
        return aggregate_episodes(episodes, declared, slug="t")  # type: ignore[arg-type]
    except ScoringError as exc:
        return ("refused", str(exc))


@settings(max_examples=500, deadline=None)
@given(_episodes, st.sampled_from([[], ["collision_rate"], ["collision_rate", "drop_rate"]]))
def test_the_column_path_aggregates_and_refuses_exactly_as_the_episode_loop(
    episodes: list[Episode], declared: list[str]
) -> None:
    """A list or tuple of episodes is checked column by column; any other iterable takes the
    episode-by-episode loop. Both give the same aggregate (bit for bit) or the same refusal."""
    expected = _aggregate_or_error(iter(episodes), declared)
    assert _aggregate_or_error(episodes, declared) == expected
    assert _aggregate_or_error(tuple(episodes), declared) == expected


def test_an_episode_metric_that_is_nan_is_rejected_with_its_index() -> None:
    with pytest.raises(ScoringError) as error:
        aggregate_episodes([Episode(1.0), Episode(math.nan)], [], slug="lift")
    assert str(error.value) == "task 'lift': episodes[1].metric must be a finite number, got nan"


def test_a_negative_episode_rate_is_rejected_even_for_an_undeclared_metric() -> None:
    with pytest.raises(ScoringError) as error:
        aggregate_episodes([Episode(1.0, {"other": -1.0})], [], slug="lift")
    assert str(error.value) == "task 'lift': episodes[0].rates['other'] must be a finite number >= 0, got -1.0"


def test_episode_rates_that_are_not_a_mapping_are_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        aggregate_episodes([Episode(1.0, None)], [], slug="lift")  # type: ignore[arg-type]
    assert str(error.value) == "task 'lift': episodes[0].rates must be a mapping of metric name to rate, got None"


# ---------------------------------------------------------------- task specs


def test_a_task_spec_with_a_zero_paper_value_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        TaskSpec("lift", REPRODUCTION, HIGHER_IS_BETTER, 0.0)
    assert str(error.value) == "task 'lift': paper_value must be a finite number > 0, got 0.0"


def test_a_task_spec_with_a_cap_below_one_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        TaskSpec("lift", REPRODUCTION, HIGHER_IS_BETTER, 0.7, cap=0.5)
    assert str(error.value) == "task 'lift': cap must be a finite number >= 1, got 0.5"


def test_a_task_spec_with_a_non_positive_penalty_limit_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        TaskSpec("lift", REPRODUCTION, HIGHER_IS_BETTER, 0.7, penalties={"collision_rate": 0})
    assert str(error.value) == "task 'lift': penalties['collision_rate'].limit must be a finite number > 0, got 0"


def test_a_task_spec_with_an_unknown_genre_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        TaskSpec("lift", "benchmark", HIGHER_IS_BETTER, 0.7)
    assert str(error.value) == "task 'lift': genre must be one of 'reproduction', 'open', got 'benchmark'"


def test_a_release_with_an_unknown_missing_task_policy_is_rejected() -> None:
    with pytest.raises(ScoringError) as error:
        ReleaseSpec({}, missing_task_policy="ignore")
    assert str(error.value) == "release: missing_task_policy must be one of 'exclude', 'zero', got 'ignore'"


def test_a_release_keyed_by_the_wrong_slug_is_rejected() -> None:
    with pytest.raises(ScoringError, match=r"^release: tasks\['push'\] must be a TaskSpec with slug 'push'"):
        ReleaseSpec({"push": TaskSpec("lift", OPEN, HIGHER_IS_BETTER, 1.0)})


# ------------------------------------------------------------------ whole runs


def seed_release(policy: str = "exclude") -> ReleaseSpec:
    return ReleaseSpec(
        {
            "task_a": TaskSpec("task_a", REPRODUCTION, HIGHER_IS_BETTER, 0.70, penalties={"collision_rate": 0.05}),
            "task_b": TaskSpec("task_b", OPEN, LOWER_IS_BETTER, 1.12),
            "task_c": TaskSpec("task_c", REPRODUCTION, HIGHER_IS_BETTER, 0.5),
        },
        missing_task_policy=policy,
    )


def seed_results() -> dict[str, TaskResult]:
    return {
        "task_a": TaskResult(
            [
                Episode(0.60, {"collision_rate": 0.01}),
                Episode(0.66, {"collision_rate": 0.03}, aborted=True),
            ],
            faithful=True,
        ),
        "task_b": TaskResult([Episode(1.0), Episode(1.0)], faithful=None),
    }


def test_score_run_reproduces_the_seed_worked_example() -> None:
    breakdown = score_run(seed_release(), seed_results())
    assert breakdown.tasks["task_a"].final == pytest.approx(0.54, abs=1e-12)
    assert breakdown.tasks["task_b"].final == pytest.approx(1.12, abs=1e-12)
    assert breakdown.overall == pytest.approx(0.83, abs=1e-12)


def test_score_run_splits_reproduction_and_open_categories() -> None:
    breakdown = score_run(seed_release(), seed_results())
    assert breakdown.reproduction == pytest.approx(0.54)
    assert breakdown.open == pytest.approx(1.12)


def test_score_run_applies_the_zero_policy_to_categories() -> None:
    breakdown = score_run(seed_release("zero"), seed_results())
    assert breakdown.overall == pytest.approx(1.66 / 3)
    assert breakdown.reproduction == pytest.approx(0.27)


def test_the_run_pass_rate_is_pooled_over_every_episode() -> None:
    assert score_run(seed_release(), seed_results()).pass_rate == 0.75


def test_the_run_pass_rate_counts_episodes_of_tasks_without_a_metric() -> None:
    results = seed_results() | {"task_c": TaskResult([Episode(None, aborted=True)] * 4, faithful=True)}
    breakdown = score_run(seed_release(), results)
    assert "task_c" not in breakdown.tasks
    assert breakdown.pass_rate == 3 / 8


def test_the_breakdown_has_exactly_the_score_breakdown_json_shape() -> None:
    document = score_run(seed_release(), seed_results()).to_dict()
    assert set(document) == {"tasks", "aggregates"}
    assert set(document["aggregates"]) == {"overall", "reproduction", "open", "pass_rate", "coverage"}
    assert document["aggregates"]["coverage"] == {"covered": 2, "required": 3, "complete": False}
    task = document["tasks"]["task_a"]
    assert list(task) == ["measured", "gap", "penalties", "factor", "score", "final", "pass_rate"]
    assert task["penalties"] == {"collision_rate": pytest.approx(0.6)}
    assert task["pass_rate"] == 0.5
    assert document["tasks"]["task_b"]["penalties"] == {}
    assert json.loads(json.dumps(document, allow_nan=False)) == document


def test_a_result_for_a_task_outside_the_release_is_rejected() -> None:
    results = seed_results() | {"task_z": TaskResult([Episode(1.0)], faithful=True)}
    with pytest.raises(ScoringError) as error:
        score_run(seed_release(), results)
    assert str(error.value) == "run: result for task 'task_z' is not in the release's required task set"


def test_an_empty_run_has_no_scores_and_no_pass_rate() -> None:
    breakdown = score_run(seed_release(), {})
    assert breakdown.to_dict()["aggregates"] == {
        "overall": None,
        "reproduction": None,
        "open": None,
        "pass_rate": None,
        "coverage": {"covered": 0, "required": 3, "complete": False},
    }


def test_category_scores_of_a_genre_without_required_tasks_is_none() -> None:
    release = ReleaseSpec({"only": TaskSpec("only", OPEN, HIGHER_IS_BETTER, 1.0)})
    assert category_scores(release, {"only": 0.5}) == {"overall": 0.5, "reproduction": None, "open": 0.5}


def test_category_scores_reject_a_final_for_an_unknown_task() -> None:
    with pytest.raises(ScoringError) as error:
        category_scores(seed_release(), {"nope": 1.0})
    assert str(error.value) == "run: task must be a slug of the release's required task set, got 'nope'"
