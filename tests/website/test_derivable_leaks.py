"""No response lets anyone who chose a measured value derive a withheld anchor from it.

Bundles go through the real path (API upload, verification, standings): a submitter uploads an
evaluator-signed run, an honest-looking unsigned run and a mismatched unsigned bundle covering
tasks whose anchors are withheld. Then every page, export and API response is fetched as an
anonymous visitor, an unrelated account and the submitter, and every number in every body is
checked against the arithmetic an outsider would do with the measured values they chose:
``measured / shown`` (higher-is-better) and ``shown x measured`` (lower-is-better) must not
give the anchor, no shown number may equal the task's score or final (gap x the public penalty
factors), and no shown aggregate may equal a macro mean that includes such a task (the other
tasks' finals are public, so ``mean x n - others`` would give its final, hence its gap).
Staff see everything: the same search over staff's bodies must find the values (the check can
fail). The signed run also carries an official re-run of its own results, so the re-run table's
values are searched too. The measured values of the signed run are searched for as well: only its submitter and
staff may see them (with the public gap they would give the anchor to everyone).

Whether the unsigned bundles are accepted or refused (the verification pipeline refuses unsigned
results for withheld anchors) does not matter here: whatever exists is searched.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import Agent, Benchmark, Evaluator, Release, ReleaseTask, Run, Standing, Task
from scoring import gap
from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
from submissions.bundle.signatures import public_key_b64
from submissions.models import Submission
from submissions.services.reruns import run_rerun_record_bundle
from submissions.services.signing_keys import signing_key_register
from tests.staff import staff_grant

pytestmark = pytest.mark.django_db

BENCHMARK, VERSION = "leak-bench", "v1"
# (slug, genre, direction, anchor, published)
TASKS = (
    ("grasp", "reproduction", gap.HIGHER_IS_BETTER, 7.31, False),
    ("plan", "reproduction", gap.LOWER_IS_BETTER, 12.345, False),
    ("fly", "open", gap.HIGHER_IS_BETTER, 4.17, False),
    ("walk", "open", gap.HIGHER_IS_BETTER, 0.62, True),
)
ROLES = ("anonymous", "other", "submitter")


@dataclass
class Truth:
    """What the server recomputes for one bundle (scoring.gap on its own results)."""

    bundle: str
    signed: bool
    breakdown: dict[str, Any]


def _spec() -> gap.ReleaseSpec:
    return gap.ReleaseSpec(
        tasks={
            slug: gap.TaskSpec(slug=slug, genre=genre, direction=direction, paper_value=anchor)
            for slug, genre, direction, anchor, _ in TASKS
        }
    )


def _rows(staff: Any) -> Release:
    benchmark = Benchmark.objects.create(slug=BENCHMARK, name="Leak bench", scheme="paper_gap")
    evaluator = Evaluator.objects.create(simulator="demo-sim")
    release = Release.objects.create(
        benchmark=benchmark,
        version=VERSION,
        required_task_set_hash=_spec().required_task_set_hash,
        manifest_sha256="0" * 64,
        published=True,
        published_at=timezone.now(),
    )
    for position, (slug, genre, direction, anchor, published) in enumerate(TASKS):
        task = Task.objects.create(
            benchmark=benchmark, slug=slug, title=f"Task {slug}", platform="manipulation", direction="learning",
            simulator=evaluator, genre=genre, mode="batch", metric_name="metric", metric_direction=direction,
            paper_md="paper", brief_md="brief",
        )  # fmt: skip
        ReleaseTask.objects.create(
            release=release, task=task, position=position, genre=genre, metric_direction=direction,
            paper_value=anchor, anchor_published=published,
        )  # fmt: skip
    return release


def _truth(directory: Path, spec: gap.ReleaseSpec, signed: bool) -> Truth:
    results = {}
    faithful = {}
    path = directory / "faithfulness.json"
    if path.exists():
        faithful = {slug: v["faithful"] for slug, v in json.loads(path.read_text()).items()}
    for file in sorted((directory / "results").glob("*.json")):
        doc = json.loads(file.read_text())
        episodes = [gap.Episode(e["metric"], e["rates"], e["aborted"]) for e in doc["episodes"]]
        results[doc["task"]] = gap.TaskResult(episodes=episodes, faithful=faithful.get(doc["task"]))
    return Truth(bundle=directory.name, signed=signed, breakdown=gap.score_run(spec, results).to_dict())


@pytest.fixture
def leak_world(tmp_path: Path, site_identity: Any, media_root: Any, settings: Any, django_capture_on_commit_callbacks):
    settings.PODIUM_BOOTSTRAP_RESAMPLES = 50
    users = get_user_model().objects
    staff = staff_grant(users.create_user("staff", password="x-staff-password-1", is_staff=True))
    submitter = users.create_user("submitter", password="x-submitter-password-1")
    other = users.create_user("other", password="x-other-password-1")
    release = _rows(staff)
    Benchmark.objects.filter(slug=BENCHMARK).update(daily_submission_limit=100)
    key = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(key), user=staff
    )
    spec = _spec()
    uploads = [
        # (uploader, bundle name, kwargs): a genuine signed run; an honest-looking unsigned run whose
        # measured values the submitter chose; an unsigned bundle whose claim is off (a mismatch diff).
        (submitter, "signed", {"agent_name": "Signed Agent", "skill": 0.83, "seed": 11, "sign_with": key}),
        (submitter, "unsigned", {"agent_name": "Unsigned Agent", "skill": 1.31, "seed": 12,
                                 "tasks": ["grasp", "plan", "walk"]}),
        (submitter, "mismatch", {"agent_name": "Mismatch Agent", "skill": 1.38, "seed": 13,
                                 "tasks": ["grasp", "fly", "walk"], "tamper": "claimed_aggregate"}),
        (other, "others-signed", {"agent_name": "Other Agent", "skill": 1.07, "seed": 14, "sign_with": key}),
    ]  # fmt: skip
    truths = []
    for user, name, kwargs in uploads:
        directory = tmp_path / name
        write_paper_gap_bundle_dir(
            directory,
            release_spec=spec,
            required_task_set_hash=spec.required_task_set_hash,
            benchmark=BENCHMARK,
            release_version=VERSION,
            agent_version="1.0",
            **kwargs,
        )
        truths.append((user, _truth(directory, spec, "sign_with" in kwargs)))
        sealed = seal_dir(directory, str(site_identity.to_public())).read_bytes()
        client = APIClient()
        client.force_login(user)
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                "/api/v1/submissions/",
                {"bundle": SimpleUploadedFile(f"{name}.age", sealed), "benchmark": BENCHMARK},
                format="multipart",
            )
        assert response.status_code == 201, response.content
    # Staff record an official re-run of the signed run with its own results (the evaluator's
    # values repeat): the re-run table then holds the run's withheld finals once more, and every
    # search below covers it (its finals once reached every visitor there).
    signed_run = Run.objects.get(agent_version__agent__slug="signed-agent")
    resealed = seal_dir(tmp_path / "signed", str(site_identity.to_public())).read_bytes()
    run_rerun_record_bundle(run=signed_run, actor=staff, bundle_file=io.BytesIO(resealed))
    return {"staff": staff, "submitter": submitter, "other": other, "release": release, "truths": truths}


def _urls(world: dict[str, Any]) -> list[str]:
    release = world["release"]
    board = [BENCHMARK, VERSION]
    urls = [reverse("home"), reverse("release_detail", args=board), reverse("chart_data", args=board) + "?n=50"]
    urls.append(reverse("benchmark_detail", args=[BENCHMARK]))
    for tab in ("overall", "reproduction", "open"):
        names = ("release_board", "board_csv", "board_json", "cost_chart_data")
        urls += [reverse(name, args=board) + f"?tab={tab}" for name in names]
        urls.append(f"/api/v1/releases/{release.pk}/leaderboard/{tab}/")
    urls += [reverse("task_detail", args=[*board, slug]) for slug, *_ in TASKS]
    for run in Run.objects.all():
        urls += [reverse("run_detail", args=[run.pk]), f"/api/v1/runs/{run.pk}/"]
    for agent in Agent.objects.all():
        urls += [reverse("agent_detail", args=[agent.slug]), reverse("agent_badge", args=[*board, agent.slug])]
        urls.append(f"/api/v1/agents/{agent.slug}/")
    urls += ["/api/v1/runs/", "/api/v1/agents/", "/api/v1/releases/", "/api/v1/tasks/", "/api/v1/submissions/"]
    urls.append(reverse("my_submissions"))
    for submission in Submission.objects.all():
        urls += [
            reverse("submission_detail", args=[submission.pk]),
            reverse("submission_status", args=[submission.pk]),
            f"/api/v1/submissions/{submission.pk}/",
        ]
    # Issue 13: the per-task ranking, run downloads (the database's and the stored bundle's),
    # comparisons of every pair of runs, and the history chart.
    urls += [
        reverse(name, args=[*board, slug]) for slug, *_ in TASKS for name in ("task_results_csv", "task_results_json")
    ]
    runs = list(Run.objects.order_by("pk"))
    for run in runs:
        for name in ("run_results_csv", "run_results_json", "run_episodes_csv", "run_episodes_json", "run_artifacts"):
            urls.append(reverse(name, args=[run.pk]))
    for first in runs:
        for second in runs:
            if first.pk != second.pk:
                urls.append(reverse("run_compare_json") + f"?a={first.pk}&b={second.pk}")
                urls.append(reverse("run_compare") + f"?a={first.pk}&b={second.pk}")
    urls += [reverse("release_history", args=board), reverse("release_history_json", args=board) + "?n=20"]
    return urls


def _bodies(world: dict[str, Any], role: str) -> dict[str, str]:
    client = APIClient()
    if role != "anonymous":
        client.force_login(world[role])
    bodies = {}
    for url in _urls(world):
        response = client.get(url)
        assert response.status_code < 500, url
        content = b"".join(response.streaming_content) if response.streaming else response.content
        bodies[url] = content.decode()
    return bodies


_NUMBER = re.compile(r"(?<![\w.])-?\d+\.(\d+)(?:[eE][-+]?\d+)?")


def _numbers(body: str, min_decimals: int = 2) -> list[tuple[float, float]]:
    """Every decimal number in ``body`` (with at least ``min_decimals`` decimals) with the
    half-unit of its last shown digit."""
    out = []
    for match in _NUMBER.finditer(body):
        text = match.group(0)
        decimals = len(match.group(1))
        if decimals < min_decimals or "e" in text.lower():
            continue
        out.append((float(text), 0.5 * 10.0**-decimals + 1e-12))
    return out


def _chosen(world: dict[str, Any]) -> list[dict[str, Any]]:
    """Each task result whose measured value the submitter chose (unsigned) on a withheld anchor,
    with the aggregates that include it."""
    anchors = {slug: (direction, anchor) for slug, _, direction, anchor, published in TASKS if not published}
    genres = {slug: genre for slug, genre, *_ in TASKS}
    out = []
    for _user, truth in world["truths"]:
        if truth.signed:
            continue
        aggregates = truth.breakdown["aggregates"]
        for slug, entry in truth.breakdown["tasks"].items():
            if slug not in anchors:
                continue
            direction, anchor = anchors[slug]
            out.append(
                {
                    "where": f"{truth.bundle}/{slug}",
                    "measured": entry["measured"],
                    "direction": direction,
                    "anchor": anchor,
                    "values": [entry["gap"], entry["score"], entry["final"]],
                    "means": [aggregates["overall"], aggregates[genres[slug]]],
                }
            )
    return out


def _derivations(body: str, chosen: list[dict[str, Any]], min_decimals: int = 2) -> list[str]:
    """Every way a number in ``body`` gives away an anchor from a chosen measured value."""
    found = []
    for shown, half_unit in _numbers(body, min_decimals):
        if shown == 0:
            continue  # an unfaithful final of 0 says nothing about the anchor
        for item in chosen:
            measured, anchor = item["measured"], item["anchor"]
            # measured / shown (higher is better: gap = measured / anchor) and shown x measured
            # (lower is better: gap = anchor / measured), to the precision the number was shown with.
            estimate = measured / shown if item["direction"] == gap.HIGHER_IS_BETTER else shown * measured
            tolerance = (measured / shown**2 if item["direction"] == gap.HIGHER_IS_BETTER else measured) * half_unit
            if abs(estimate - anchor) <= tolerance:
                found.append(f"{shown} -> anchor of {item['where']} (per-task route)")
            for value in item["values"]:
                # The task's score and final: gap x the (public) penalty factors, so with the factors
                # shown they give the gap, hence the anchor, just the same.
                if value and abs(shown - value) <= half_unit:
                    found.append(f"{shown} -> score/final of {item['where']} (factor route)")
            for mean in item["means"]:
                # The macro-mean route: a shown aggregate equal to a mean that includes this task.
                if mean and abs(shown - mean) <= half_unit:
                    found.append(f"{shown} -> mean including {item['where']} (macro-mean route)")
    return found


def _signed_measured(world: dict[str, Any]) -> list[float]:
    withheld = {slug for slug, *_, published in TASKS if not published}
    return [
        entry["measured"]
        for _user, truth in world["truths"]
        if truth.signed
        for slug, entry in truth.breakdown["tasks"].items()
        if slug in withheld
    ]


def test_no_response_lets_a_chooser_of_measured_values_derive_a_withheld_anchor(leak_world: dict[str, Any]) -> None:
    chosen = _chosen(leak_world)
    assert len(chosen) == 4  # grasp and plan of the unsigned run, grasp and fly of the mismatch
    leaks = []
    for role in ROLES:
        for url, body in _bodies(leak_world, role).items():
            leaks += [f"{role} {url}: {found}" for found in _derivations(body, chosen)]
    assert leaks == []


def test_the_search_finds_the_values_where_staff_may_see_them(leak_world: dict[str, Any]) -> None:
    # Guards the test above. Verification refuses an unsigned result on a withheld-anchor task
    # (unsigned_withheld_task), so the two unsigned bundles left no run whose page could show their
    # scores; the search is checked on those scores printed as a run page prints them instead.
    chosen = _chosen(leak_world)
    refused = Submission.objects.exclude(verdict__in=["validated", "attested"])
    assert sorted(refused.values_list("verdict", "error_code")) == [("rejected", "unsigned_withheld_task")] * 2
    assert not Run.objects.filter(submission__in=refused).exists()
    unsigned = next(truth for _user, truth in leak_world["truths"] if truth.bundle == "unsigned")
    shown = [entry["gap"] for entry in unsigned.breakdown["tasks"].values()]
    body = " ".join(f"{value:.4f}" for value in [*shown, unsigned.breakdown["aggregates"]["overall"]])
    found = _derivations(body, chosen)
    assert any("per-task route" in f for f in found)
    assert any("macro-mean route" in f for f in found)


def test_the_measured_values_of_a_signed_run_reach_only_its_submitter_and_staff(leak_world: dict[str, Any]) -> None:
    measured = _signed_measured(leak_world)
    forms = {f"{value:.4g}" for value in measured} | {repr(value) for value in measured}
    forms = {form for form in forms if sum(c.isdigit() for c in form) >= 4}
    seen = {}
    for role in (*ROLES, "staff"):
        bodies = _bodies(leak_world, role)
        seen[role] = {form for form in forms for body in bodies.values() if form in body}
    assert seen["anonymous"] == set()
    assert seen["other"] <= {f"{v:.4g}" for v in _measured_of(leak_world, "other")} | {
        repr(v) for v in _measured_of(leak_world, "other")
    }
    assert seen["submitter"] and seen["staff"]


def _measured_of(world: dict[str, Any], role: str) -> list[float]:
    withheld = {slug for slug, *_, published in TASKS if not published}
    return [
        entry["measured"]
        for user, truth in world["truths"]
        if truth.signed and user == world[role]
        for slug, entry in truth.breakdown["tasks"].items()
        if slug in withheld
    ]


def test_the_signed_runs_are_ranked_and_the_unsigned_one_is_not(leak_world: dict[str, Any]) -> None:
    body = APIClient().get(f"/api/v1/releases/{leak_world['release'].pk}/leaderboard/overall/").json()
    assert sorted(row["agent_slug"] for row in body["results"]) == ["other-agent", "signed-agent"]


def _signed_task_scores(world: dict[str, Any], *, of: Any = None) -> list[tuple[str, float]]:
    """(where, value) of every gap, score and final of a withheld task in an evaluator-signed run
    (of one uploader's runs when ``of`` is given), but for an unfaithful 0, which says nothing."""
    withheld = {slug for slug, *_, published in TASKS if not published}
    return [
        (f"{truth.bundle}/{slug}.{field}", entry[field])
        for user, truth in world["truths"]
        if truth.signed and (of is None or user == of)
        for slug, entry in truth.breakdown["tasks"].items()
        if slug in withheld
        for field in ("gap", "score", "final")
        if entry[field]
    ]


def _shown(body: str, values: list[tuple[str, float]]) -> set[str]:
    # Three decimals or more: the precision at which a guessed whole k in k / N / gap stands out
    # (exports and the API print full precision).
    return {
        where for shown, half_unit in _numbers(body, 3) for where, value in values if abs(shown - value) <= half_unit
    }


def test_a_signed_runs_withheld_task_scores_reach_only_its_submitter_and_staff(leak_world: dict[str, Any]) -> None:
    # A measured value is often guessable without being shown (a success rate over N episodes is
    # k / N, N public), and then a full-precision gap gives the anchor to whoever tries each k: a
    # withheld task's gap, score and final go with its measured value (leaderboard.disclosure).
    values = _signed_task_scores(leak_world)
    own = {"other": {where for where, _ in _signed_task_scores(leak_world, of=leak_world["other"])}}
    assert len(values) == 18  # two signed runs x three withheld tasks x (gap, score, final)
    seen = {}
    for role in (*ROLES, "staff"):
        seen[role] = set().union(*(_shown(body, values) for body in _bodies(leak_world, role).values()))
    assert seen["anonymous"] == set()
    assert seen["other"] <= own["other"] and seen["other"]
    assert {where.split("/")[0] for where in seen["submitter"]} == {"signed"}
    assert {where.split("/")[0] for where in seen["staff"]} == {"signed", "others-signed"}


def _signed_aggregates(world: dict[str, Any], *, of: Any = None) -> list[tuple[str, float]]:
    """(where, value) of every aggregate and interval bound of an evaluator-signed run (of one
    uploader's runs when ``of`` is given): each includes a withheld-anchor task here."""
    out = []
    for run in Run.objects.filter(level__in=["verified", "validated", "attested"]).select_related("submission"):
        if of is not None and run.submission.submitter_id != of.pk:
            continue
        for name in ("overall", "reproduction", "open"):
            out.append((f"run {run.pk}/{name}", getattr(run, name)))
            out += [(f"run {run.pk}/{name}.ci", bound) for bound in (run.confidence or {}).get(name, [])]
    return [(where, value) for where, value in out if value]


def _shown_finer_than_published(body: str, values: list[tuple[str, float]]) -> set[str]:
    # A number printed with three decimals or more that is not itself a two-decimal value: finer
    # than the published precision (a published 0.83 printed as 0.830 says no more than 0.83).
    return {
        where
        for shown, half_unit in _numbers(body, 3)
        if round(shown, 2) != shown
        for where, value in values
        if abs(shown - value) <= half_unit
    }


def test_an_aggregate_including_a_withheld_task_is_published_at_two_decimals(leak_world: dict[str, Any]) -> None:
    # mean x n - the other (public) finals = the withheld task's final: an aggregate that includes
    # a task whose final a viewer may not see is shown to them, and ranked, at display precision.
    values = _signed_aggregates(leak_world)
    assert len({where.split("/")[0] for where, _ in values}) == 2
    assert any(where.endswith(".ci") for where, _ in values)  # the intervals are searched too
    own = {role: {where for where, _ in _signed_aggregates(leak_world, of=leak_world[role])} for role in ROLES[1:]}
    seen = {}
    for role in (*ROLES, "staff"):
        seen[role] = set().union(
            *(_shown_finer_than_published(body, values) for body in _bodies(leak_world, role).values())
        )
    assert seen["anonymous"] == set()
    assert seen["other"] <= own["other"] and seen["other"]
    assert seen["submitter"] <= own["submitter"] and seen["submitter"]
    assert seen["staff"] == {
        where for where, _ in values if round(_value_of(values, where), 2) != _value_of(values, where)
    }


def _value_of(values: list[tuple[str, float]], where: str) -> float:
    return next(value for name, value in values if name == where)


def test_the_board_stores_and_ranks_the_published_score_of_a_tab_with_a_withheld_anchor(
    leak_world: dict[str, Any],
) -> None:
    rows = list(Standing.objects.filter(release=leak_world["release"]).select_related("run"))
    assert {row.tab for row in rows} == {"overall", "reproduction", "open"}
    for row in rows:
        exact = getattr(row.run, row.tab)
        assert abs(row.score - exact) <= 0.005 + 1e-9
        assert row.score == round(row.score, 2)
        assert row.ci_low is None or row.ci_low == round(row.ci_low, 2)
