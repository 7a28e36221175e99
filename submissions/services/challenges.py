"""Submission challenges: single-use nonces that bind a run to its submitter.

A harness asks for a challenge before a run (API with its key, or the upload
page). The challenge is bound to the account, the benchmark, the release (and
race) and the agent version, and expires. A podium-bundle/2 bundle names it in
its manifest and inside every signed document, so the evaluator's, judge's or
validator's signature covers it with the results: a sealed bundle or a signed
result replayed by another account, or a second time, is refused.

Codes, checked in this order so that a stranger learns nothing about another
account's challenge: ``challenge_unknown``, ``challenge_not_yours``,
``challenge_used``, ``challenge_expired``, ``challenge_mismatch``.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from leaderboard.disclosure import EVALUATOR_SIGNED
from leaderboard.models import Benchmark, Race, Release
from leaderboard.selectors.releases import unknown_release_message
from submissions.bundle.errors import BundleError
from submissions.bundle.schema import FORMAT_V2
from submissions.models import SignedResultDigest, Submission, SubmissionChallenge
from submissions.services.agents import agent_slug, agent_version_claim, agent_version_find
from submissions.services.races import may_file_race_runs, race_version_entered

# How long a challenge stays valid: long enough for a full evaluation run (hours, and a
# queue before it), short enough that a leaked token is soon worthless.
CHALLENGE_TTL = timedelta(hours=48)
# Unused challenges an account may hold at once: bounds the table per account.
CHALLENGE_OPEN_MAX = 100
# The longest text a challenge or race-entry request names, field by field: the columns the
# names are looked up in or become (Benchmark.slug, Release.version, the Agent.slug a name
# makes, AgentVersion.version). The API's serializers and the browser forms refuse longer values.
REQUEST_FIELD_MAX_CHARS = {"benchmark": 64, "release": 50, "agent_name": 100, "agent_version": 100}


def request_field_too_long(fields: dict[str, str]) -> str | None:
    """The refusal of the first of ``fields`` longer than REQUEST_FIELD_MAX_CHARS allows (the
    browser forms' rule; a value was cut to fit, so a 1,000-character name claimed its first
    100 characters as an agent), else None."""
    for name, value in fields.items():
        limit = REQUEST_FIELD_MAX_CHARS.get(name)
        if limit is not None and len(value) > limit:
            return f"{name}: at most {limit} characters, got {len(value)}."
    return None


@dataclass(frozen=True)
class ChallengeRequest:
    benchmark: str
    release: str
    agent_name: str
    agent_version: str
    race: int | None = None


def _release(request: ChallengeRequest) -> Release:
    release = (
        Release.objects.select_related("benchmark")
        .filter(benchmark__slug=request.benchmark, version=request.release, published=True)
        .first()
    )
    if release is None:
        # One message for unpublished and nonexistent: which versions exist is not told.
        raise BundleError(
            "unknown_release", unknown_release_message(request.benchmark[:64], request.release[:50], where="release")
        )
    return release


def _race_target(request: ChallengeRequest, release: Release, user: User) -> tuple[Race | None, Any]:
    """(race, agent version) of a race-run challenge: asked by a validator's account, for an entered version."""
    if not may_file_race_runs(user):
        raise BundleError(
            "not_a_validator",
            "race runs are filed by validators; this account acts for no validator (ask the site's staff)",
        )
    race = None
    if request.race is not None:
        # Race numbers are public (the race pages): looked up before the agent, so the answer
        # for a race that does not exist says nothing about the agent.
        race = Race.objects.filter(benchmark=release.benchmark, number=request.race).first()
        if race is None:
            raise BundleError("unknown_race", f"benchmark {release.benchmark.slug!r} has no race number {request.race}")
    agent_version = agent_version_find(name=request.agent_name, version=request.agent_version)
    # One refusal whether the version does not exist, is private, or exists and was not entered
    # by its owner (the verification's rule, race_version_entered): a validator's account learns
    # nothing of agents their owners did not put forward.
    if agent_version is None or not race_version_entered(agent_version, race=race, benchmark=release.benchmark):
        where = f"race {request.race}" if race is not None else "this benchmark's qualifying runs"
        raise BundleError(
            "not_entered",
            f"agent {agent_slug(request.agent_name)!r} version {request.agent_version[:100]!r} is not entered "
            f"in {where} by its owner (API: /api/v1/race-entries/)",
        )
    return race, agent_version


class TooManyChallenges(BundleError):
    """``too_many_challenges``, with the seconds until the account's first unused challenge
    expires and frees a slot (the API's Retry-After)."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__("too_many_challenges", message)
        self.retry_after = retry_after


@transaction.atomic
def challenge_issue(*, user: User, request: ChallengeRequest) -> SubmissionChallenge:
    """A fresh challenge for ``user``. Paper-gap: the agent becomes ``user``'s on first use
    (``agent_not_yours`` when it is another account's). Race: see ``_race_target``."""
    release = _release(request)
    if release.benchmark.scheme == Benchmark.Scheme.SCORECARD:
        # The upload's rule (submissions.bundle_benchmark_check): nothing to bind a card to.
        raise BundleError(
            "wrong_scheme",
            f"benchmark: {release.benchmark.slug!r} is a scorecard benchmark; its cards are played on the server "
            "over the API (POST /api/v1/scorecards/), so no bundle or challenge is made for it",
        )
    now = timezone.now()
    unused = SubmissionChallenge.objects.filter(user=user, used_at__isnull=True, expires_at__gt=now)
    open_count = unused.count()
    if open_count >= CHALLENGE_OPEN_MAX:
        # When a slot frees without using one: the oldest unused challenge's expiry (Retry-After).
        first_expiry = unused.order_by("expires_at").values_list("expires_at", flat=True).first() or now
        raise TooManyChallenges(
            f"this account holds {open_count} unused challenges; use or let some expire "
            f"(they last {CHALLENGE_TTL.total_seconds() / 3600:g} hours)",
            retry_after=max(1, math.ceil((first_expiry - now).total_seconds())),
        )
    race = None
    if request.race is not None and release.benchmark.scheme != Benchmark.Scheme.RACE:
        # Read past, a client that believed it asked for a race's challenge got another kind.
        raise BundleError(
            "unknown_race", f"race: benchmark {release.benchmark.slug!r} runs no races; leave race out (or null)"
        )
    if release.benchmark.scheme == Benchmark.Scheme.RACE:
        race, agent_version = _race_target(request, release, user)
    else:
        agent_version = agent_version_claim(
            name=request.agent_name, version=request.agent_version, account=user, where="agent_name"
        )
    return SubmissionChallenge.objects.create(
        token=secrets.token_urlsafe(32),
        user=user,
        benchmark=release.benchmark,
        release=release,
        race=race,
        agent_version=agent_version,
        expires_at=timezone.now() + CHALLENGE_TTL,
    )


def challenge_check(
    *, token: str, user: User, release: Release, race: Race | None, agent_name: str, agent_version: str
) -> SubmissionChallenge:
    """The challenge a bundle names, when it is ``user``'s, unused, unexpired and bound to
    what the bundle is for; else a rejection with its code. Reads only."""
    challenge = (
        SubmissionChallenge.objects.select_related("agent_version__agent", "release", "race")
        .filter(token=token)
        .first()
    )
    if challenge is None:
        raise BundleError(
            "challenge_unknown",
            "manifest.json: challenge is not one this server issued; ask for a challenge before the run "
            "(POST /api/v1/challenges/ or the upload page)",
        )
    if challenge.user_id != user.pk:
        raise BundleError(
            "challenge_not_yours",
            "manifest.json: challenge was issued to another account; a bundle is accepted only from the "
            "account that asked for its challenge",
        )
    if challenge.used_at is not None:
        raise BundleError(
            "challenge_used",
            "manifest.json: challenge was already used by an earlier submission; each run needs its own",
        )
    if challenge.expires_at <= timezone.now():
        raise BundleError(
            "challenge_expired",
            f"manifest.json: challenge expired at {challenge.expires_at:%Y-%m-%d %H:%M} UTC; ask for a new one",
        )
    bound = challenge.agent_version
    if (
        challenge.release_id != release.pk
        or challenge.race_id != (race.pk if race is not None else None)
        or bound.agent.slug != agent_slug(agent_name)
        or bound.version != agent_version[:100]
    ):
        where = f"{challenge.release}" + (f" {challenge.race}" if challenge.race_id else "")
        raise BundleError(
            "challenge_mismatch",
            f"manifest.json: challenge was issued for {bound} on {where}, not for this bundle's agent and release",
        )
    return challenge


def challenge_consume(*, challenge: SubmissionChallenge, submission: Submission) -> None:
    """Mark the challenge used by ``submission`` (inside the caller's transaction), exactly once."""
    updated = SubmissionChallenge.objects.filter(pk=challenge.pk, used_at__isnull=True).update(
        used_at=timezone.now(), submission=submission
    )
    if not updated:
        raise BundleError(
            "challenge_used",
            "manifest.json: challenge was already used by an earlier submission; each run needs its own",
        )


def results_duplicate_check(
    *,
    digest: str,
    submission: Submission,
    signed_unbound: bool,
    signed_digests: Sequence[str] = (),
    legacy_digest: str = "",
    signed_bound: bool = False,
) -> list[Submission]:
    """``duplicate_results`` when these results were already accepted for another submission:
    from another account, always; from the same account, when the bundle's signatures bind no
    run (``signed_unbound``: a podium-bundle/1 bundle with evaluator- or validator-signed results).
    Such a signature names no agent, release or benchmark, so the same signed results filed again
    under a second agent would rank it on results measured for the first (and a race receipt
    filed twice would count twice). A v2 signature covers its own challenge, so results the
    evaluator signed again for another run are that run's; unsigned results establish nothing.
    (A carried submission of a rescore shares its source's digest; the rescore writes it, this
    check never sees it.) ``signed_digests`` are a v1 bundle's signed result documents one by one:
    each is accepted once, whoever files it, so one signed file taken out of another run and
    filed as a partial run is refused too; they are stored here once the check passes.

    Provenance outranks priority: results another account filed first without binding them
    (unsigned, or signed by a podium-bundle/1 bundle) do not block ``signed_bound`` results, whose
    evaluator signatures cover this submission's own challenge and so show they were measured for
    this account's run. Such earlier submissions are returned (copies, for the caller to take off
    the boards once this run is recorded); every other earlier filing from another account wins.

    Called inside the transaction that records the verdict. On PostgreSQL it first takes a
    transaction-scoped advisory lock on the digest, so two uploads of the same results verified
    at the same moment serialize here: the second one's check runs after the first committed
    its digest and sees it (READ COMMITTED). SQLite serializes writers anyway.
    """
    if not digest:
        return []
    results_digests_lock(digests=[digest, *signed_digests])
    if (
        signed_digests
        and SignedResultDigest.objects.filter(digest__in=signed_digests).exclude(submission_id=submission.pk).exists()
    ):
        raise BundleError(
            "duplicate_results",
            "a signed result of this bundle was already accepted for another submission; a podium-bundle/1 "
            "signature binds no run, so each signed result is accepted once (a new run needs its own results)",
        )
    # ``legacy_digest``: the same results as digested before numbers were read as JCS reads them,
    # so a row stored then still matches a verbatim copy.
    earlier = Submission.objects.filter(results_digest__in={digest, legacy_digest} - {""}).exclude(pk=submission.pk)
    # One light read of who filed these results before (on almost every verification: nobody),
    # instead of loading the other accounts' rows with their runs and asking again whether any
    # row exists: the runs are loaded only when they decide something (``signed_bound``), which
    # is the one case the earlier filings may be copies rather than a refusal.
    filers = list(earlier.values_list("pk", "submitter_id"))
    others = [pk for pk, submitter_id in filers if submitter_id != submission.submitter_id]
    copies: list[Submission] = []
    if others and signed_bound:
        copies = [
            other
            for other in Submission.objects.filter(pk__in=others).select_related("run")
            if _unbound_paper_gap_copy(other)
        ]
    if len(copies) < len(others):
        raise BundleError(
            "duplicate_results",
            "these evaluator results were already submitted by another account; results are accepted once, "
            "from the account that ran them",
        )
    if signed_unbound and filers:
        raise BundleError(
            "duplicate_results",
            "these signed results were already accepted for an earlier submission of yours; a podium-bundle/1 "
            "signature binds no run, so signed results are accepted once (a new run needs its own results)",
        )
    signed_result_digests_record(submission=submission, digests=signed_digests)
    return copies


def _unbound_paper_gap_copy(submission: Submission) -> bool:
    """Whether ``submission``'s accepted paper-gap run rests on results no challenge of its own
    binds: not every result signed by a registered evaluator key in a podium-bundle/2 bundle."""
    run = getattr(submission, "run", None)
    if run is None:
        return False  # a race run's digest (or no run): the first filing stands
    if submission.bundle_format != FORMAT_V2:
        return True
    return run.task_results.exclude(signature=EVALUATOR_SIGNED).exists() or not run.task_results.exists()


def results_digests_lock(*, digests: Iterable[str]) -> None:
    """On PostgreSQL, the transaction-scoped advisory lock of each results digest, so whatever
    checks or stores these digests (verification, the backfill of older runs) serializes on them.
    Every lock in one statement (a bundle has a digest per signed file), taken in sorted order
    so two transactions sharing digests cannot deadlock. SQLite serializes writers anyway."""
    if connection.vendor != "postgresql":
        return
    keys = [f"results:{key}" for key in sorted(set(digests) - {""})]
    if not keys:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(key, 0)) "
            "FROM (SELECT key FROM unnest(%s::text[]) WITH ORDINALITY AS k(key, position) ORDER BY position) AS s",
            [keys],
        )


def signed_result_digests_record(*, submission: Submission, digests: Iterable[str]) -> list[SignedResultDigest]:
    """Store one ``SignedResultDigest`` per distinct digest of ``submission``'s signed result
    documents (inside the caller's transaction, under ``results_digests_lock``)."""
    return SignedResultDigest.objects.bulk_create(
        SignedResultDigest(submission=submission, digest=signed) for signed in sorted(set(digests))
    )
