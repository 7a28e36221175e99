"""Closing a submitted scorecard (seed 001) into a leaderboard card.

The bundle brings episode records and the card its harness claims. The server
closes the card itself with scoring.scorecard.summarize against the release's
hidden level set (ScorecardLevel rows: the optimal lengths are server data and
never read from a bundle), padded to the full set and with each episode held
to its step budget max(30, 3 x optimal). The claim is compared field by field
(scoring.compare, tolerance 1e-6): every field matches -> validated and the
card enters the board; any difference -> mismatch with the diff kept for the
submitter; an unusable card -> rejected with a stable code. Nothing is written
for a rejected or mismatched card except the verdict on the submission.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from django.db import transaction
from django.utils.text import slugify

from leaderboard.models import Agent, AgentVersion, Benchmark, Release
from leaderboard.services.scheme_standings import scorecard_standings_refresh
from scoring import compare as compare_scoring
from scoring import scorecard as scorecard_scoring
from scoring.errors import ScoringError
from submissions.models import Run, ScorecardRun, Submission
from submissions.quotas import QuotaExceeded, quota_consume

COMPARE_TOLERANCE = 1e-6


class SchemeRejection(Exception):
    """A scheme bundle the server refuses: stable code, message naming what and where."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ScorecardClaim:
    """What a scorecard bundle says, independent of how the archive spells it."""

    benchmark: str
    release: str
    agent_name: str
    agent_version: str
    episodes: Sequence[scorecard_scoring.ScorecardEpisode]
    claimed: Mapping[str, Any]


def scorecard_claim_from_bundle(bundle: Any) -> ScorecardClaim:
    """Read the scorecard members of an opened bundle (submissions.bundle.Bundle)."""
    return ScorecardClaim(
        benchmark=bundle.manifest.benchmark,
        release=bundle.manifest.release,
        agent_name=bundle.manifest.agent.name,
        agent_version=bundle.manifest.agent.version,
        episodes=bundle.scorecard.scoring_episodes(),
        claimed=dict(bundle.scorecard.claimed),
    )


def scheme_release(*, benchmark_slug: str, version: str, scheme: str) -> Release:
    """The release a scheme bundle names, or a rejection saying what was expected."""
    release = (
        Release.objects.select_related("benchmark").filter(benchmark__slug=benchmark_slug, version=version).first()
    )
    if release is None or not release.published:
        # Unpublished and absent get the same answer: it must not tell which versions exist.
        from leaderboard.selectors.releases import unknown_release_message

        raise SchemeRejection("unknown_release", unknown_release_message(benchmark_slug, version))
    if release.benchmark.scheme != scheme:
        raise SchemeRejection(
            "wrong_scheme",
            f"manifest: benchmark {benchmark_slug!r} is a {release.benchmark.scheme} benchmark; "
            f"this bundle is a {scheme} bundle",
        )
    return release


def agent_version_for(*, name: str, version: str, owner: Any | None) -> AgentVersion:
    """The agent version a bundle names, created on first use.

    With ``owner`` given, an agent registered by another account is refused:
    nobody can post cards under somebody else's entrant."""
    slug = slugify(name)[:100]
    if not slug or not version:
        raise SchemeRejection(
            "agent_invalid", f"manifest: agent name {name!r} and version {version!r} must both be non-empty"
        )
    agent, _ = Agent.objects.get_or_create(slug=slug, defaults={"name": name[:200], "owner": owner})
    if owner is not None and agent.owner_id is not None and agent.owner_id != owner.pk:
        raise SchemeRejection(
            "agent_not_yours", f"manifest: agent {agent.slug!r} belongs to another account; choose another agent name"
        )
    agent_version, _ = AgentVersion.objects.get_or_create(agent=agent, version=version[:100])
    return agent_version


def hidden_level_set(release: Release) -> tuple[dict[str, int], int]:
    """The release's hidden set: {level_id: optimal_len} and the size every card is padded to."""
    optimal = dict(release.scorecard_levels.values_list("level_id", "optimal_len"))
    size = release.episode_set_size or len(optimal)
    if not optimal or size < len(optimal):
        raise SchemeRejection(
            "release_not_ready",
            f"release {release}: its hidden episode set is not configured on this server; "
            "tell the site's maintainers (nothing was counted)",
        )
    return optimal, size


def _check_episodes(claim: ScorecardClaim, optimal: Mapping[str, int], size: int) -> None:
    """The errors a submitter can fix, with their own codes (scoring would catch them too)."""
    if len(claim.episodes) > size:
        raise SchemeRejection(
            "scorecard_too_many_episodes",
            f"scorecard: {len(claim.episodes)} episodes, but the hidden set of release {claim.release!r} "
            f"has only {size}; a card holds at most one episode per hidden level",
        )
    seen: set[str] = set()
    for index, episode in enumerate(claim.episodes):
        if episode.level_id not in optimal:
            raise SchemeRejection(
                "scorecard_unknown_level",
                f"scorecard episode {index}: level_id {episode.level_id!r} is not a level of the hidden set "
                f"of release {claim.release!r}",
            )
        if episode.level_id in seen:
            raise SchemeRejection(
                "scorecard_duplicate_level",
                f"scorecard episode {index}: level {episode.level_id!r} was already played; each level counts once",
            )
        seen.add(episode.level_id)
        if episode.solved and isinstance(episode.steps, int) and episode.steps < optimal[episode.level_id]:
            # Said without the optimal length: the hidden set's lengths never leave the server.
            raise SchemeRejection(
                "scorecard_invalid",
                f"scorecard episode {index}: level {episode.level_id!r} is marked solved in {episode.steps} steps, "
                "fewer than its shortest solution; the episode record is inconsistent",
            )


def _diff_rows(diffs: Sequence[compare_scoring.FieldDiff]) -> list[dict[str, Any]]:
    return [asdict(diff) for diff in diffs]


def _finish(submission: Submission, *, verdict: str, code: str = "", message: str = "", diff: Any = None) -> None:
    submission.verdict = verdict
    submission.error_code = code
    submission.error_message = message
    submission.diff = diff if diff is not None else []
    submission.save(update_fields=["verdict", "error_code", "error_message", "diff", "release", "kind", "updated_at"])


@transaction.atomic
def scorecard_submission_verify(*, submission: Submission, bundle: Any) -> None:
    """Close the bundle's scorecard and record the verdict (idempotent).

    Sets submission.verdict/error_code/error_message/diff; on validated creates
    the ScorecardRun (get_or_create on the submission) and refreshes the board.
    The daily limit (per API key, else per user, per benchmark and UTC day)
    is counted here, where the benchmark is first known, via submissions.quotas.
    """
    submission.kind = Submission.Kind.SCORECARD
    existing = ScorecardRun.objects.filter(submission=submission).select_related("release").first()
    if existing is not None:
        # Already closed: re-running verification changes nothing and counts nothing.
        submission.release = existing.release
        _finish(submission, verdict=Submission.Verdict.VALIDATED)
        return
    try:
        claim = scorecard_claim_from_bundle(bundle)
        release = scheme_release(
            benchmark_slug=claim.benchmark, version=claim.release, scheme=Benchmark.Scheme.SCORECARD
        )
        submission.release = release
        optimal, size = hidden_level_set(release)
        _check_episodes(claim, optimal, size)
        card = scorecard_scoring.summarize(claim.episodes, size, optimal)
    except SchemeRejection as exc:
        _finish(submission, verdict=Submission.Verdict.REJECTED, code=exc.code, message=exc.message)
        return
    except ScoringError as exc:
        _finish(submission, verdict=Submission.Verdict.REJECTED, code="scorecard_invalid", message=str(exc))
        return
    diffs = compare_scoring.compare_claims(claim.claimed, card.to_dict(), tol=COMPARE_TOLERANCE)
    if compare_scoring.has_mismatch(diffs):
        wrong = ", ".join(diff.path for diff in diffs if diff.status != compare_scoring.MATCH)
        _finish(
            submission,
            verdict=Submission.Verdict.MISMATCH,
            code="scorecard_mismatch",
            message=f"the claimed scorecard differs from the server's recomputation in: {wrong}",
            diff=_diff_rows(diffs),
        )
        return
    try:
        agent_version = agent_version_for(
            name=claim.agent_name, version=claim.agent_version, owner=submission.submitter
        )
        quota_consume(
            user=submission.submitter,
            api_key=submission.api_key,
            scope=f"scorecard:{release.benchmark.slug}",
            limit=release.benchmark.daily_submission_limit,
        )
    except SchemeRejection as exc:
        _finish(submission, verdict=Submission.Verdict.REJECTED, code=exc.code, message=exc.message)
        return
    except QuotaExceeded as exc:
        _finish(submission, verdict=Submission.Verdict.REJECTED, code="daily_limit_exceeded", message=exc.message)
        return
    ScorecardRun.objects.get_or_create(
        submission=submission,
        defaults={
            "release": release,
            "agent_version": agent_version,
            "level": Run.Level.VALIDATED,
            **card.to_dict(),
        },
    )
    _finish(submission, verdict=Submission.Verdict.VALIDATED, diff=_diff_rows(diffs))
    scorecard_standings_refresh(release=release)
