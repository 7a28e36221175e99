"""The demo data (manage.py load_demo, real bundles through the real verification path): no
page, export or API response lets the submitter of an unsigned demo bundle (the one refused
for its unsigned withheld-anchor results among them) derive a withheld anchor from the measured
values it chose. The truth is
recomputed from the stored bundles themselves. Only numbers shown with four or more decimals
are compared (API, exports, diffs): the demo's many two-decimal scores would coincide by chance."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard.models import Agent, Release, Run
from leaderboard.selectors.releases import release_spec
from scoring import gap
from submissions.bundle.evaluate import scoring_results
from submissions.models import Submission
from submissions.services.stored_bundles import bundle_local_path, open_stored_bundle
from tests.website.test_derivable_leaks import _derivations

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings, tmp_path):
    import pyrage

    settings.PODIUM_SITE_KEYS = str(pyrage.x25519.Identity.generate())
    settings.MEDIA_ROOT = tmp_path / "media"
    call_command("load_demo", stdout=io.StringIO())
    return Release.objects.select_related("benchmark").get(benchmark__slug="ale-robotics", version="0.5")


def _chosen(release: Release) -> list[dict[str, Any]]:
    """Unsigned results on withheld-anchor tasks in the demo's stored 0.5 bundles."""
    spec = release_spec(release)
    withheld = {rt.task.slug for rt in release.release_tasks.select_related("task") if not rt.anchor_published}
    chosen = []
    # Accepted bundles, and the bundles refused for an unsigned result on a withheld anchor (their
    # submitter chose those measured values: nothing shown to them may give the anchor away either).
    searched = Submission.objects.filter(kind="paper_gap", release=release).exclude(
        verdict="rejected", error_code__in=["release_hash_mismatch"]
    )
    for submission in searched:
        with bundle_local_path(submission.file.name) as path:
            bundle = open_stored_bundle(path)
        breakdown = gap.score_run(spec, scoring_results(bundle)).to_dict()
        for slug, entry in breakdown["tasks"].items():
            if slug not in withheld or bundle.results[slug].signed:
                continue
            chosen.append(
                {
                    "where": f"{submission.original_name}/{slug}",
                    "measured": entry["measured"],
                    "direction": spec.tasks[slug].direction,
                    "anchor": spec.tasks[slug].paper_value,
                    "values": [entry["gap"], entry["score"], entry["final"]],
                    "means": [breakdown["aggregates"]["overall"], breakdown["aggregates"][spec.tasks[slug].genre]],
                }
            )
    return chosen


def _urls(release: Release) -> list[str]:
    board = [release.benchmark.slug, release.version]
    urls = [reverse("home"), reverse("chart_data", args=board) + "?n=50", "/api/v1/runs/?limit=500"]
    for tab in ("overall", "reproduction", "open"):
        urls += [reverse(name, args=board) + f"?tab={tab}" for name in ("release_board", "board_csv", "board_json")]
        urls.append(f"/api/v1/releases/{release.pk}/leaderboard/{tab}/")
    for run in Run.objects.filter(release=release):
        urls += [reverse("run_detail", args=[run.pk]), f"/api/v1/runs/{run.pk}/"]
    urls += [reverse("agent_detail", args=[agent.slug]) for agent in Agent.objects.all()]
    for submission in Submission.objects.filter(kind="paper_gap", release=release):
        urls += [reverse("submission_status", args=[submission.pk]), f"/api/v1/submissions/{submission.pk}/"]
    return urls


def test_no_demo_response_lets_an_unsigned_submitter_derive_an_anchor(demo):
    chosen = _chosen(demo)
    # The unsigned demo bundle on withheld anchors (refused: unsigned_withheld_task) is searched for.
    assert any("magpie" in item["where"] for item in chosen)
    submitter = Submission.objects.filter(kind="paper_gap").first().submitter
    leaks = []
    for role in ("anonymous", "submitter"):
        client = APIClient()
        if role == "submitter":
            client.force_login(submitter)
        for url in _urls(demo):
            response = client.get(url)
            if response.status_code in (401, 404):
                continue  # a submission seen anonymously, an agent page with no public run
            assert response.status_code == 200, url
            body = (b"".join(response.streaming_content) if response.streaming else response.content).decode()
            leaks += [f"{role} {url}: {found}" for found in _derivations(body, chosen, min_decimals=4)]
    assert leaks == []
