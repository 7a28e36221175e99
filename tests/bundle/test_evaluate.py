"""evaluate_paper_gap: recomputation, comparison, verdicts and attestation."""

from __future__ import annotations

import json

import pytest

from scoring import gap
from submissions.bundle import BundleError, Outcome, evaluate_paper_gap, open_bundle


@pytest.fixture
def judge(site_identity, release, registered_keys):
    spec, rhash = release

    def run(path, *, keys=None, **kwargs) -> Outcome:
        bundle = open_bundle(path, [site_identity[0]])
        kwargs.setdefault("bootstrap_resamples", 0)
        return evaluate_paper_gap(
            bundle,
            release_spec=spec,
            required_task_set_hash=rhash,
            signing_keys=registered_keys if keys is None else keys,
            **kwargs,
        )

    return run


def test_it_validates_a_bundle_whose_claims_match(sealed_demo, judge):
    outcome = judge(sealed_demo())
    assert outcome.verdict == "validated"
    assert outcome.message == (
        "every claim matches the recomputation; not attested: podium-bundle/1 bundles carry no submission "
        "challenge; not every evaluator result is signed by a registered key; self-declared faithfulness"
    )
    assert outcome.diff == []
    assert [t.signature for t in outcome.tasks] == ["unsigned"] * 11


def test_it_attests_when_every_result_is_signed_by_a_registered_key(sealed_demo, judge, evaluator_key, registered_keys):
    from submissions.bundle.contract import JudgeKey
    from submissions.bundle.demo import demo_release_spec
    from submissions.bundle.signatures import generate_signing_key, key_id_for, public_key_b64

    judge_key = generate_signing_key()
    spec, _ = demo_release_spec()
    reproduction = {slug for slug, task in spec.tasks.items() if task.genre == "reproduction"}
    judges = {
        key_id_for(public_key_b64(judge_key)): JudgeKey(
            public_key=public_key_b64(judge_key), name="judge/1", rubrics=dict.fromkeys(reproduction, "rubric/1")
        )
    }
    bundle = sealed_demo(sign_with=evaluator_key, challenge="c" * 43, judge_with=judge_key)
    outcome = judge(bundle, judge_keys=judges)
    assert outcome.verdict == "attested", outcome.message
    assert {t.signature for t in outcome.tasks} == {"valid"}
    assert {t.key_id for t in outcome.tasks} == set(registered_keys)


def test_it_only_validates_results_signed_by_an_unregistered_key(sealed_demo, judge, evaluator_key):
    outcome = judge(sealed_demo(sign_with=evaluator_key), keys={})
    assert outcome.verdict == "validated"
    assert {t.signature for t in outcome.tasks} == {"unregistered"}


def test_it_only_validates_when_one_result_is_unsigned(demo_dir, site_identity, judge, evaluator_key):
    from submissions.bundle.seal import seal_dir

    directory = demo_dir(sign_with=evaluator_key)
    path = directory / "results" / "orb-slam-ate.json"
    doc = json.loads(path.read_text())
    del doc["signature"]
    path.write_text(json.dumps(doc))
    outcome = judge(seal_dir(directory, site_identity[1], directory.with_suffix(".age")))
    assert outcome.verdict == "validated"
    assert [t.slug for t in outcome.tasks if t.signature == "unsigned"] == ["orb-slam-ate"]


def test_it_rejects_a_forged_signature(sealed_demo, judge, evaluator_key, registered_keys):
    outcome = judge(sealed_demo(sign_with=evaluator_key, tamper="forged_signature"))
    (key_id,) = registered_keys
    assert outcome.verdict == "rejected"
    assert outcome.error_code == "bad_signature"
    assert outcome.message == (
        f"results/act-aloha-transfer.json: the signature by registered key {key_id} does not verify; "
        "the signed content was altered or forged"
    )
    assert outcome.breakdown is None


def test_it_reports_a_field_by_field_diff_on_mismatch(sealed_demo, judge):
    outcome = judge(sealed_demo(tamper="claimed_score"))
    assert outcome.verdict == "mismatch"
    assert [d["path"] for d in outcome.diff] == ["tasks.act-aloha-transfer.final"]
    entry = outcome.diff[0]
    assert entry["status"] == "diff"
    assert entry["claimed"] == pytest.approx(entry["recomputed"] + 0.05)
    assert outcome.message.startswith(
        "score_breakdown.json: 1 claimed value(s) differ from the recomputation (first: tasks.act-aloha-transfer.final"
    )
    assert outcome.breakdown is not None


def test_it_tolerates_claims_within_one_millionth(demo_dir, site_identity, judge):
    from submissions.bundle.seal import seal_dir

    directory = demo_dir()
    path = directory / "score_breakdown.json"
    doc = json.loads(path.read_text())
    doc["aggregates"]["overall"] += 5e-7
    path.write_text(json.dumps(doc))
    outcome = judge(seal_dir(directory, site_identity[1], directory.with_suffix(".age")))
    assert outcome.verdict == "validated"


def test_it_reports_a_missing_claimed_field(demo_dir, site_identity, judge):
    from submissions.bundle.seal import seal_dir

    directory = demo_dir()
    path = directory / "score_breakdown.json"
    doc = json.loads(path.read_text())
    del doc["aggregates"]["pass_rate"]
    path.write_text(json.dumps(doc))
    outcome = judge(seal_dir(directory, site_identity[1], directory.with_suffix(".age")))
    assert outcome.verdict == "mismatch"
    assert [(d["path"], d["status"]) for d in outcome.diff] == [("aggregates.pass_rate", "missing")]


def test_it_rejects_a_release_hash_mismatch(sealed_demo, judge, release):
    outcome = judge(sealed_demo(tamper="release_hash"))
    assert outcome.error_code == "release_hash_mismatch"
    assert outcome.message.endswith(
        f"does not match release 0.5's {release[1]}; the run was made against another task set"
    )


def test_it_rejects_a_task_not_in_the_release(sealed_demo, judge):
    outcome = judge(sealed_demo(tamper="unknown_task"))
    assert (outcome.verdict, outcome.error_code, outcome.message) == (
        "rejected",
        "unknown_task",
        "results/not-in-release.json: task 'not-in-release' is not part of release 0.5",
    )


def test_it_rejects_a_genre_that_differs_from_the_release(sealed_demo, judge):
    outcome = judge(sealed_demo(tamper="genre"))
    assert (outcome.error_code, outcome.message) == (
        "genre_mismatch",
        "manifest.json: tasks['act-aloha-transfer'].genre is 'open' but release 0.5 declares 'reproduction'",
    )


def test_it_rejects_a_reproduction_task_without_faithfulness_verdict(sealed_demo, judge):
    outcome = judge(sealed_demo(tamper="missing_faithfulness"))
    assert (outcome.error_code, outcome.message) == (
        "missing_faithfulness",
        "faithfulness.json: reproduction task 'act-aloha-transfer' has no faithfulness verdict "
        '(add {"faithful": true|false, "judge": ...})',
    )


def test_it_scores_a_missing_safety_metric_fail_closed_instead_of_rejecting(sealed_demo, judge):
    outcome = judge(sealed_demo(tamper="missing_safety_metric"))
    assert outcome.verdict == "validated"
    task = outcome.breakdown["tasks"]["carla-route-completion"]
    assert task["penalties"] == {"collision_rate": 0.0}
    assert task["final"] == 0.0


def test_it_scores_partial_coverage_over_the_covered_tasks(sealed_demo, judge):
    outcome = judge(sealed_demo(tasks=["orb-slam-ate", "nuplan-closed-loop"]))
    assert outcome.verdict == "validated"
    aggregates = outcome.breakdown["aggregates"]
    assert aggregates["coverage"] == {"covered": 2, "required": 11, "complete": False}
    finals = [outcome.breakdown["tasks"][s]["final"] for s in ("orb-slam-ate", "nuplan-closed-loop")]
    assert aggregates["overall"] == pytest.approx(sum(finals) / 2)


def test_it_rejects_a_bundle_of_another_kind(site_identity, release, seal_bytes, tar_bytes):
    import hashlib

    from submissions.bundle.signatures import generate_signing_key
    from tests.bundle.test_kinds import _race_doc

    run = json.dumps(_race_doc(generate_signing_key())).encode()
    manifest = {
        "format": "podium-bundle/1",
        "kind": "race_run",
        "benchmark": "shop",
        "release": "r1",
        "agent": {"name": "agent", "version": "1.0"},
        "members": {"race_run.json": hashlib.sha256(run).hexdigest()},
    }
    path = seal_bytes(tar_bytes([("manifest.json", json.dumps(manifest).encode()), ("race_run.json", run)]))
    bundle = open_bundle(path, [site_identity[0]])
    outcome = evaluate_paper_gap(bundle, release_spec=release[0], required_task_set_hash=release[1], signing_keys={})
    assert (outcome.error_code, outcome.message) == (
        "wrong_kind",
        "manifest.json: kind is 'race_run', expected 'paper_gap'",
    )


def test_it_rejects_values_scoring_refuses(demo_dir, site_identity, release):
    """A negative measured time cannot be scored lower-is-better: rejected, not crashed."""
    from submissions.bundle.seal import seal_dir

    directory = demo_dir()
    path = directory / "results" / "orb-slam-ate.json"
    doc = json.loads(path.read_text())
    for episode in doc["episodes"]:
        episode["metric"] = -1.0
    path.write_text(json.dumps(doc))
    bundle = open_bundle(seal_dir(directory, site_identity[1], directory.with_suffix(".age")), [site_identity[0]])
    outcome = evaluate_paper_gap(bundle, release_spec=release[0], required_task_set_hash=release[1], signing_keys={})
    assert outcome.error_code == "invalid_value"
    assert outcome.message == (
        "results: task 'orb-slam-ate': measured must be a finite number >= 0 for a lower_is_better metric, got -1.0"
    )


def test_it_carries_agent_effort_and_usage(sealed_demo, judge):
    outcome = judge(sealed_demo(agent_name="robo", agent_version="2.1", effort_tier="high"))
    data = outcome.to_dict()
    assert data["agent"] == {"name": "robo", "version": "2.1"}
    assert data["effort_tier"] == "high"
    assert data["runtime_seconds"] > 0
    assert set(data["tokens"]) == {"input", "output"}
    assert (data["benchmark"], data["release"], data["kind"]) == ("ale-robotics", "0.5", "paper_gap")


def test_it_computes_deterministic_bootstrap_intervals(sealed_demo, judge):
    path = sealed_demo()
    first = judge(path, bootstrap_resamples=200)
    second = judge(path, bootstrap_resamples=200)
    assert first.confidence["overall"]["resamples"] == 200
    assert (
        first.confidence["overall"]["low"]
        <= first.breakdown["aggregates"]["overall"]
        <= first.confidence["overall"]["high"]
    )
    assert json.dumps(first.to_dict(), sort_keys=True) == json.dumps(second.to_dict(), sort_keys=True)


def test_it_builds_a_rejected_outcome_for_the_caller(sealed_demo, site_identity):
    bundle = open_bundle(sealed_demo(), [site_identity[0]])
    outcome = Outcome.rejected(BundleError("unknown_release", "manifest.json: release 'v9' is unknown"), bundle)
    assert outcome.to_dict()["verdict"] == "rejected"
    assert (outcome.error_code, outcome.agent_name, outcome.accepted) == ("unknown_release", "demo-agent", False)


def test_the_demo_breakdown_is_the_scoring_packages(demo_dir, release):
    directory = demo_dir(seed=7)
    claimed = json.loads((directory / "score_breakdown.json").read_text())
    results = {}
    faith = json.loads((directory / "faithfulness.json").read_text())
    for path in (directory / "results").glob("*.json"):
        doc = json.loads(path.read_text())
        episodes = [gap.Episode(e["metric"], e["rates"], e["aborted"]) for e in doc["episodes"]]
        results[doc["task"]] = gap.TaskResult(episodes, faith.get(doc["task"], {}).get("faithful"))
    assert claimed == gap.score_run(release[0], results).to_dict()


def _claim_nulls(directory, paths):
    """Set each dotted path of the directory's score_breakdown.json to null."""
    path = directory / "score_breakdown.json"
    claim = json.loads(path.read_text())
    for dotted in paths:
        *parents, leaf = dotted.split(".")
        node = claim
        for part in parents:
            node = node[part]
        node[leaf] = None
    path.write_text(json.dumps(claim))


def _withheld_paths(slug):
    from submissions.bundle.demo import demo_release_spec

    genre = demo_release_spec()[0].tasks[slug].genre
    return [
        f"tasks.{slug}.gap",
        f"tasks.{slug}.score",
        f"tasks.{slug}.final",
        "aggregates.overall",
        f"aggregates.{genre}",
    ]


def test_values_derived_from_a_withheld_anchor_may_be_claimed_as_null(demo_dir, site_identity, judge, evaluator_key):
    # A harness cannot compute them: the release does not publish the anchor they divide by.
    from submissions.bundle.seal import seal_dir

    directory = demo_dir(sign_with=evaluator_key)
    _claim_nulls(directory, _withheld_paths("orb-slam-ate"))
    outcome = judge(
        seal_dir(directory, site_identity[1], directory.with_suffix(".age")), withheld=frozenset({"orb-slam-ate"})
    )
    assert outcome.verdict == "validated", outcome.message
    assert outcome.diff == []
    assert outcome.message.endswith("(5 value(s) claimed as null: derived from a withheld anchor)")


def test_a_null_claim_where_the_anchor_is_published_is_a_difference(demo_dir, site_identity, judge, evaluator_key):
    from submissions.bundle.seal import seal_dir

    directory = demo_dir(sign_with=evaluator_key)
    _claim_nulls(directory, _withheld_paths("orb-slam-ate"))
    outcome = judge(seal_dir(directory, site_identity[1], directory.with_suffix(".age")))
    assert outcome.verdict == "mismatch"
    assert sorted(row["path"] for row in outcome.diff) == sorted(_withheld_paths("orb-slam-ate"))


def test_a_null_claim_of_what_the_episodes_give_is_a_difference_even_on_a_withheld_task(
    demo_dir, site_identity, judge, evaluator_key
):
    from submissions.bundle.seal import seal_dir

    directory = demo_dir(sign_with=evaluator_key)
    _claim_nulls(directory, [*_withheld_paths("orb-slam-ate"), "tasks.orb-slam-ate.measured"])
    outcome = judge(
        seal_dir(directory, site_identity[1], directory.with_suffix(".age")), withheld=frozenset({"orb-slam-ate"})
    )
    assert outcome.verdict == "mismatch"
    assert [row["path"] for row in outcome.diff] == ["tasks.orb-slam-ate.measured"]


def test_a_wrong_number_claimed_for_a_withheld_value_is_still_a_difference(
    demo_dir, site_identity, judge, evaluator_key
):
    from submissions.bundle.seal import seal_dir

    directory = demo_dir(sign_with=evaluator_key)
    path = directory / "score_breakdown.json"
    claim = json.loads(path.read_text())
    claim["tasks"]["orb-slam-ate"]["gap"] += 0.5
    path.write_text(json.dumps(claim))
    outcome = judge(
        seal_dir(directory, site_identity[1], directory.with_suffix(".age")), withheld=frozenset({"orb-slam-ate"})
    )
    assert outcome.verdict == "mismatch"
    assert [row["path"] for row in outcome.diff] == ["tasks.orb-slam-ate.gap"]
