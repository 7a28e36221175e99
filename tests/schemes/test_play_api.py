"""Scorecards played over the API (seed 001; docs/api.md "Scorecards")."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from leaderboard.models import ScorecardRun
from leaderboard.models.races import ScorecardStanding
from scoring import scorecard as scorecard_scoring
from scoring.sokoban import parse_xsb, solve
from submissions.api_keys import api_key_create
from submissions.models import Card, CardEpisode, CardMove
from submissions.services.cards import cards_close_idle
from tests.concurrency import on_postgresql_committing
from tests.schemes.conftest import PLAY_LEVELS

OPEN = "/api/v1/scorecards/"


def client_for(user) -> APIClient:
    client = APIClient()
    key = api_key_create(user=user, name="player").plaintext
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


def open_card(client, *, agent="Box Bot", version="1.0", benchmark="sokoban-play"):
    return client.post(OPEN, {"benchmark": benchmark, "agent": {"name": agent, "version": version}}, format="json")


def reset(client, card_id, level):
    return client.post(f"/api/v1/scorecards/{card_id}/levels/{level}/reset")


def act(client, card_id, level, action):
    return client.post(f"/api/v1/scorecards/{card_id}/levels/{level}/actions", {"action": action}, format="json")


def play(client, card_id, level, actions):
    body = None
    for action in actions:
        response = act(client, card_id, level, action)
        assert response.status_code == 200, response.json()
        body = response.json()
    return body


def error(response):
    return response.status_code, response.json()["error"]["code"]


@pytest.fixture
def player(make_user):
    return make_user("player")


@pytest.fixture
def api(player, play_release):
    return client_for(player)


# ------------------------------------------------------------------ opening


def test_opening_a_card_answers_its_levels_and_budgets(api, play_release, player):
    response = open_card(api)
    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "open"
    assert body["levels"] == sorted(PLAY_LEVELS)
    assert body["budget"] == dict.fromkeys(sorted(PLAY_LEVELS), 30)
    assert body["success_rate"] is None and body["played"] == []
    assert "xsb" not in str(body)
    card = Card.objects.get(pk=body["id"])
    assert (card.owner, card.release, card.status, card.api_key.user) == (player, play_release, "open", player)


def test_opening_cards_counts_against_the_daily_limit(api, play_release):
    play_release.benchmark.daily_submission_limit = 1
    play_release.benchmark.save()
    assert open_card(api).status_code == 201
    response = open_card(api, version="1.1")
    assert error(response) == (429, "daily_limit_reached")
    assert "Retry-After" in response
    assert Card.objects.count() == 1


@pytest.mark.parametrize(
    ("benchmark", "expected"), [("nope", (404, "benchmark_unknown")), ("bad slug!", (400, "invalid"))]
)
def test_opening_a_card_on_an_unknown_benchmark_is_refused(api, benchmark, expected):
    assert error(open_card(api, benchmark=benchmark)) == expected
    assert not Card.objects.exists()


def test_a_card_cannot_be_opened_on_a_paper_gap_benchmark(api):
    from leaderboard.models import Benchmark, Release

    benchmark = Benchmark.objects.create(slug="papers", name="Papers", scheme="paper_gap")
    Release.objects.create(
        benchmark=benchmark, version="1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64, published=True
    )
    assert error(open_card(api, benchmark="papers")) == (400, "wrong_scheme")


@pytest.mark.parametrize("scheme", ["scorecard", "paper_gap"])
def test_a_benchmark_with_no_published_release_answers_as_one_that_does_not_exist(api, scheme):
    from leaderboard.models import Benchmark, Release

    benchmark = Benchmark.objects.create(slug="secret", name="Secret", scheme=scheme)
    Release.objects.create(
        benchmark=benchmark, version="1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64, published=False
    )
    response = open_card(api, benchmark="secret")
    assert error(response) == (404, "benchmark_unknown")
    # Word for word what a slug nobody registered gets.
    assert response.json()["error"]["message"] == "benchmark: no benchmark with slug 'secret'."
    assert not Card.objects.exists()


def test_a_card_cannot_play_as_another_accounts_agent(api, make_user, play_release):
    assert open_card(client_for(make_user("rival")), agent="Rival Bot").status_code == 201
    assert error(open_card(api, agent="Rival Bot")) == (403, "agent_not_yours")
    assert Card.objects.count() == 1


# ------------------------------------------------------------------ playing


def test_reset_sends_the_level_and_a_fresh_episode(api):
    card_id = open_card(api).json()["id"]
    body = reset(api, card_id, "corridor").json()
    assert body == {
        "level": "corridor",
        "state": {
            "xsb": PLAY_LEVELS["corridor"],
            "player": [1, 1],
            "crates": [[1, 3]],
            "goals": [[1, 5]],
            "width": 7,
            "height": 3,
        },
        "steps": 0,
        "max_steps": 30,
        "solved": False,
        "deadlocked": False,
        "done": False,
        "restarts": 0,
    }


def test_a_solved_episode_is_done_and_refuses_further_actions(api):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    body = play(api, card_id, "corridor", ["right", "right", "right"])
    assert (body["steps"], body["solved"], body["done"], body["last"]) == (
        3,
        True,
        True,
        {"action": "right", "result": "pushed"},
    )
    assert error(act(api, card_id, "corridor", "left")) == (409, "episode_done")
    assert error(reset(api, card_id, "corridor")) == (409, "episode_done")
    episode = CardEpisode.objects.get(card_id=card_id)
    assert (episode.steps, episode.solved, episode.done) == (3, True, True)
    assert list(episode.moves.values_list("seq", "step", "action", "result")) == [
        (1, 0, "reset", "reset"),
        (2, 1, "right", "moved"),
        (3, 2, "right", "pushed"),
        (4, 3, "right", "pushed"),
    ]


def test_pushing_a_crate_into_a_corner_ends_the_episode_as_deadlocked(api):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "room")
    body = play(api, card_id, "room", ["left", "down", "left", "up"])
    # The crate was pushed left to column 1, then up into the top-left corner.
    assert (body["deadlocked"], body["solved"], body["done"]) == (True, False, True)
    assert error(act(api, card_id, "room", "right")) == (409, "episode_done")
    assert CardMove.objects.filter(episode__card_id=card_id, deadlocked=True).count() == 1


def test_an_episode_ends_when_its_step_budget_is_spent(api):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    body = play(api, card_id, "corridor", ["up"] * 30)
    assert (body["steps"], body["done"], body["solved"], body["last"]["result"]) == (30, True, False, "blocked")
    assert error(act(api, card_id, "corridor", "right")) == (409, "episode_done")
    assert CardEpisode.objects.get(card_id=card_id).out_of_budget


def test_a_restart_puts_the_level_back_but_keeps_every_step(api):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    play(api, card_id, "corridor", ["right", "right"])
    body = reset(api, card_id, "corridor").json()
    assert (body["steps"], body["restarts"], body["state"]["player"]) == (2, 1, [1, 1])
    body = play(api, card_id, "corridor", ["right", "right", "right"])
    assert (body["steps"], body["solved"]) == (5, True)


def test_opening_another_level_ends_the_unfinished_one_unsolved(api):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    play(api, card_id, "corridor", ["right"])
    reset(api, card_id, "room")
    corridor = CardEpisode.objects.get(card_id=card_id, level__level_id="corridor")
    assert (corridor.done, corridor.abandoned, corridor.solved, corridor.steps) == (True, True, False, 1)
    assert error(act(api, card_id, "corridor", "right")) == (409, "episode_done")


def test_an_action_costs_two_statements_on_postgresql_with_no_replay_of_earlier_moves(api, django_assert_num_queries):
    from django.db import connection

    card_id = open_card(api).json()["id"]
    reset(api, card_id, "room")
    act(api, card_id, "room", "up")  # the key's first use writes its last-used time (then once a minute)
    # PostgreSQL (the fast lane): the key, its user and the episode read in one statement;
    # the episode, its move and the card's activity written in one. SQLite takes the locked
    # path: the key and its user; card and episode read; episode, move and card written
    # in three statements (no data-modifying CTE); its release; the savepoint.
    with django_assert_num_queries(2 if connection.vendor == "postgresql" else 7) as captured:
        body = act(api, card_id, "room", "up").json()
    assert body["steps"] == 2 and body["last"] == {"action": "up", "result": "blocked"}
    assert CardEpisode.objects.get(card_id=card_id).moves.count() == 3
    assert not any("cardmove" in query["sql"] and query["sql"].startswith("SELECT") for query in captured)


def test_the_play_statements_are_planned_once_per_connection_on_postgresql(api):
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "room")
    for _ in range(3):
        assert act(api, card_id, "room", "up").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        prepared = cursor.fetchall()
    # The fast lane's read (key, user, card, episode, level) and its write: each parsed
    # once, then executed by name.
    assert any(
        text.startswith("SELECT")
        and 'FROM "submissions_apikey"' in text
        and '"submissions_cardepisode"' in text
        and runs == 3
        for text, runs in prepared
    )
    assert any(text.startswith("WITH played AS") and runs == 3 for text, runs in prepared)


def test_a_valid_move_with_an_extra_field_or_an_invalid_body_gets_the_serializers_refusal_and_plays_nothing(api):
    # A move with another field played and ignored the field (the serializer's habit); every
    # write now refuses a field it does not read (leaderboard.api_errors.refuse_fields_not_read).
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    response = api.post(
        f"/api/v1/scorecards/{card_id}/levels/corridor/actions", {"action": "right", "note": "x"}, format="json"
    )
    assert error(response) == (400, "invalid")
    response = api.post(f"/api/v1/scorecards/{card_id}/levels/corridor/actions", ["right"], format="json")
    assert error(response) == (400, "invalid")
    assert CardEpisode.objects.get(card_id=card_id).steps == 0


@pytest.mark.parametrize(
    ("payload", "expected"),
    [({"action": "jump"}, (400, "invalid")), ({}, (400, "invalid")), ({"action": 3}, (400, "invalid"))],
)
def test_an_invalid_action_is_refused_and_not_counted(api, payload, expected):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    response = api.post(f"/api/v1/scorecards/{card_id}/levels/corridor/actions", payload, format="json")
    assert error(response) == expected
    assert CardEpisode.objects.get(card_id=card_id).steps == 0


def test_an_action_before_the_reset_and_on_an_unknown_level_are_refused(api):
    card_id = open_card(api).json()["id"]
    assert error(act(api, card_id, "corridor", "right")) == (409, "episode_not_started")
    assert error(reset(api, card_id, "level-999")) == (404, "level_unknown")
    assert not CardEpisode.objects.exists()


def test_the_card_so_far_shows_what_was_played_and_no_layout(api):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    play(api, card_id, "corridor", ["right"])
    body = api.get(f"/api/v1/scorecards/{card_id}").json()
    assert body["played"] == [
        {"level": "corridor", "steps": 1, "solved": False, "deadlocked": False, "done": False, "restarts": 0}
    ]
    assert "#" not in str(body)


# ------------------------------------------------------------------ closing and the board


def _optimal(level_id: str) -> tuple[str, ...]:
    return solve(parse_xsb(PLAY_LEVELS[level_id])).moves


def test_a_played_card_closes_to_the_metrics_scoring_computes_from_its_recorded_moves(api, play_release, client):
    card_id = open_card(api).json()["id"]
    # Optimal solves of two levels, one solve with four wasted steps, one deadlock, one level unplayed.
    for level in ("corridor", "room-b"):
        reset(api, card_id, level)
        play(api, card_id, level, _optimal(level))
    reset(api, card_id, "room-c")
    play(api, card_id, "room-c", ["left", "right", "left", "right", *_optimal("room-c")])
    reset(api, card_id, "room")
    play(api, card_id, "room", ["left", "down", "left", "up"])
    response = api.post(f"/api/v1/scorecards/{card_id}/close")
    assert response.status_code == 200
    body = response.json()

    # The metrics scoring.scorecard gives from the server's move log.
    optimal = {level: len(_optimal(level)) for level in PLAY_LEVELS}
    episodes = []
    for episode in CardEpisode.objects.filter(card_id=card_id).order_by("id"):
        moves = list(episode.moves.exclude(action="reset").order_by("seq"))
        episodes.append(
            scorecard_scoring.ScorecardEpisode(
                episode.level.level_id, len(moves), moves[-1].solved, moves[-1].deadlocked, len(moves)
            )
        )
    expected = scorecard_scoring.summarize(episodes, 5, optimal).to_dict()
    assert {key: body[key] for key in expected} == expected
    sent = 3 + len(_optimal("room-b")) + 4 + len(_optimal("room-c")) + 4
    assert (body["episodes"], body["solved"], body["deadlock_rate"], body["total_actions"]) == (5, 3, 0.2, sent)
    assert (body["status"], body["closed_by"]) == ("closed", "player")
    run = ScorecardRun.objects.get(card__pk=card_id)
    assert run.success_rate == expected["success_rate"] == 0.6

    standing = ScorecardStanding.objects.get(release=play_release)
    assert standing.scorecard == run
    page = client.get(reverse("scorecard_board", args=["sokoban-play", "p1"])).content.decode()
    assert "Box Bot" in page and reverse("scorecard_detail", args=[card_id]) in page

    # A second, worse card of the same agent does not displace the first.
    worse = open_card(api, version="1.1").json()["id"]
    reset(api, worse, "corridor")
    play(api, worse, "corridor", _optimal("corridor"))
    assert api.post(f"/api/v1/scorecards/{worse}/close").json()["success_rate"] == 0.2
    rows = list(ScorecardStanding.objects.filter(release=play_release))
    assert [(row.rank, row.scorecard.card_id) for row in rows] == [(1, card_id)]


def test_a_card_closed_without_a_move_is_kept_but_never_ranks(api, play_release):
    idle = open_card(api, agent="Idle Bot").json()["id"]
    reset(api, idle, "corridor")  # a level looked at, no move sent
    assert api.post(f"/api/v1/scorecards/{idle}/close").json()["total_actions"] == 0
    tried = open_card(api, agent="Tryer").json()["id"]
    reset(api, tried, "corridor")
    act(api, tried, "corridor", "left")
    api.post(f"/api/v1/scorecards/{tried}/close")
    # Both closed cards are stored with their metrics; only the one that played ranks (it ranked
    # below the idle one before: equal success, more actions).
    assert ScorecardRun.objects.filter(card__pk__in=[idle, tried]).count() == 2
    board = ScorecardStanding.objects.filter(release=play_release).order_by("rank")
    assert [(row.rank, row.scorecard.card_id) for row in board] == [(1, tried)]


def test_a_closed_card_refuses_play_and_a_second_close(api):
    card_id = open_card(api).json()["id"]
    assert api.post(f"/api/v1/scorecards/{card_id}/close").status_code == 200
    assert error(api.post(f"/api/v1/scorecards/{card_id}/close")) == (409, "card_closed")
    assert error(reset(api, card_id, "corridor")) == (409, "card_closed")
    run = ScorecardRun.objects.get(card__pk=card_id)
    assert (run.episodes, run.solved, run.success_rate, run.total_actions) == (5, 0, 0.0, 0)


def test_an_idle_card_is_closed_by_the_sweep_like_a_closed_one(api, settings):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    play(api, card_id, "corridor", _optimal("corridor"))
    Card.objects.filter(pk=card_id).update(last_activity_at=timezone.now() - dt.timedelta(hours=2))
    assert cards_close_idle() == 1
    assert cards_close_idle() == 0
    card = Card.objects.get(pk=card_id)
    assert (card.status, card.closed_by) == ("closed", "expiry")
    assert card.closed_at == card.last_activity_at + dt.timedelta(seconds=settings.PODIUM_CARD_IDLE_SECONDS)
    assert ScorecardRun.objects.get(card=card).solved == 1


def test_an_idle_card_is_closed_when_next_touched(api):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    Card.objects.filter(pk=card_id).update(last_activity_at=timezone.now() - dt.timedelta(hours=2))
    assert error(act(api, card_id, "corridor", "right")) == (409, "card_closed")
    body = api.get(f"/api/v1/scorecards/{card_id}").json()
    assert (body["status"], body["closed_by"], body["episodes"]) == ("closed", "expiry", 5)
    assert CardEpisode.objects.get(card_id=card_id).steps == 0


@pytest.mark.parametrize("request_kind", ["close", "reset", "action"])
def test_a_play_request_on_an_idle_card_closes_it_for_good(api, play_release, settings, request_kind):
    """A reset, action or close that finds its card idled out closes it as the sweep would, for
    good: the close used to run inside the refused request's transaction, which the refusal
    rolled back, so the card stayed open and off the board until the sweep."""
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    play(api, card_id, "corridor", ["right", "right", "right"])
    reset(api, card_id, "room")
    idle_since = timezone.now() - dt.timedelta(hours=2)
    Card.objects.filter(pk=card_id).update(last_activity_at=idle_since)
    send = {
        "close": lambda: api.post(f"/api/v1/scorecards/{card_id}/close"),
        "reset": lambda: reset(api, card_id, "room"),
        "action": lambda: act(api, card_id, "room", "up"),
    }[request_kind]
    assert error(send()) == (409, "card_closed")
    card = Card.objects.get(pk=card_id)
    assert (card.status, card.closed_by) == ("closed", "expiry")
    assert card.closed_at == idle_since + dt.timedelta(seconds=settings.PODIUM_CARD_IDLE_SECONDS)
    run = ScorecardRun.objects.get(card=card)
    assert (run.episodes, run.solved, run.total_actions) == (5, 1, 3)
    assert ScorecardStanding.objects.get(release=play_release).scorecard == run
    room = CardEpisode.objects.get(card_id=card_id, level__level_id="room")
    assert (room.steps, room.restarts, room.done, room.abandoned) == (0, 0, True, True)
    # Closed once: the next request is refused the same way and records nothing more.
    assert error(send()) == (409, "card_closed")
    assert ScorecardRun.objects.filter(card__pk=card_id).count() == 1
    assert CardMove.objects.filter(episode=room).count() == 1


def test_a_card_open_when_its_release_is_revealed_plays_no_further(api, play_release):
    """Revealing a release's hidden levels puts every closed card's board and actions on the
    replay pages: a card still open on it (a card can be kept open indefinitely by playing
    within the idle time) could copy those tested solutions onto its own levels."""
    card_id = open_card(api).json()["id"]
    assert reset(api, card_id, "corridor").status_code == 200
    play_release.reveal_hidden_levels = True
    play_release.save(update_fields=["reveal_hidden_levels"])
    assert error(act(api, card_id, "corridor", "right")) == (409, "levels_revealed")
    assert error(reset(api, card_id, "corridor")) == (409, "levels_revealed")
    assert error(reset(api, card_id, "room")) == (409, "levels_revealed")
    episode = CardEpisode.objects.get(card_id=card_id)
    assert (episode.steps, episode.restarts, episode.done) == (0, 0, False)
    assert CardMove.objects.filter(episode=episode).count() == 1  # the reset before the reveal
    # What was played before the reveal is the card: it still closes (padded as ever).
    body = api.post(f"/api/v1/scorecards/{card_id}/close").json()
    assert (body["status"], body["solved"], body["episodes"]) == ("closed", 0, 5)


def test_no_card_opens_on_a_revealed_release(api, play_release):
    play_release.reveal_hidden_levels = True
    play_release.save(update_fields=["reveal_hidden_levels"])
    assert error(open_card(api)) == (409, "levels_revealed")
    assert not Card.objects.exists()


# ------------------------------------------------------------------ who may play


def test_only_the_owner_plays_a_card_others_get_exact_codes(api, make_user, play_release):
    card_id = open_card(api).json()["id"]
    reset(api, card_id, "corridor")
    other = client_for(make_user("other"))
    staff_user = make_user("staff")
    staff_user.is_staff = True
    staff_user.save()
    staff = client_for(staff_user)
    anonymous = APIClient()
    paths = [
        ("get", f"/api/v1/scorecards/{card_id}", None),
        ("post", f"/api/v1/scorecards/{card_id}/levels/corridor/reset", None),
        ("post", f"/api/v1/scorecards/{card_id}/levels/corridor/actions", {"action": "right"}),
        ("post", f"/api/v1/scorecards/{card_id}/close", None),
    ]
    for method, path, data in paths:
        assert error(getattr(anonymous, method)(path, data, format="json")) == (401, "not_authenticated")
        assert error(getattr(other, method)(path, data, format="json")) == (404, "card_not_found")
        staff_response = getattr(staff, method)(path, data, format="json")
        if method == "get":
            assert staff_response.status_code == 200
        else:
            assert error(staff_response) == (403, "card_not_yours")
    assert error(anonymous.post(OPEN, {}, format="json")) == (401, "not_authenticated")
    # Nothing the others sent was recorded or changed the card.
    assert list(CardMove.objects.values_list("action", flat=True)) == ["reset"]
    assert Card.objects.get(pk=card_id).status == "open"
    assert act(api, card_id, "corridor", "right").status_code == 200


def test_an_inactive_staff_account_reads_another_accounts_card_as_any_other_account_would(make_user, play_release):
    from submissions.services.cards import CardError, card_for_player

    card_id = open_card(client_for(make_user("owner"))).json()["id"]
    former = make_user("former-staff")
    former.is_staff, former.is_active = True, False  # staff flag left on a deactivated account
    former.save()
    with pytest.raises(CardError) as refused:
        card_for_player(card_id=card_id, user=former)
    assert (refused.value.status, refused.value.code) == (404, "card_not_found")


def test_a_card_that_does_not_exist_answers_like_anothers(api):
    assert error(api.get("/api/v1/scorecards/999999")) == (404, "card_not_found")


# ------------------------------------------------------------------ concurrency (PostgreSQL)


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_concurrent_actions_on_one_card_are_serialised_by_its_row_lock(make_user, tmp_path):
    import threading

    from django.db import connection

    from leaderboard.services.release_sync import release_sync
    from submissions.services.cards import card_episode_act, card_episode_reset, card_open
    from tests.schemes.conftest import write_play_manifest

    write_play_manifest(tmp_path / "play")
    release_sync(manifest=tmp_path / "play")
    user = make_user("racer")
    cards = [
        card_open(user=user, api_key=None, benchmark_slug="sokoban-play", agent_name="Racer", agent_version=str(n))
        for n in range(2)
    ]
    for card in cards:
        card_episode_reset(card_id=card.pk, user=user, level_id="room")
    errors: list[BaseException] = []

    def send(card_id: int) -> None:
        try:
            for _ in range(7):
                # "up" from the start is a step onto floor, then bumps into the top wall: never done early.
                card_episode_act(card_id=card_id, user=user, level_id="room", action="up")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(card.pk,)) for card in cards for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for card in cards:
        assert_each_action_counted_once(card.pk, 28)  # 4 threads x 7 actions


@on_postgresql_committing
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("request_kind", ["get", "reset", "action", "close"])
def test_another_accounts_request_for_a_card_locks_nothing_and_answers_like_a_missing_card(
    make_user, tmp_path, request_kind
):
    """Each request locked the card row by id and then found it was not the requester's (a
    404): any account could hold a lock on a victim's card, delaying their play. The other
    account's request is held after each of its locking statements; the owner can lock the
    card there without waiting (``nowait``), and the answer is a missing card's, exactly."""
    import queue
    import threading

    from django.db import DatabaseError, connection, transaction

    from leaderboard.services.release_sync import release_sync
    from submissions.services import cards as card_services
    from tests.schemes.conftest import write_play_manifest

    write_play_manifest(tmp_path / "play")
    release_sync(manifest=tmp_path / "play")
    owner, other = make_user("owner"), make_user("other")
    card = card_services.card_open(
        user=owner, api_key=None, benchmark_slug="sokoban-play", agent_name="Owned", agent_version="1"
    )
    card_services.card_episode_reset(card_id=card.pk, user=owner, level_id="room")
    send = {
        "get": lambda: card_services.card_for_player(card_id=card.pk, user=other),
        "reset": lambda: card_services.card_episode_reset(card_id=card.pk, user=other, level_id="room"),
        "action": lambda: card_services.card_episode_act(card_id=card.pk, user=other, level_id="room", action="up"),
        "close": lambda: card_services.card_close(card_id=card.pk, user=other),
    }[request_kind]
    locking, resume = queue.Queue(), queue.Queue()

    def hold_after_each_lock(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if "FOR UPDATE" in sql:
            locking.put(sql)
            resume.get(timeout=10)
        return result

    answers: list[object] = []

    def other_account() -> None:
        try:
            with connection.execute_wrapper(hold_after_each_lock):
                send()
        except card_services.CardError as refusal:
            answers.append((refusal.status, refusal.code, refusal.message))
        except BaseException as exc:  # pragma: no cover - reported below
            answers.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=other_account)
    thread.start()
    owner_could_lock: list[bool] = []
    while thread.is_alive() or not locking.empty():
        try:
            locking.get(timeout=0.05)
        except queue.Empty:
            continue
        try:
            with transaction.atomic():
                Card.objects.select_for_update(nowait=True).get(pk=card.pk)
            owner_could_lock.append(True)
        except DatabaseError:
            owner_could_lock.append(False)
        resume.put(None)
    thread.join()
    assert answers == [(404, "card_not_found", f"No scorecard {card.pk}.")]
    assert owner_could_lock and all(owner_could_lock), owner_could_lock
    assert list(CardMove.objects.values_list("action", flat=True)) == ["reset"]
    assert Card.objects.get(pk=card.pk).status == "open"
    assert card_services.card_episode_act(card_id=card.pk, user=owner, level_id="room", action="up").steps == 1


def assert_each_action_counted_once(card_id: int, actions: int) -> None:
    """The card's one episode (started by one reset) took ``actions`` actions, none lost and
    none counted twice, and its log is numbered without a gap."""
    episode = CardEpisode.objects.get(card_id=card_id)
    assert episode.steps == actions
    assert list(episode.moves.order_by("seq").values_list("seq", flat=True)) == list(range(1, actions + 2))
    steps = episode.moves.exclude(action="reset").order_by("seq").values_list("step", flat=True)
    assert list(steps) == list(range(1, actions + 1))


@pytest.mark.parametrize("card_id", ["9223372036854775808", "99999999999999999999999"])
def test_an_out_of_range_card_id_answers_card_not_found_like_any_other_missing_card(api, card_id):
    """Beyond a bigint is still a card that does not exist (19 digits matched no route: not_found)."""
    for path in (f"/api/v1/scorecards/{card_id}", f"/api/v1/scorecards/{card_id}/close"):
        response = api.post(path) if path.endswith("close") else api.get(path)
        assert error(response) == (404, "card_not_found")
    level = api.get(f"/api/v1/scorecards/{card_id}/levels/level-1")
    assert error(level) == (404, "card_not_found")
    action = api.post(f"/api/v1/scorecards/{card_id}/levels/level-1/actions", {"action": "up"}, format="json")
    assert error(action) == (404, "card_not_found")


def test_a_card_id_longer_than_any_card_id_is_the_generic_not_found(api):
    assert error(api.get("/api/v1/scorecards/" + "9" * 31)) == (404, "not_found")


def test_a_release_with_cards_cannot_change_its_hidden_levels(api, play_release, tmp_path):
    from leaderboard.manifest import ManifestError
    from leaderboard.services.release_sync import release_sync
    from tests.schemes.conftest import write_play_manifest

    open_card(api)
    write_play_manifest(tmp_path / "changed", levels={**PLAY_LEVELS, "corridor": "########\n#@ $  .#\n########"})
    with pytest.raises(ManifestError) as caught:
        release_sync(manifest=tmp_path / "changed")
    assert "cannot change" in str(caught.value)
    assert play_release.scorecard_levels.get(level_id="corridor").optimal_len == 3


def test_the_api_root_links_where_cards_are_opened(api):
    assert api.get("/api/v1/").json()["scorecards"] == "http://testserver/api/v1/scorecards/"


def test_a_scorecard_benchmark_takes_no_bundle_and_no_challenge_and_counts_nothing(play_release, make_user):
    # Its cards are played on the server: a bundle could never be scored, and each one spent the
    # allowance that limits card openings (outsider review).
    from django.core.files.uploadedfile import SimpleUploadedFile

    from submissions.models import DailyCount, Submission, SubmissionChallenge

    user = make_user("bundler")
    client = client_for(user)
    upload = client.post(
        "/api/v1/submissions/",
        {"benchmark": "sokoban-play", "bundle": SimpleUploadedFile("run.age", b"age-encryption.org/v1\n" * 4)},
        format="multipart",
    )
    assert (upload.status_code, upload.json()["error"]["code"]) == (400, "wrong_scheme")
    challenge = client.post(
        "/api/v1/challenges/",
        {"benchmark": "sokoban-play", "release": play_release.version, "agent_name": "Box Bot", "agent_version": "1"},
        format="json",
    )
    assert (challenge.status_code, challenge.json()["error"]["code"]) == (400, "wrong_scheme")
    assert not Submission.objects.exists() and not SubmissionChallenge.objects.exists()
    assert not DailyCount.objects.exists()
    web = Client()
    web.force_login(user)
    page = web.get("/submit/").content.decode()
    assert 'value="sokoban-play"' not in page  # not offered in the upload or challenge forms


def test_an_account_lists_its_own_cards_newest_first_and_no_one_elses(play_release, make_user):
    # A client that crashed finds its open card again (it still counts against the day's allowance).
    mine, other = client_for(make_user("lister")), client_for(make_user("stranger"))
    first = open_card(mine).json()["id"]
    second = open_card(mine, version="2.0").json()["id"]
    open_card(other, agent="Other Bot")
    assert mine.post(f"{OPEN}{first}/close").status_code == 200
    listed = mine.get(OPEN)
    assert listed.status_code == 200
    body = listed.json()
    assert body["count"] == 2
    assert [(card["id"], card["status"]) for card in body["results"]] == [(second, "open"), (first, "closed")]
    assert body["results"][0]["agent"] == {"name": "Box Bot", "version": "2.0"}
    assert body["results"][0]["expires_at"] is not None and body["results"][1]["expires_at"] is None
    assert [card["id"] for card in mine.get(OPEN, {"status": "open"}).json()["results"]] == [second]
    refused = mine.get(OPEN, {"status": "ajar"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, "invalid_query")
    assert APIClient().get(OPEN).status_code == 401


def test_a_player_reads_a_started_level_as_it_stands_without_a_restart(play_release, make_user):
    # After a dropped connection the only way back was a reset: a restart, the level back to its start.
    mine = client_for(make_user("resumer"))
    card_id = open_card(mine).json()["id"]
    reset(mine, card_id, "corridor")
    last = act(mine, card_id, "corridor", "right").json()
    read = mine.get(f"{OPEN}{card_id}/levels/corridor")
    assert read.status_code == 200
    assert read.json() == {key: value for key, value in last.items() if key != "last"}
    assert read.json()["restarts"] == 0 and read.json()["steps"] == 1
    assert CardEpisode.objects.get(card_id=card_id).restarts == 0  # nothing was written
    assert error(mine.get(f"{OPEN}{card_id}/levels/room")) == (409, "episode_not_started")
    assert error(mine.get(f"{OPEN}{card_id}/levels/nowhere")) == (404, "level_unknown")


def test_a_level_is_read_by_its_cards_player_only_and_only_while_the_card_is_open(play_release, make_user):
    owner, stranger = make_user("owner1"), make_user("stranger1")
    mine = client_for(owner)
    card_id = open_card(mine).json()["id"]
    reset(mine, card_id, "corridor")
    assert error(client_for(stranger).get(f"{OPEN}{card_id}/levels/corridor")) == (404, "card_not_found")
    assert APIClient().get(f"{OPEN}{card_id}/levels/corridor").status_code == 401
    assert mine.post(f"{OPEN}{card_id}/close").status_code == 200
    assert error(mine.get(f"{OPEN}{card_id}/levels/corridor")) == (409, "card_closed")


def test_a_card_idle_past_its_time_is_listed_closed_not_open_and_another_accounts_is_left_alone(
    play_release, make_user, settings
):
    # Without a beat (make run starts none) the list showed it open with an expires_at in the past.
    mine, other = client_for(make_user("lister")), client_for(make_user("stranger"))
    idle = open_card(mine).json()["id"]
    theirs = open_card(other, agent="Other Bot").json()["id"]
    idle_since = timezone.now() - dt.timedelta(hours=2)
    Card.objects.filter(pk__in=[idle, theirs]).update(last_activity_at=idle_since)
    assert mine.get(OPEN, {"status": "open"}).json()["results"] == []
    listed = mine.get(OPEN).json()["results"]
    assert [(card["id"], card["status"], card["expires_at"]) for card in listed] == [(idle, "closed", None)]
    card = Card.objects.get(pk=idle)
    assert (card.closed_by, card.closed_at) == (
        "expiry",
        idle_since + dt.timedelta(seconds=settings.PODIUM_CARD_IDLE_SECONDS),
    )
    assert ScorecardRun.objects.filter(card=card).exists()
    assert Card.objects.get(pk=theirs).status == "open"  # the sweep's, or its owner's next request


def test_a_form_posted_to_a_json_endpoint_is_told_the_endpoint_reads_json(play_release, make_user):
    client = client_for(make_user("former"))
    card = open_card(client).json()["id"]
    reset(client, card, "corridor")
    url = f"{OPEN}{card}/levels/corridor/actions"
    answer = client.post(url, "action=right", content_type="application/x-www-form-urlencoded")
    assert (answer.status_code, answer.json()["error"]["code"]) == (415, "unsupported_media_type")
    assert answer.json()["error"]["message"].endswith("This endpoint reads application/json or multipart/form-data.")


@pytest.mark.parametrize(
    ("body", "field", "expected"),
    [
        (
            {"benchmark": "sokoban-play", "agent": {"name": "Box Bot", "version": "1.0"}, "private": True},
            "private",
            "benchmark, agent",
        ),
        (
            {"benchmark": "sokoban-play", "agent": {"name": "Box Bot", "version": "1.0", "private": True}},
            "agent.private",
            "name, version",
        ),
    ],
    ids=["at the top", "in the agent"],
)
def test_opening_a_card_with_a_field_it_does_not_read_is_refused_and_spends_nothing(
    api, play_release, body, field, expected
):
    # Ignored, "private" opened a public card and spent one of the day's opens.
    play_release.benchmark.daily_submission_limit = 1
    play_release.benchmark.save()
    response = api.post(OPEN, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == {
        "code": "invalid",
        "message": f"{field}: unknown field; expected {expected}.",
        "fields": {field: ["Unknown field."]},
    }
    assert not Card.objects.exists()
    assert open_card(api).status_code == 201  # the day's one open is still there


def test_an_action_with_a_field_it_does_not_read_is_refused_and_nothing_moves(api):
    card_id = open_card(api).json()["id"]
    assert reset(api, card_id, "room").status_code == 200
    body = {"action": "up", "repeat": 5}
    response = api.post(f"/api/v1/scorecards/{card_id}/levels/room/actions", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "repeat: unknown field; expected action."
    episode = CardEpisode.objects.get(card_id=card_id)
    assert episode.steps == 0
    assert list(episode.moves.values_list("action", flat=True)) == ["reset"]


def test_a_reset_with_a_body_field_is_refused_and_starts_no_episode(api):
    card_id = open_card(api).json()["id"]
    response = api.post(f"/api/v1/scorecards/{card_id}/levels/level-000/reset", {"bogus": 1}, format="json")
    assert error(response) == (400, "invalid")
    assert response.json()["error"]["message"] == "bogus: unknown field; this request reads no body."
    assert api.get(f"/api/v1/scorecards/{card_id}").json()["played"] == []


def test_a_close_with_a_body_field_is_refused_and_the_card_stays_open(api):
    card_id = open_card(api).json()["id"]
    response = api.post(f"/api/v1/scorecards/{card_id}/close", {"bogus": 1}, format="json")
    assert error(response) == (400, "invalid")
    assert api.get(f"/api/v1/scorecards/{card_id}").json()["status"] == "open"


# ------------------------------------------------------------------ rate limits


def test_the_play_reads_share_the_general_rate_limit_and_the_moves_do_not(api, monkeypatch):
    from rest_framework.throttling import UserRateThrottle

    card_id = open_card(api).json()["id"]
    level = "corridor"
    assert reset(api, card_id, level).status_code == 200
    monkeypatch.setattr(UserRateThrottle, "THROTTLE_RATES", {"user": "3/min", "anon": "3/min"})
    reads = [api.get(f"{OPEN}{card_id}/").status_code for _ in range(3)]
    assert reads == [200, 200, 200]
    for path in (f"{OPEN}{card_id}/", OPEN, f"{OPEN}{card_id}/levels/{level}"):
        assert error(api.get(path)) == (429, "throttled")
    # A move is bounded by its level's step budget, not by the per-minute limit.
    moves = [act(api, card_id, level, "left").status_code for _ in range(4)]
    assert moves == [200, 200, 200, 200]
    assert CardEpisode.objects.get(card_id=card_id).steps == 4


def test_an_action_body_naming_its_action_twice_is_refused_and_plays_nothing(api):
    card_id = open_card(api).json()["id"]
    assert reset(api, card_id, "corridor").status_code == 200
    body = '{"action": "left", "action": "right"}'
    response = api.post(f"/api/v1/scorecards/{card_id}/levels/corridor/actions", body, content_type="application/json")
    assert error(response) == (400, "malformed_request")
    assert CardEpisode.objects.get(card_id=card_id).steps == 0


def test_every_play_answer_conforms_to_its_published_schema(api):
    import jsonschema

    from tests.api.test_submission_schema import _json_schema

    schema = api.get("/api/v1/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]

    def problems(component: str, body: dict) -> list[str]:
        validator = jsonschema.Draft7Validator(_json_schema(components[component], components))
        return [f"{component}: {error.message}" for error in validator.iter_errors(body)]

    opened = open_card(api).json()
    card_id = opened["id"]
    answers = [
        ("CardSchema", opened),
        ("EpisodeSchema", reset(api, card_id, "corridor").json()),
        ("EpisodeSchema", act(api, card_id, "corridor", "right").json()),
        ("EpisodeSchema", api.get(f"{OPEN}{card_id}/levels/corridor").json()),
        ("CardSchema", api.get(f"{OPEN}{card_id}/").json()),
        ("CardSchema", api.post(f"{OPEN}{card_id}/close").json()),
        ("ScorecardList", api.get(OPEN).json()),
    ]
    assert [problem for component, body in answers for problem in problems(component, body)] == []
    assert answers[2][1]["last"] == {"action": "right", "result": "moved"}
    assert answers[5][1]["success_rate"] == 0.0


def test_an_action_form_naming_its_action_twice_is_refused_and_plays_nothing(api):
    card_id = open_card(api).json()["id"]
    assert reset(api, card_id, "corridor").status_code == 200
    response = api.post(
        f"/api/v1/scorecards/{card_id}/levels/corridor/actions", {"action": ["left", "right"]}, format="multipart"
    )
    assert error(response) == (400, "invalid")
    assert response.json()["error"]["message"] == "action: given 2 times; send it once."
    assert CardEpisode.objects.get(card_id=card_id).steps == 0
