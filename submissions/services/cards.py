"""Playing scorecards on the server (seed 001: "Nothing is self-reported").

Longer than 500 lines on purpose: open, reset, act, close and expire share one lock order
(card, then episode) and one playability check; apart, that order could drift.

A player opens a card on a scorecard benchmark's current published release,
then plays levels of its hidden set one at a time over the API: ``reset``
starts (or restarts) a level and sends its layout, each ``action`` applies one
move with scoring.sokoban. The server counts every action, detects corner
deadlocks, enforces each level's step budget max(30, 3 x optimal), records
every request as a CardMove, and on close pads the card to the full hidden set
and computes the five metrics with scoring.scorecard.summarize from its own
episode rows. The closed card becomes a ScorecardRun and the board is refreshed.

Invariants:

* every service that touches a card's play locks the Card row first
  (``select_for_update``), so one card's requests are serialised and two cards
  never wait for each other; nothing here takes a global lock;
* an account's request locks a card row only if the card is its own (the owner is in the
  locking statement's WHERE clause), so no other account can hold up a card's play: another
  account's request locks nothing and gets the 404 of a card that does not exist (staff
  reading a card, and the idle sweep, lock any card);
* a finished episode (solved, deadlocked, out of budget, abandoned) never changes;
* the only way a card is closed is :func:`card_close` (the player, or the idle
  sweep and lazy expiry with ``closed_by=expiry``), so both close alike;
* a level's layout leaves this module only in the state of the episode being
  played, to the card's owner, while the card is open.

Restart semantics (docs/api.md): ``reset`` on an unfinished episode puts the
layout back to its start but keeps the step count: a restart is free, the
budget is not refunded, and every action sent still counts. A finished
episode cannot be reset. Opening another level ends an unfinished episode as
unsolved (``abandoned``): one level at a time.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, wraps
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard.api_query import MAX_ID
from leaderboard.models import Benchmark, Release, Run, ScorecardLevel, ScorecardRun
from leaderboard.selectors.visibility import benchmarks_visible, viewer_is_staff
from leaderboard.services.scorecard_standings import scorecard_standing_update
from scoring import scorecard as scorecard_scoring
from scoring.sokoban import ACTIONS, Level, State, apply, is_deadlocked, is_solved, parse_xsb, render_xsb
from submissions import rows
from submissions.bundle.errors import BundleError
from submissions.models import ApiKey, Card, CardEpisode, CardMove
from submissions.quotas import QuotaExceeded, quota_consume, quota_scope
from submissions.services.agents import agent_version_claim

__all__ = [
    "CardError",
    "PlayRead",
    "card_close",
    "card_episode_act",
    "card_episode_act_unlocked",
    "card_episode_play",
    "card_episode_reset",
    "card_expires_at",
    "card_for_player",
    "card_open",
    "card_play_read",
    "cards_close_idle",
    "episode_json",
    "episode_view",
]

# last_activity_at is written at most this often; an idle card may so expire up to this
# much earlier than PODIUM_CARD_IDLE_SECONDS after its very last request.
ACTIVITY_RESOLUTION_SECONDS = 5
_P = ParamSpec("_P")
_R = TypeVar("_R")

# Restarts per episode: each is recorded, and a restart costs no step, so without a cap one
# episode could grow its move log without bound.
MAX_RESTARTS = 50


class CardError(Exception):
    """A play request the server refuses: HTTP status, stable code, message."""

    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


@lru_cache(maxsize=1024)
def _parsed(xsb: str) -> Level:
    # Levels are parsed once per process: they were validated at sync and never change.
    return parse_xsb(xsb)


def _idle_until(last_activity_at: dt.datetime) -> dt.datetime:
    """The one rule of idle expiry: a card expires PODIUM_CARD_IDLE_SECONDS after its last activity."""
    return last_activity_at + dt.timedelta(seconds=settings.PODIUM_CARD_IDLE_SECONDS)


def card_expires_at(card: Card) -> dt.datetime:
    return _idle_until(card.last_activity_at)


def _is_expired(card: Card, now: dt.datetime) -> bool:
    return card.status == Card.Status.OPEN and card_expires_at(card) <= now


# ------------------------------------------------------------------ opening


def _current_release(benchmark_slug: str) -> Release:
    # Through visibility: a benchmark with no published release answers as one that does not
    # exist (it answered wrong_scheme or release_not_ready, confirming it and its scheme).
    benchmark = benchmarks_visible(staff=False).filter(slug=benchmark_slug).first()
    if benchmark is None:
        raise CardError(404, "benchmark_unknown", f"benchmark: no benchmark with slug {benchmark_slug[:64]!r}.")
    if benchmark.scheme != Benchmark.Scheme.SCORECARD:
        raise CardError(
            400,
            "wrong_scheme",
            f"benchmark: {benchmark.slug!r} is a {benchmark.scheme} benchmark; "
            "cards are played on scorecard benchmarks.",
        )
    release = (
        benchmark.releases.select_related("benchmark").filter(published=True).order_by("-published_at", "-id").first()
    )
    if release is None:
        raise CardError(409, "release_not_ready", f"benchmark {benchmark.slug!r} has no published release yet.")
    _check_levels_hidden(release)
    count = release.scorecard_levels.count()
    if not count or (release.episode_set_size or 0) != count:
        raise CardError(
            409,
            "release_not_ready",
            f"release {release}: its hidden level set is not configured on this server; tell the site's maintainers.",
        )
    return release


def _check_levels_hidden(release: Release) -> None:
    """No card plays on a release whose hidden levels the operator revealed: its replay pages
    then show every closed card's board and actions to anyone, tested solutions a card still
    open could copy (and a card stays open as long as it plays within the idle time). Closing
    stays allowed: what was played before the reveal is the card."""
    if release.reveal_hidden_levels:
        raise CardError(
            409,
            "levels_revealed",
            f"release {release.version}: its hidden levels were revealed; no card plays on it any more.",
        )


def _consume_daily_card(*, user: User, api_key: ApiKey | None, benchmark: Benchmark) -> None:
    """Opening a card is the scorecard benchmark's daily submission (seed 001: "rate
    limited per key per day"), counted like an upload by submissions.quotas."""
    try:
        quota_consume(user=user, api_key=api_key, scope=quota_scope(benchmark), limit=benchmark.daily_submission_limit)
    except QuotaExceeded as exc:
        raise CardError(429, "daily_limit_reached", exc.message, {"Retry-After": str(exc.retry_after)}) from None


def card_open(*, user: User, api_key: ApiKey | None, benchmark_slug: str, agent_name: str, agent_version: str) -> Card:
    """Open a card for ``user`` as agent ``agent_name`` ``agent_version`` (created on
    first use; another account's agent is refused). Counts against the daily limit."""
    release = _current_release(benchmark_slug)
    with transaction.atomic():
        try:
            # The one agent-ownership rule of every scheme (submissions.services.agents).
            version = agent_version_claim(name=agent_name, version=agent_version, account=user, where="agent")
        except BundleError as exc:
            status = 403 if exc.code == "agent_not_yours" else 400
            raise CardError(status, exc.code, exc.message) from None
        _consume_daily_card(user=user, api_key=api_key, benchmark=release.benchmark)
        now = timezone.now()
        return Card.objects.create(
            release=release,
            agent_version=version,
            owner=user,
            api_key=api_key,
            opened_at=now,
            last_activity_at=now,
        )


# ------------------------------------------------------------------ access


def _not_found(card_id: int) -> CardError:
    """The one answer for a card that does not exist and for another account's card: the same
    code and message, so a refusal never tells whether the card exists."""
    return CardError(404, "card_not_found", f"No scorecard {card_id}.")


def _locked_card(card_id: int) -> Card:
    """Any account's card, its row locked: only for staff reading a card, and for closing a
    card its owner's request found idle (never for an arbitrary account's request)."""
    card = Card.objects.select_for_update().filter(pk=card_id).first()
    if card is None:
        raise _not_found(card_id)
    return card


def _owned_card_locked(card_id: int, user: User) -> Card:
    """``user``'s own card, its row locked; the refusal of anyone else's.

    The owner is in the locking statement's WHERE: PostgreSQL filters another account's row
    out before locking it, so a request for someone else's card locks nothing. Locking by id
    and checking the owner afterwards let any signed-in account hold a lock on a victim's card,
    delaying their play, with requests that all ended in a 404."""
    card = Card.objects.select_for_update().filter(pk=card_id, owner=user).first()
    if card is None:
        raise _not_yours_refusal(card_id, user)
    return card


def _not_yours_refusal(card_id: int, user: User) -> CardError:
    """Why ``user`` may not play card ``card_id``, which is not theirs (or does not exist):
    another account learns nothing (404, like a card that does not exist); staff, who may read
    every card, are told it is another account's (403), from a read that takes no lock."""
    if viewer_is_staff(user) and Card.objects.filter(pk=card_id).exists():
        return CardError(403, "card_not_yours", f"Scorecard {card_id} belongs to another account; only it may play.")
    return _not_found(card_id)


def card_for_player(*, card_id: int, user: User) -> Card:
    """The card for GET: its owner, or staff. Closes it first when it has idled out."""
    with transaction.atomic():
        card = _locked_card(card_id) if viewer_is_staff(user) else _owned_card_locked(card_id, user)
        _close_if_idle(card, timezone.now())
    return card


def _closed_refusal(card_id: int, closed_by: str) -> CardError:
    how = "after its idle time" if closed_by == Card.ClosedBy.EXPIRY else "by its player"
    return CardError(409, "card_closed", f"Scorecard {card_id} was closed {how}; open a new card to play again.")


class _CardIdle(CardError):
    """A play request found its open card idle past its time: :func:`_card_request` closes the
    card in a transaction of its own, then answers ``card_closed``."""

    def __init__(self, card_id: int) -> None:
        refusal = _closed_refusal(card_id, Card.ClosedBy.EXPIRY)
        super().__init__(refusal.status, refusal.code, refusal.message)
        self.card_id = card_id


def _close_if_idle(card: Card, now: dt.datetime) -> bool:
    """Close a locked card that has idled out (the one expiry: the sweep's, a list's and a
    request's); True when it closed it."""
    if not _is_expired(card, now):
        return False
    _close(card, closed_by=Card.ClosedBy.EXPIRY, now=card_expires_at(card))
    return True


def _card_request(service: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run a play service (reset, actions, close) in one transaction; when it finds its card
    idled out, close the card in a transaction of its own before answering ``card_closed``.

    Closing inside the refused request's transaction would be rolled back with the refusal:
    the card would stay open, off the board, until the sweep, and a player's ``/close`` on it
    would answer ``card_closed`` for a card still open. (Called inside a caller's own
    transaction, both are savepoints of it.)"""

    @wraps(service)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            with transaction.atomic():
                return service(*args, **kwargs)
        except _CardIdle as idle:
            with transaction.atomic():
                # Re-checked under the lock: the sweep or another request may have closed it.
                _close_if_idle(_locked_card(idle.card_id), timezone.now())
            raise

    return run


def _check_playable(card: Card, now: dt.datetime, *, closing: bool = False) -> None:
    """Refuse play on a locked card of the requesting account (locked with its owner in the
    WHERE clause: :func:`_owned_card_locked`, :func:`_locked_episode`) that cannot be played
    now: the one rule for reset, actions and close (``closing``: a close, which a revealed
    release still allows). A card idled out is refused with :class:`_CardIdle` (its service's
    :func:`_card_request` closes it)."""
    if _is_expired(card, now):
        raise _CardIdle(card.pk)
    if card.status != Card.Status.OPEN:
        raise _closed_refusal(card.pk, card.closed_by)
    if not closing:
        _check_levels_hidden(card.release)


def _open_card_for_play(card_id: int, user: User, now: dt.datetime) -> Card:
    """``user``'s card, locked, if it can be played now (only its owner plays a card)."""
    card = _owned_card_locked(card_id, user)
    _check_playable(card, now)
    return card


# ------------------------------------------------------------------ playing


@dataclass(frozen=True)
class EpisodeView:
    """What reset and action answer (docs/api.md)."""

    level_id: str
    level: Level
    state: State
    steps: int
    max_steps: int
    solved: bool
    deadlocked: bool
    done: bool
    restarts: int
    last: dict[str, str] | None


def episode_view(episode: CardEpisode, last: dict[str, str] | None = None) -> EpisodeView:
    level = _parsed(episode.level.xsb)
    return EpisodeView(
        level_id=episode.level.level_id,
        level=level,
        state=State(episode.player, tuple(episode.crates)),
        steps=episode.steps,
        max_steps=scorecard_scoring.step_budget(episode.level.optimal_len),
        solved=episode.solved,
        deadlocked=episode.deadlocked,
        done=episode.done,
        restarts=episode.restarts,
        last=last,
    )


def episode_json(view: EpisodeView) -> dict[str, Any]:
    level, state = view.level, view.state
    body: dict[str, Any] = {
        "level": view.level_id,
        "state": {
            "xsb": render_xsb(level, state),
            "player": list(level.position(state.player)),
            "crates": [list(level.position(cell)) for cell in state.crates],
            "goals": [list(level.position(cell)) for cell in sorted(level.goals)],
            "width": level.width,
            "height": level.height,
        },
        "steps": view.steps,
        "max_steps": view.max_steps,
        "solved": view.solved,
        "deadlocked": view.deadlocked,
        "done": view.done,
        "restarts": view.restarts,
    }
    if view.last is not None:
        body["last"] = view.last
    return body


def _level_of(card: Card, level_id: str) -> ScorecardLevel:
    level = ScorecardLevel.objects.filter(release_id=card.release_id, level_id=level_id).first()
    if level is None:
        raise CardError(404, "level_unknown", f"level: {level_id[:100]!r} is not a level of this card's hidden set.")
    return level


def _move_seq(*, steps: int, restarts: int) -> int:
    """The log number of the entry just applied to an episode now at ``steps`` and ``restarts``
    (every action adds a step and every restart a restart; the first reset is entry 1)."""
    return steps + restarts + 1


def _move(episode: CardEpisode, *, action: str, result: str, now: dt.datetime) -> CardMove:
    """The log row of the request just applied to ``episode``, numbered by :func:`_move_seq`
    with no count query; the (episode, seq) constraint would catch a slip."""
    return CardMove(
        episode=episode,
        seq=_move_seq(steps=episode.steps, restarts=episode.restarts),
        step=episode.steps,
        action=action,
        result=result,
        solved=episode.solved,
        deadlocked=episode.deadlocked,
        at=now,
    )


def _touch(card: Card, now: dt.datetime) -> None:
    """Record activity for the idle expiry, at most once per ACTIVITY_RESOLUTION_SECONDS:
    the expiry is measured in minutes, so most requests skip the write. (An action does
    the same inside its one write statement, :func:`_record_play`.)"""
    if (now - card.last_activity_at).total_seconds() >= ACTIVITY_RESOLUTION_SECONDS:
        card.last_activity_at = now
        card.save(update_fields=["last_activity_at"])


def _end_unfinished(card: Card, *, keep: int | None, now: dt.datetime) -> None:
    """One level at a time: an unfinished episode other than ``keep`` ends unsolved."""
    others = CardEpisode.objects.filter(card=card, done=False)
    if keep is not None:
        others = others.exclude(level_id=keep)
    others.update(done=True, abandoned=True, ended_at=now)


def _unfinished_locked(card: Card, *, level: ScorecardLevel | None = None) -> CardEpisode | None:
    """Lock (after the card, as everywhere here) the card's unfinished episodes, which a reset or
    a close ends, and the episode on ``level`` whatever its state; that episode, or None.

    The caller reads its clock after this: an action through the unlocked fast lane takes no
    card lock, so one that wrote an episode while this waited for its row is logged at a time
    read before; read earlier, the episode's ``ended_at`` came before its last move's time."""
    wanted = Q(done=False) if level is None else Q(done=False) | Q(level=level)
    rows = CardEpisode.objects.filter(wanted, card=card).select_related("level").select_for_update(of=("self",))
    return next((row for row in rows.order_by("pk") if level is not None and row.level_id == level.pk), None)


@_card_request
def card_episode_reset(*, card_id: int, user: User, level_id: str) -> EpisodeView:
    """Start ``level_id`` (or restart it while unfinished) and return its layout."""
    card = _open_card_for_play(card_id, user, timezone.now())
    level_row = _level_of(card, level_id)
    level = _parsed(level_row.xsb)
    # Locked after the card: an action through the unlocked fast lane takes no card lock, so
    # without this the restart could write over a state that action just changed (its log
    # number then collided with the action's: a 500). The reset's times are read once locked.
    episode = _unfinished_locked(card, level=level_row)
    now = timezone.now()
    if episode is not None and episode.done:
        raise CardError(409, "episode_done", f"level {level_id!r} is finished on this card; it cannot be played again.")
    _end_unfinished(card, keep=level_row.pk, now=now)
    if episode is None:
        episode = CardEpisode.objects.create(
            card=card, level=level_row, player=level.start.player, crates=list(level.start.crates), started_at=now
        )
    else:
        if episode.restarts >= MAX_RESTARTS:
            raise CardError(
                409,
                "restart_limit",
                f"level {level_id!r} was restarted {MAX_RESTARTS} times; play on or close the card.",
            )
        episode.player, episode.crates = level.start.player, list(level.start.crates)
        episode.restarts += 1
        episode.save(update_fields=["player", "crates", "restarts"])
    _move(episode, action="reset", result=CardMove.Result.RESET, now=now).save()
    _touch(card, now)
    return episode_view(episode)


@_card_request
def card_episode_get(*, card_id: int, user: User, level_id: str) -> EpisodeView:
    """The episode of ``level_id`` as it stands, for the card's player while the card can be
    played: what the last reset or action answered, so a client that lost that answer (a dropped
    connection) resumes without a reset, which would cost a restart and put the level back to
    its start. Reading is not activity: it neither touches the card nor keeps it from idling out."""
    card = _open_card_for_play(card_id, user, timezone.now())
    return episode_view(_episode_of(card, level_id))


def card_episode_act(*, card_id: int, user: User, level_id: str, action: Any) -> EpisodeView:
    """Apply one move to the level's episode; it ends when solved, deadlocked (corner
    test) or when its steps reach the budget. (The API's usual action is first tried by
    :func:`card_episode_act_unlocked`; this path decides everything else.)"""
    return card_episode_play(card_id=card_id, user=user, level_id=level_id, actions=[action])


@dataclass(frozen=True)
class _Step:
    """One action applied to an episode: its new state and what the server records."""

    state: State
    outcome: str
    steps: int
    solved: bool
    deadlocked: bool
    out_of_budget: bool
    done: bool


def _step(level: Level, budget: int, state: State, steps: int, action: str) -> _Step:
    """The one rule of an action (both play paths apply it): the move, then solved, the
    corner deadlock and the step budget, in that order of precedence."""
    moved = apply(level, state, action)
    solved = is_solved(level, moved.state)
    # Seed 001: the cheap corner test only (an exact search would hold the episode for seconds).
    deadlocked = not solved and is_deadlocked(level, moved.state)
    out_of_budget = not solved and not deadlocked and steps + 1 >= budget
    return _Step(
        state=moved.state,
        outcome=moved.outcome,
        steps=steps + 1,
        solved=solved,
        deadlocked=deadlocked,
        out_of_budget=out_of_budget,
        done=solved or deadlocked or out_of_budget,
    )


# ------------------------------------------------------------------ the unlocked action
#
# The play loop's request is one action, sent with an API key, on the episode its card is
# playing. It needs no lock: the episode row holds the live state, so the action reads it
# (with the key, in one statement and no transaction), applies the move, and writes the
# result with one compare-and-set statement that updates the episode only if it is still
# exactly the state that was read (same steps and restarts, not done). Whatever changes an
# episode -- another action, a restart, another level's reset ending it, a close or the idle
# sweep ending it -- changes one of those columns under the episode's row lock, so a write
# made from a stale read matches no row and writes nothing; the request then takes the
# locked path (card_episode_act), which reads afresh under the card's lock. So each applied
# action still extends exactly the state the previous one left (tests/schemes/
# test_play_fast_lane.py races eight clients on two cards through the API), and the write
# never waits for a lock out of the card-then-episode order: its activity stamp skips a
# card another request holds.


@dataclass(frozen=True)
class PlayRead:
    """What one statement reads for an unlocked action: the key a request names (with its
    user's state, for api_key_valid) and the episode that key's owner plays on the level."""

    key_id: int
    key_hash: str
    key_revoked: bool
    key_last_used_at: dt.datetime | None
    user_active: bool
    card_id: int
    level_id: str
    episode_id: int
    steps: int
    restarts: int
    done: bool
    player: int
    crates: list[int]
    card_open: bool
    last_activity_at: dt.datetime
    levels_revealed: bool
    xsb: str
    optimal_len: int


_CRATES_FIELD = rows.field(CardEpisode, "crates")


@lru_cache(maxsize=4)
def _play_read_sql(vendor: str) -> str:
    """The statement of :func:`card_play_read` for a database ``vendor`` (built once)."""
    column = rows.column
    user_model = get_user_model()
    fields = (
        [column("k", ApiKey, name) for name in ("id", "key_hash", "revoked_at", "last_used_at")]
        + [column("u", user_model, "is_active")]
        + [column("e", CardEpisode, name) for name in ("id", "steps", "restarts", "done", "player", "crates")]
        + [column("c", Card, name) for name in ("status", "last_activity_at")]
        + [column("r", Release, "reveal_hidden_levels")]
        + [column("l", ScorecardLevel, name) for name in ("xsb", "optimal_len")]
    )
    return (
        f"SELECT {', '.join(fields)} FROM {rows.table(ApiKey, 'k')} "  # noqa: S608
        f"JOIN {rows.table(user_model, 'u')} ON {column('u', user_model, 'id')} = {column('k', ApiKey, 'user')} "
        f"JOIN {rows.table(Card, 'c')} ON {column('c', Card, 'owner')} = {column('k', ApiKey, 'user')} "
        f"JOIN {rows.table(Release, 'r')} ON {column('r', Release, 'id')} = {column('c', Card, 'release')} "
        f"JOIN {rows.table(CardEpisode, 'e')} ON {column('e', CardEpisode, 'card')} = {column('c', Card, 'id')} "
        f"JOIN {rows.table(ScorecardLevel, 'l')} "
        f"ON {column('l', ScorecardLevel, 'id')} = {column('e', CardEpisode, 'level')} "
        f"WHERE {column('k', ApiKey, 'prefix')} = %s AND {column('c', Card, 'id')} = %s "
        f"AND {column('l', ScorecardLevel, 'level_id')} = %s "
        f"AND {column('l', ScorecardLevel, 'release')} = {column('c', Card, 'release')}"
    )


def card_play_read(*, key_prefix: str, card_id: int, level_id: str) -> PlayRead | None:
    """The key with ``key_prefix`` and the episode its owner plays on ``level_id`` of card
    ``card_id``, in one statement (prepared on PostgreSQL); None when there is none -- no such
    key, not its owner's card, no started episode -- or off PostgreSQL (the locked path decides)."""
    db = connections[DEFAULT_DB_ALIAS]  # one lookup; the ``connection`` proxy resolves on every use
    if db.vendor != "postgresql" or card_id > MAX_ID:
        # Beyond a bigint the prepared statement's parameter is a DataError: the locked path's
        # ORM lookup answers it as the card that does not exist.
        return None
    with rows.cursor() as cursor:
        cursor.execute(_play_read_sql(db.vendor), [key_prefix, card_id, level_id])
        row = cursor.fetchone()
    if row is None:
        return None
    key_id, key_hash, revoked_at, last_used_at, active, episode_id, steps, restarts, done, player, crates = row[:11]
    status, last_activity_at, revealed, xsb, optimal_len = row[11:]
    return PlayRead(
        key_id=key_id,
        key_hash=key_hash,
        key_revoked=revoked_at is not None,
        key_last_used_at=last_used_at,
        user_active=active,
        card_id=card_id,
        level_id=level_id,
        episode_id=episode_id,
        steps=steps,
        restarts=restarts,
        done=done,
        player=player,
        # The column as the ORM would read it (Django's PostgreSQL backend hands JSON over as text).
        crates=_CRATES_FIELD.from_db_value(crates, None, db),  # type: ignore[attr-defined]
        card_open=status == Card.Status.OPEN,
        last_activity_at=last_activity_at,
        levels_revealed=revealed,
        xsb=xsb,
        optimal_len=optimal_len,
    )


@lru_cache(maxsize=4)
def _play_write_sql(vendor: str) -> str:
    """The optimistic write: the episode compare-and-set, its move logged only if it took,
    and the card's activity stamped (at most once per ACTIVITY_RESOLUTION_SECONDS) unless
    another request holds the card; answers how many episodes it updated (0 or 1)."""
    quote = connection.ops.quote_name
    episodes, moves, cards = (quote(model._meta.db_table) for model in (CardEpisode, CardMove, Card))

    def col(model: type[Any], name: str) -> str:
        return quote(rows.field(model, name).column)

    assignments = ", ".join(f"{col(CardEpisode, name)} = %s" for name in _PLAYED_FIELDS)
    move_columns = ", ".join(
        col(CardMove, name) for name in ("episode", "seq", "step", "action", "result", "solved", "deadlocked", "at")
    )
    card_id, activity = col(Card, "id"), col(Card, "last_activity_at")
    played = (
        f"UPDATE {episodes} SET {assignments} WHERE {col(CardEpisode, 'id')} = %s "  # noqa: S608
        f"AND {col(CardEpisode, 'steps')} = %s AND {col(CardEpisode, 'restarts')} = %s "
        f"AND NOT {col(CardEpisode, 'done')} RETURNING {col(CardEpisode, 'id')}"
    )
    logged = f"INSERT INTO {moves} ({move_columns}) SELECT played.id, %s, %s, %s, %s, %s, %s, %s FROM played"  # noqa: S608
    touched = (
        f"UPDATE {cards} SET {activity} = %s WHERE {card_id} = ("  # noqa: S608
        f"SELECT {card_id} FROM {cards} WHERE {card_id} = %s AND {activity} <= %s "
        "AND EXISTS (SELECT 1 FROM played) FOR UPDATE SKIP LOCKED)"
    )
    return f"WITH played AS ({played}), logged AS ({logged}), touched AS ({touched}) SELECT count(*) FROM played"  # noqa: S608


def card_episode_act_unlocked(*, read: PlayRead, action: str) -> EpisodeView | None:
    """Apply ``action`` to the episode ``read`` found, without a lock (see above); None when
    the request must take the locked path instead: a card not open or idle past its time, a
    revealed release, a finished episode (each refused or handled there), or a write that lost
    a race to another request on the episode. None means nothing was written. The caller has
    accepted the key."""
    now = timezone.now()
    if not read.card_open or read.levels_revealed or read.done or _idle_until(read.last_activity_at) <= now:
        return None
    db = connections[DEFAULT_DB_ALIAS]
    level = _parsed(read.xsb)
    budget = scorecard_scoring.step_budget(read.optimal_len)
    step = _step(level, budget, State(read.player, tuple(read.crates)), read.steps, action)
    state = step.state
    params = [
        # _PLAYED_FIELDS, in order
        state.player,
        _CRATES_FIELD.get_db_prep_save(list(state.crates), db),
        step.steps,
        step.solved,
        step.deadlocked,
        step.out_of_budget,
        step.done,
        now if step.done else None,
        # the compare-and-set: the episode exactly as read
        read.episode_id,
        read.steps,
        read.restarts,
        # the move
        _move_seq(steps=step.steps, restarts=read.restarts),
        step.steps,
        action,
        step.outcome,
        step.solved,
        step.deadlocked,
        now,
        # the card's activity
        now,
        read.card_id,
        now - dt.timedelta(seconds=ACTIVITY_RESOLUTION_SECONDS),
    ]
    with rows.cursor() as cursor:
        cursor.execute(_play_write_sql(db.vendor), params)
        (written,) = cursor.fetchone()
    if not written:
        return None
    return EpisodeView(
        level_id=read.level_id,
        level=level,
        state=state,
        steps=step.steps,
        max_steps=budget,
        solved=step.solved,
        deadlocked=step.deadlocked,
        done=step.done,
        restarts=read.restarts,
        last={"action": action, "result": step.outcome},
    )


@lru_cache(maxsize=4)
def _locked_episode_sql(vendor: str, lock: bool) -> tuple[str, rows.Columns, rows.Columns, rows.Columns, rows.Columns]:
    """The statement of :func:`_locked_episode` for a database ``vendor`` (built once)."""
    episode, card, level = rows.columns(CardEpisode, "e"), rows.columns(Card, "c"), rows.columns(ScorecardLevel, "l")
    # Of the release only what _check_levels_hidden reads (its manifest is large); never locked.
    wanted = ("id", "version", "reveal_hidden_levels")
    release = [entry for entry in rows.columns(Release, "r") if entry[0].name in wanted]
    column = rows.column
    joins = (
        f"JOIN {rows.table(Card, 'c')} ON {column('c', Card, 'id')} = {column('e', CardEpisode, 'card')} "
        f"JOIN {rows.table(ScorecardLevel, 'l')} "
        f"ON {column('l', ScorecardLevel, 'id')} = {column('e', CardEpisode, 'level')} "
        f"JOIN {rows.table(Release, 'r')} ON {column('r', Release, 'id')} = {column('c', Card, 'release')}"
    )
    # The owner is in the WHERE clause, so another account's request locks no row of the card
    # (PostgreSQL filters before it locks): see _owned_card_locked.
    where = (
        f"{column('e', CardEpisode, 'card')} = %s AND {column('c', Card, 'owner')} = %s "
        f"AND {column('l', ScorecardLevel, 'level_id')} = %s "
        f"AND {column('l', ScorecardLevel, 'release')} = {column('c', Card, 'release')}"
    )
    # Without row locks (the embedded SQLite) the database's single writer serialises instead.
    locking = " FOR UPDATE OF c, e" if lock else ""
    select = rows.select_list(episode, card, level, release)
    sql = f"SELECT {select} FROM {rows.table(CardEpisode, 'e')} {joins} WHERE {where}{locking}"  # noqa: S608
    return sql, episode, card, level, release


def _locked_episode(card_id: int, level_id: str, user: User) -> CardEpisode | None:
    """``user``'s card's started episode on ``level_id`` with its card and level, the card row
    and the episode row both locked, in one statement; None when there is none (no card, or
    not ``user``'s: then nothing is locked).

    The card is named first in ``FOR UPDATE OF`` and PostgreSQL locks in that order, so
    the card is locked before the episode, as in every other service here (no deadlock
    with a reset or close, which lock the card and then write episodes). Locking the
    episode row too is what makes the episode read fresh: a request that waited for the
    card gets the episode as the request before it left it (PostgreSQL re-reads a locked
    row that changed while it waited, never a row it only joined).

    Written out (submissions.rows) rather than built by the ORM: compiling this
    three-table select_for_update cost more than the whole /healthz request."""
    if int(card_id) > MAX_ID:  # the URL's digits (the view passes them as they came)
        return None  # no card has it, and as a parameter of this statement it is a DataError
    sql, episode_cols, card_cols, level_cols, release_cols = _locked_episode_sql(
        connection.vendor, connection.features.has_select_for_update_of
    )
    with rows.cursor() as cursor:
        cursor.execute(sql, [card_id, user.pk, level_id])
        row = cursor.fetchone()
    if row is None:
        return None
    episode, card, level, release = rows.instances(
        row, (CardEpisode, episode_cols), (Card, card_cols), (ScorecardLevel, level_cols), (Release, release_cols)
    )
    episode.card, episode.level, card.release = card, level, release
    found: CardEpisode = episode
    return found


def _episode_locked(episodes: Any) -> CardEpisode | None:
    """The one episode of ``episodes`` (a queryset of a card already locked) with its level,
    its row locked too (card first, then episode: the lock order of every service here), so it
    is read as the last request on it left it, the fast lane's unlocked writes included; those
    compare-and-set on the episode and so wait for this lock and then write nothing."""
    found: CardEpisode | None = episodes.select_related("level").select_for_update(of=("self",)).first()
    return found


def _episode_of(card: Card, level_id: str) -> CardEpisode:
    """The started episode on ``level_id`` of a locked card, or the reason there is none."""
    episode = _episode_locked(CardEpisode.objects.filter(card=card, level__level_id=level_id))
    if episode is None:
        _level_of(card, level_id)  # an unknown level answers level_unknown
        raise CardError(409, "episode_not_started", f"level {level_id!r}: reset it first to start its episode.")
    return episode


# The episode's columns an action writes (all but its identity, restarts and start).
_PLAYED_FIELDS = ("player", "crates", "steps", "solved", "deadlocked", "out_of_budget", "done", "ended_at")


@lru_cache(maxsize=16)
def _record_play_sql(moves: int) -> tuple[str, list[Any], list[Any], Any]:
    """The one statement of :func:`_record_play` for ``moves`` logged moves (PostgreSQL; built
    once per count) and the fields whose values it takes, in order."""
    quote = connection.ops.quote_name
    episode_fields = [rows.field(CardEpisode, name) for name in _PLAYED_FIELDS]
    move_fields = [field for field in CardMove._meta.concrete_fields if not field.primary_key]
    card_activity = rows.field(Card, "last_activity_at")
    # Identifiers from the models only; every value is a parameter.
    episodes, log_table, cards = (quote(model._meta.db_table) for model in (CardEpisode, CardMove, Card))
    episode_pk, card_pk, activity = (
        quote(rows.field(CardEpisode, "id").column),
        quote(rows.field(Card, "id").column),
        quote(card_activity.column),
    )
    assignments = ", ".join(f"{quote(field.column)} = %s" for field in episode_fields)
    columns = ", ".join(quote(field.column) for field in move_fields)
    tuples = ", ".join(["(" + ", ".join(["%s"] * len(move_fields)) + ")"] * moves)
    played = f"UPDATE {episodes} SET {assignments} WHERE {episode_pk} = %s"  # noqa: S608
    logged = f"INSERT INTO {log_table} ({columns}) VALUES {tuples}"  # noqa: S608
    touched = f"UPDATE {cards} SET {activity} = %s WHERE {card_pk} = %s AND {activity} <= %s"  # noqa: S608
    return f"WITH played AS ({played}), logged AS ({logged}) {touched}", episode_fields, move_fields, card_activity


def _record_play(card: Card, episode: CardEpisode, log: list[CardMove], now: dt.datetime) -> None:
    """Write what the actions did: the episode's new state, one CardMove per action, and
    the card's activity time (at most once per ACTIVITY_RESOLUTION_SECONDS).

    On PostgreSQL this is one prepared statement (data-modifying CTEs run once each, in the
    caller's transaction), so an action costs one write round trip; elsewhere (the
    embedded SQLite) the same rows are written by three ORM statements."""
    quiet_since = now - dt.timedelta(seconds=ACTIVITY_RESOLUTION_SECONDS)
    if connection.vendor != "postgresql":
        episode.save(update_fields=list(_PLAYED_FIELDS))
        CardMove.objects.bulk_create(log)
        Card.objects.filter(pk=card.pk, last_activity_at__lte=quiet_since).update(last_activity_at=now)
        return
    sql, episode_fields, move_fields, card_activity = _record_play_sql(len(log))
    db = connections[DEFAULT_DB_ALIAS]  # one lookup; the ``connection`` proxy resolves on every use
    params: list[Any] = [field.get_db_prep_save(getattr(episode, field.attname), db) for field in episode_fields]
    params.append(episode.pk)
    for move in log:
        params.extend(field.get_db_prep_save(getattr(move, field.attname), db) for field in move_fields)
    params += [card_activity.get_db_prep_save(now, db), card.pk, card_activity.get_db_prep_save(quiet_since, db)]
    with rows.cursor() as cursor:
        cursor.execute(sql, params)


@_card_request
def card_episode_play(*, card_id: int, user: User, level_id: str, actions: Sequence[Any]) -> EpisodeView:
    """Apply ``actions`` in order under one lock, stopping when the episode ends (the rest
    are not applied and not counted). The API sends one action per request; the demo
    loader plays whole scripted episodes through here, so both take the same path.

    An action is two statements besides its transaction: the locked read of card,
    episode and level (the episode row holds the live state, so no move is replayed),
    and the write of :func:`_record_play` (tests/schemes/test_play_api.py pins the count)."""
    for action in actions:
        if not isinstance(action, str) or action not in ACTIONS:
            shown = action[:20] if isinstance(action, str) else type(action).__name__
            raise CardError(400, "invalid_action", f"action: expected one of {', '.join(ACTIONS)}, got {shown!r}.")
    now = timezone.now()
    found = _locked_episode(card_id, level_id, user)
    if found is None:
        # No card, not the player's, or no episode on that level: the plain path says which.
        card = _open_card_for_play(card_id, user, now)
        episode = _episode_of(card, level_id)
    else:
        episode, card = found, found.card
        _check_playable(card, now)
    if episode.done:
        raise CardError(
            409, "episode_done", f"level {level_id!r} is finished on this card; further actions are refused."
        )
    level = _parsed(episode.level.xsb)
    budget = scorecard_scoring.step_budget(episode.level.optimal_len)
    state = State(episode.player, tuple(episode.crates))
    log: list[CardMove] = []
    last: dict[str, str] | None = None
    for action in actions:
        if episode.done:
            break
        step = _step(level, budget, state, episode.steps, action)
        state = step.state
        episode.steps, episode.solved, episode.deadlocked = step.steps, step.solved, step.deadlocked
        episode.out_of_budget, episode.done = step.out_of_budget, step.done
        log.append(_move(episode, action=action, result=step.outcome, now=now))
        last = {"action": action, "result": step.outcome}
    episode.player, episode.crates = state.player, list(state.crates)
    if episode.done:
        episode.ended_at = now
    if log:
        _record_play(card, episode, log, now)
    return episode_view(episode, last=last)


# ------------------------------------------------------------------ closing


def card_summary(card: Card) -> scorecard_scoring.Scorecard:
    """The five metrics from the card's own episode rows, padded to the hidden set."""
    release = card.release
    optimal = dict(release.scorecard_levels.values_list("level_id", "optimal_len"))
    episodes = [
        scorecard_scoring.ScorecardEpisode(
            level_id=level_id, steps=steps, solved=solved, deadlocked=deadlocked, actions=steps
        )
        for level_id, steps, solved, deadlocked in CardEpisode.objects.filter(card=card)
        .order_by("id")
        .values_list("level__level_id", "steps", "solved", "deadlocked")
    ]
    return scorecard_scoring.summarize(episodes, release.episode_set_size or len(optimal), optimal)


def _close(card: Card, *, closed_by: str, now: dt.datetime) -> ScorecardRun:
    """Close a locked open card: end its unfinished episode, compute, record, refresh the board."""
    _end_unfinished(card, keep=None, now=now)
    summary = card_summary(card)
    card.status = Card.Status.CLOSED
    card.closed_by = closed_by
    card.closed_at = now
    run = ScorecardRun.objects.create(
        release=card.release,
        agent_version=card.agent_version,
        # Measured by the server itself, move by move: nothing was claimed, so nothing to
        # compare; the strongest level a scorecard can have.
        level=Run.Level.VERIFIED,
        **summary.to_dict(),
    )
    # The card is locked and was open: this is its one close, so its one run.
    card.run = run
    card.save(update_fields=["status", "closed_by", "closed_at", "run"])
    # Only this agent's row and the ranks it passes move; the board is never rewritten whole.
    scorecard_standing_update(release=card.release, agent_id=card.agent_version.agent_id)
    return run


@_card_request
def card_close(*, card_id: int, user: User) -> Card:
    """The player closes the card (closing a closed card again is refused: card_closed)."""
    card = _owned_card_locked(card_id, user)
    _unfinished_locked(card)
    # The clock is read once the card's lock (and its unfinished episode's) is held: read before,
    # a move applied while the close waited for the lock was counted yet stamped later than the
    # card's closed_at.
    now = timezone.now()
    _check_playable(card, now, closing=True)
    _close(card, closed_by=Card.ClosedBy.PLAYER, now=now)
    return card


def cards_close_idle(*, now: dt.datetime | None = None, owner: User | None = None) -> int:
    """Close every open card idle past settings.PODIUM_CARD_IDLE_SECONDS (the beat sweep), or
    only ``owner``'s (their card list, which must not show a card open past its time: without
    a beat, as under ``make run``, nothing else would close it).

    Each card is closed in its own transaction under its own row lock, and is
    re-checked under the lock (a request may have just touched it), so the sweep
    is safe to run twice and beside live play."""
    now = now or timezone.now()
    cutoff = now - dt.timedelta(seconds=settings.PODIUM_CARD_IDLE_SECONDS)
    closed = 0
    idle = Card.objects.filter(status=Card.Status.OPEN, last_activity_at__lte=cutoff)
    if owner is not None:
        idle = idle.filter(owner=owner)
    ids = list(idle.values_list("pk", flat=True)[:500])
    for card_id in ids:
        with transaction.atomic():
            card = Card.objects.select_for_update().filter(pk=card_id).first()
            if card is not None and _close_if_idle(card, now):
                closed += 1
    return closed
