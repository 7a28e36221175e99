"""What the scheme verifiers share: the release a scheme bundle names, the agent
version it plays as, and their rejection type.

Scorecards are no longer uploaded as bundles (a harness could write
``"solved": true`` everywhere): they are played on the server, see
submissions.services.cards and docs/schemes.md. The race verifier
(submissions.services.races) uses these helpers.
"""

from __future__ import annotations

from typing import Any

from django.utils.text import slugify

from leaderboard.models import Agent, AgentVersion, Release

COMPARE_TOLERANCE = 1e-6


class SchemeRejection(Exception):
    """A scheme bundle the server refuses: stable code, message naming what and where."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


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
