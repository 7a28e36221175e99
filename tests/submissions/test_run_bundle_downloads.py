"""A run's per-episode results and artifacts, read from its stored bundle (the real upload
and verification path): who may see what (submissions.selectors.run_bundle)."""

from __future__ import annotations

import csv
import hashlib
import io

import pytest
from django.urls import reverse

from leaderboard.models import ReleaseTask, Run
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify

ARTIFACT_BYTES = 70_000


@pytest.fixture(autouse=True)
def _private_cache(settings):
    # The bundle summary is cached by the bundle's SHA-256; each test starts empty.
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "bundle"}}


def _verified(owner, sealed: bytes) -> Run:
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(sealed))
    submission_verify(submission_id=submission.pk)
    return Run.objects.get(submission=submission)


@pytest.fixture
def run(demo_release, seal, owner) -> Run:
    return _verified(owner, seal(artifact_bytes=ARTIFACT_BYTES))


@pytest.fixture
def legacy_run(demo_release, seal, owner) -> Run:
    """A run whose bundle's episodes name their seeds, as evaluators did before seed 003's rule."""
    return _verified(owner, seal(legacy_seeds=True))


def _login(client, viewer, owner, stranger, make_user):
    if viewer == "another":
        client.force_login(stranger)
    elif viewer == "submitter":
        client.force_login(owner)
    elif viewer == "staff":
        staff = make_user("staff")
        staff.is_staff = True
        staff.save()
        client.force_login(staff)


def _withhold_first_anchor(run: Run) -> str:
    first = ReleaseTask.objects.filter(release=run.release).order_by("position").select_related("task").first()
    ReleaseTask.objects.filter(pk=first.pk).update(anchor_published=False)
    return first.task.slug


def test_the_episode_download_lists_every_scored_episode(client, run):
    data = client.get(reverse("run_episodes_json", args=[run.pk])).json()
    slugs = {row["task"] for row in data["episodes"]}
    assert slugs == set(run.task_results.values_list("release_task__task__slug", flat=True))
    episodes = run.task_results.values_list("episodes", flat=True)
    assert len(data["episodes"]) == sum(episodes)
    first = data["episodes"][0]
    # A bundle carries no hidden seed (seed 003): there is none to show or to withhold.
    assert first["episode"] == 1 and isinstance(first["metric"], float) and first["seed"] is None
    assert first["withheld"] == []


@pytest.mark.parametrize("viewer", ["anonymous", "another", "submitter", "staff"])
def test_seeds_are_the_submitters_and_staffs_and_a_withheld_tasks_metrics_too(
    client, legacy_run, owner, stranger, make_user, viewer
):
    withheld = _withhold_first_anchor(legacy_run)
    _login(client, viewer, owner, stranger, make_user)
    rows = client.get(reverse("run_episodes_json", args=[legacy_run.pk])).json()["episodes"]
    sees = viewer in ("submitter", "staff")
    hidden = [row for row in rows if row["task"] == withheld]
    shown = [row for row in rows if row["task"] != withheld]
    assert hidden and shown
    assert all((row["metric"] is None) is not sees for row in hidden)
    assert all(row["metric"] is not None for row in shown)
    assert all((row["seed"] is None) is not sees for row in rows)
    assert all(("seed" in row["withheld"]) is not sees for row in rows)


def test_the_episode_csv_has_a_line_per_episode(client, run):
    response = client.get(reverse("run_episodes_csv", args=[run.pk]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == sum(run.task_results.values_list("episodes", flat=True))
    assert rows[0]["seed"] == "" and rows[0]["withheld"] == ""


def test_the_episode_csv_withholds_an_older_bundles_seeds_from_another_account(client, legacy_run, stranger):
    client.force_login(stranger)
    response = client.get(reverse("run_episodes_csv", args=[legacy_run.pk]))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0]["seed"] == "" and rows[0]["withheld"] == "seed"


def test_the_artifacts_page_lists_the_bundles_artifacts_and_the_download_matches_the_hash(client, run):
    page = client.get(reverse("run_artifacts", args=[run.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    assert "trajectory.bin" in body
    response = client.get(reverse("run_artifact_download", args=[run.pk, "trajectory.bin"]))
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    assert len(data) == ARTIFACT_BYTES
    assert hashlib.sha256(data).hexdigest() in body
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")


@pytest.mark.parametrize("viewer", ["anonymous", "another", "submitter", "staff"])
def test_artifacts_of_a_run_with_a_withheld_anchor_are_the_submitters_and_staffs(
    client, run, owner, stranger, make_user, viewer
):
    _withhold_first_anchor(run)
    _login(client, viewer, owner, stranger, make_user)
    response = client.get(reverse("run_artifact_download", args=[run.pk, "trajectory.bin"]))
    page = client.get(reverse("run_artifacts", args=[run.pk])).content.decode()
    if viewer in ("submitter", "staff"):
        assert response.status_code == 200
        assert len(b"".join(response.streaming_content)) == ARTIFACT_BYTES
        assert "Downloads withheld" not in page
    else:
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "artifacts_withheld"
        assert "Downloads withheld" in page
        assert "trajectory.bin" not in page  # the submitter chose the names
        assert 'href="/runs/' + str(run.pk) + '/artifacts/trajectory.bin"' not in page


def test_an_artifact_the_bundle_does_not_list_is_a_404(client, run):
    assert client.get(reverse("run_artifact_download", args=[run.pk, "nope.bin"])).status_code == 404
    assert client.get(f"/runs/{run.pk}/artifacts/../manifest.json").status_code == 404


@pytest.mark.parametrize("viewer", ["anonymous", "another"])
def test_a_private_runs_bundle_downloads_are_a_404_for_others(client, run, owner, stranger, make_user, viewer):
    Run.objects.filter(pk=run.pk).update(is_private=True)
    _login(client, viewer, owner, stranger, make_user)
    for name in ("run_episodes_json", "run_episodes_csv", "run_artifacts"):
        assert client.get(reverse(name, args=[run.pk])).status_code == 404
    assert client.get(reverse("run_artifact_download", args=[run.pk, "trajectory.bin"])).status_code == 404


@pytest.mark.parametrize("keys", ["another", "malformed"])
def test_a_bundle_that_cannot_be_read_is_a_503_not_a_500(client, run, settings, keys):
    import pyrage

    # A site key that opens nothing (rotated away without keeping the old one), or a broken setting.
    other = str(pyrage.x25519.Identity.generate())
    settings.PODIUM_SITE_KEYS = other if keys == "another" else "AGE-SECRET-KEY-1" + "Q" * 58
    response = client.get(reverse("run_episodes_json", args=[run.pk]))
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "bundle_unavailable"
    assert client.get(reverse("run_artifacts", args=[run.pk])).status_code == 503
    download = client.get(reverse("run_artifact_download", args=[run.pk, "trajectory.bin"]))
    assert (download.status_code, download.json()["error"]["code"]) == (503, "bundle_unavailable")


# --- per-task intervals in a comparison (the stored episodes, re-scored) ------------------------


@pytest.fixture
def two_runs(demo_release, seal, owner, stranger) -> tuple[Run, Run]:
    runs = []
    # Two accounts, so two agents: an agent belongs to the account that first filed it.
    for user, skill, agent in ((owner, 0.9, "owner-agent"), (stranger, 0.5, "stranger-agent")):
        sealed = seal(skill=skill, seed=int(skill * 10), agent_name=agent)
        submission, _ = submission_create(user=user, uploaded_file=io.BytesIO(sealed))
        submission_verify(submission_id=submission.pk)
        runs.append(Run.objects.get(submission=submission))
    return runs[0], runs[1]


def test_each_tasks_final_gets_a_bootstrap_interval_from_the_stored_episodes(client, two_runs):
    a, b = two_runs
    data = client.get(reverse("run_compare_json"), {"a": a.pk, "b": b.pk}).json()
    finals = {r.release_task.task.slug: r.final for r in a.task_results.select_related("release_task__task")}
    tasks = {row["key"]: row for row in data["tasks"]}
    assert set(tasks) == set(finals)
    for slug, row in tasks.items():
        low, high = row["a"]["interval"]
        assert low <= finals[slug] + 1e-9 and finals[slug] - 1e-9 <= high, slug
        assert isinstance(row["intervals_overlap"], bool), slug
    # Skill 0.9 against 0.5 over 100 episodes: some task's intervals are apart.
    assert any(row["intervals_overlap"] is False for row in tasks.values())


def test_a_withheld_tasks_interval_goes_with_its_hidden_score(client, two_runs):
    a, b = two_runs
    slug = _withhold_first_anchor(a)
    data = client.get(reverse("run_compare_json"), {"a": a.pk, "b": b.pk}).json()
    row = next(row for row in data["tasks"] if row["key"] == slug)
    assert row["a"] == {"value": None, "withheld": True, "present": True, "interval": None}
    assert (row["difference"], row["intervals_overlap"]) == (None, None)
