"""What a paper-gap run's stored bundle holds beyond the database: its evaluator episodes
and its artifacts (docs/bundle-format.md: ``artifacts/...``, opaque files such as
trajectories and logs, hashed and listed in manifest.json, never parsed).

The bundle is the submission's stored, never-deleted file; it is decrypted with the site
keys (as the confidence task does) only when someone asks for these downloads, and the
summary is cached by the bundle's SHA-256 (a stored bundle never changes).

Who sees what (leaderboard.disclosure, plus two rules of this module):
* an episode's ``metric`` is hidden wherever the task's measured value is (their mean is
  the measured value);
* an episode's ``seed``: a bundle carries none (seed 003), but an older evaluator's bundle
  may name its hidden seed; then it is shown to the run's submitter (it is in their bundle)
  and staff only, so nobody else can tune to the hidden seeds (null for everyone otherwise);
* artifacts are opaque files the submitter wrote and may print any value, the measured
  ones included: they are downloadable by the submitter and staff, and by anyone else
  who may see the run only when no task of the run has a measured value hidden from them
  (their names too: the submitter chose them, and a name can carry a number).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.cache import cache

from leaderboard.disclosure import Disclosure
from leaderboard.selectors.releases import release_spec
from leaderboard.selectors.visibility import viewer_is_staff, viewer_is_submitter
from leaderboard.users import Viewer
from scoring.errors import ScoringError
from scoring.gap import Episode
from scoring.task_interval import task_final_interval
from submissions import site_keys
from submissions.bundle.archive import iter_members
from submissions.bundle.envelope import decrypt_to_tempfile
from submissions.bundle.errors import BundleError
from submissions.services.stored_bundles import bundle_limits, bundle_local_path, open_stored_bundle
from submissions.site_keys import SiteKeyError

logger = logging.getLogger(__name__)

ARTIFACTS_PREFIX = "artifacts/"
# A bundle never changes once stored, so its summary may be kept long; a day bounds memory use.
SUMMARY_CACHE_SECONDS = 24 * 3600
ARTIFACTS_WITHHELD_REASON = (
    "artifacts are files the submitter wrote and may contain the measured value of a task whose anchor is "
    "withheld (measured / gap would reveal the anchor), so they are shown to the submitter and staff only"
)


class BundleUnavailable(Exception):
    """The stored bundle cannot be read now (storage down, or it no longer opens)."""


@dataclass(frozen=True)
class Artifact:
    name: str  # without the "artifacts/" prefix
    size: int
    sha256: str


@dataclass(frozen=True)
class BundleSummary:
    # task slug -> [(seed, metric, rates, aborted), ...] in the bundle's order
    episodes: dict[str, list[tuple[int | None, float | None, dict[str, float], bool]]]
    artifacts: list[Artifact]


def _summary_key(sha256: str) -> str:
    return f"podium:bundle-summary:v1:{sha256}"


def _read_summary(submission: Any) -> BundleSummary:
    try:
        with bundle_local_path(submission.file.name) as path:
            bundle = open_stored_bundle(path)
    except (BundleError, SiteKeyError, OSError, ValueError) as error:
        logger.warning("submission %s: stored bundle unreadable for downloads: %s", submission.pk, error)
        raise BundleUnavailable("the stored bundle cannot be read at the moment") from None
    episodes = {
        slug: [(e.seed, e.metric, dict(e.rates), bool(e.aborted)) for e in result.episodes]
        for slug, result in bundle.results.items()
    }
    artifacts = [
        Artifact(name=name[len(ARTIFACTS_PREFIX) :], size=bundle.member_sizes.get(name, 0), sha256=digest)
        for name, digest in sorted(bundle.manifest.members.items())
        if name.startswith(ARTIFACTS_PREFIX)
    ]
    return BundleSummary(episodes=episodes, artifacts=artifacts)


def bundle_summary(*, run: Any) -> BundleSummary:
    """The episodes and artifact list of ``run``'s bundle (cached by its SHA-256)."""
    key = _summary_key(run.submission.sha256)
    cached = cache.get(key)
    if isinstance(cached, BundleSummary):
        return cached
    summary = _read_summary(run.submission)
    cache.set(key, summary, SUMMARY_CACHE_SECONDS)
    return summary


def episode_records(
    *, run: Any, summary: BundleSummary, disclosure: Disclosure, user: Viewer | None
) -> list[dict[str, Any]]:
    """Every episode of the run's scored tasks as ``user`` may see it."""
    sees_seeds = viewer_is_staff(user) or viewer_is_submitter(run.submission.submitter_id, user)
    scored = [result.release_task.task.slug for result in run.task_results.all()]
    records = []
    for slug in scored:
        metric_hidden = slug in disclosure.measured_hidden
        for index, (seed, metric, rates, aborted) in enumerate(summary.episodes.get(slug, []), start=1):
            # Only an older evaluator's bundle names a seed (seed 003: bundles carry none).
            withheld = (["metric"] if metric_hidden else []) + ([] if sees_seeds or seed is None else ["seed"])
            records.append(
                {
                    "task": slug,
                    "episode": index,
                    "seed": seed if sees_seeds else None,
                    "metric": None if metric_hidden else metric,
                    "aborted": aborted,
                    "rates": rates,
                    "withheld": sorted(withheld),
                }
            )
    return records


def artifacts_allowed(*, run: Any, disclosure: Disclosure, user: Viewer | None) -> bool:
    """Whether ``user`` (who may see ``run``) may download its artifacts (module docstring)."""
    if viewer_is_staff(user) or viewer_is_submitter(run.submission.submitter_id, user):
        return True
    return not disclosure.measured_hidden


@contextmanager
def artifact_file(*, run: Any, artifact: Artifact) -> Iterator[Path]:
    """A temporary local copy of one artifact, checked against its manifest SHA-256.

    The bundle is decrypted and walked with the same limits and path checks as at upload
    (submissions.bundle.archive.iter_members); every member is written under a private
    temporary directory that is removed afterwards, whatever happens."""

    limits = bundle_limits()
    workdir = Path(tempfile.mkdtemp(prefix="podium-artifact-"))
    try:
        try:
            found = None
            with (
                bundle_local_path(run.submission.file.name) as path,
                decrypt_to_tempfile(path, site_keys.all_identities(), max_bytes=limits.max_bundle_bytes) as plain,
            ):
                for member in iter_members(plain, limits=limits, extract_to=workdir):
                    if member.name == ARTIFACTS_PREFIX + artifact.name:
                        found = member
                        break
        except (BundleError, SiteKeyError, OSError, ValueError) as error:
            logger.warning("run %s: artifact %r unreadable: %s", run.pk, artifact.name, error)
            raise BundleUnavailable("the stored bundle cannot be read at the moment") from None
        if found is None or found.sha256 != artifact.sha256:
            raise BundleUnavailable("the artifact in the stored bundle does not match its listing")
        yield workdir.joinpath(*found.name.split("/"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _interval_key(run: Any) -> str:
    # A published release's scoring inputs never change, and neither does a stored bundle.
    return f"podium:task-intervals:v1:{run.release_id}:{run.submission.sha256}"


def task_intervals(*, run: Any) -> dict[str, tuple[float, float]]:
    """Each scored task's 95% bootstrap interval of its final score, from the run's stored
    episodes (scoring.task_interval), cached with the bundle; {} when the bundle cannot be
    read now (the comparison then shows the tasks without an interval). Server-side only:
    callers show an interval only where they show the final score itself."""

    key = _interval_key(run)
    cached = cache.get(key)
    if isinstance(cached, dict):
        return cached
    try:
        summary = bundle_summary(run=run)
        spec = release_spec(run.release)
    except (BundleUnavailable, ScoringError):
        return {}
    intervals: dict[str, tuple[float, float]] = {}
    for result in run.task_results.all():
        slug = result.release_task.task.slug
        task_spec = spec.tasks.get(slug)
        episodes = [Episode(metric=m, rates=r, aborted=a) for _, m, r, a in summary.episodes.get(slug, [])]
        if task_spec is None or not episodes:
            continue
        try:
            interval = task_final_interval(task_spec, episodes, result.faithful)
        except ScoringError:
            continue
        if interval is not None:
            intervals[slug] = interval
    cache.set(key, intervals, SUMMARY_CACHE_SECONDS)
    return intervals
