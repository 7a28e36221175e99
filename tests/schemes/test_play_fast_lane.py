"""The play API's fast lane (submissions.api.scorecards.level_action and the unlocked
action in submissions.services.cards): on PostgreSQL the usual action is answered
without DRF or a lock; it must answer exactly what the DRF view answers, and every
request it cannot serve must reach that view untouched."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from submissions.api_keys import api_key_create, api_key_revoke, failed_attempts, failure_ident
from submissions.models import ApiKey, CardEpisode, CardMove
from submissions.services import cards as card_services
from tests.schemes.test_play_api import act, assert_each_action_counted_once, client_for, error, open_card, reset

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the fast lane serves PostgreSQL; elsewhere every action is locked"
)


def action_path(card_id: int, level: str = "room") -> str:
    return f"/api/v1/scorecards/{card_id}/levels/{level}/actions"


@pytest.fixture
def player(make_user):
    return make_user("player")


@pytest.fixture
def key(player, play_release) -> str:
    return api_key_create(user=player, name="player").plaintext


@pytest.fixture
def api(key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Api-Key {key}")
    return client


@pytest.fixture
def lane(monkeypatch) -> list[bool]:
    """One entry per unlocked attempt: True when it wrote the action, False when it handed over."""
    taken: list[bool] = []
    real = card_services.card_episode_act_unlocked

    def spy(**kwargs):
        view = real(**kwargs)
        taken.append(view is not None)
        return view

    monkeypatch.setattr(card_services, "card_episode_act_unlocked", spy)
    return taken


def started_card(api, level: str = "room") -> int:
    card_id = open_card(api).json()["id"]
    assert reset(api, card_id, level).status_code == 200
    return card_id


def steps_of(card_id: int) -> int:
    return CardEpisode.objects.get(card_id=card_id).steps


def test_the_fast_lane_answers_exactly_what_the_drf_view_answers(api, lane, monkeypatch):
    import submissions.api.scorecards as play

    fast_card, drf_card = started_card(api), started_card(api)
    fast = act(api, fast_card, "room", "up")
    assert lane == [True]
    monkeypatch.setattr(play, "_fast_action", lambda *args: None)
    slow = act(api, drf_card, "room", "up")
    assert lane == [True]  # the second went through DRF's view only
    assert slow.status_code == fast.status_code == 200
    assert slow.json() == fast.json()
    assert dict(slow.headers) == dict(fast.headers)
    assert steps_of(fast_card) == steps_of(drf_card) == 1


def test_a_stale_read_writes_nothing_and_hands_over(api, player, key):
    card_id = started_card(api)
    read = card_services.card_play_read(key_prefix=key.split("_")[1], card_id=card_id, level_id="room")
    assert read is not None and read.steps == 0
    assert act(api, card_id, "room", "up").status_code == 200  # another request moves first
    assert card_services.card_episode_act_unlocked(read=read, action="left") is None
    episode = CardEpisode.objects.get(card_id=card_id)
    assert episode.steps == 1
    assert list(episode.moves.order_by("seq").values_list("action", flat=True)) == ["reset", "up"]


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_restart_racing_a_fast_lane_action_waits_for_it_and_the_action_hands_over(make_user, tmp_path, monkeypatch):
    """A restart read its episode without a lock while an action through the unlocked fast lane
    wrote it: the restart then logged its reset under the action's number (IntegrityError,
    a 500). The restart now locks the episode after the card, so the lane's compare-and-set
    waits for it and writes nothing (its request takes the locked path)."""
    import threading
    import time

    from leaderboard.services.release_sync import release_sync
    from submissions.services import cards as card_services
    from tests.schemes.conftest import write_play_manifest

    write_play_manifest(tmp_path / "play")
    release_sync(manifest=tmp_path / "play")
    user = make_user("racer")
    prefix = api_key_create(user=user, name="k").plaintext.split("_")[1]
    card = card_services.card_open(
        user=user, api_key=None, benchmark_slug="sokoban-play", agent_name="Racer", agent_version="1"
    )
    card_services.card_episode_reset(card_id=card.pk, user=user, level_id="room")
    outcome: list[object] = []

    def fast_action() -> None:
        try:
            read = card_services.card_play_read(key_prefix=prefix, card_id=card.pk, level_id="room")
            outcome.append(card_services.card_episode_act_unlocked(read=read, action="up"))
        except BaseException as exc:  # pragma: no cover - reported below
            outcome.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=fast_action)
    real_end_unfinished = card_services._end_unfinished

    def end_unfinished(card, **kwargs):
        # The restart has read its episode: the fast lane's action lands now, or waits for
        # the restart's lock (seen in pg_stat_activity).
        thread.start()
        deadline = time.monotonic() + 10
        while thread.is_alive() and time.monotonic() < deadline:
            with connection.cursor() as cursor:
                # pg_stat_activity is read once per transaction unless its snapshot is cleared.
                cursor.execute("SELECT pg_stat_clear_snapshot()")
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database()"
                )
                if cursor.fetchone()[0]:
                    break
            time.sleep(0.01)
        return real_end_unfinished(card, **kwargs)

    monkeypatch.setattr(card_services, "_end_unfinished", end_unfinished)
    view = card_services.card_episode_reset(card_id=card.pk, user=user, level_id="room")
    thread.join()
    assert outcome == [None]  # the lane wrote nothing and would hand the request over
    assert (view.steps, view.restarts) == (0, 1)
    episode = CardEpisode.objects.get(card_id=card.pk)
    assert (episode.steps, episode.restarts, episode.done) == (0, 1, False)
    assert list(episode.moves.order_by("seq").values_list("seq", "step", "action")) == [
        (1, 0, "reset"),
        (2, 0, "reset"),
    ]


def test_a_read_names_only_the_keys_owners_started_episode(api, key, make_user, play_release):
    card_id = started_card(api)
    prefix = key.split("_")[1]
    assert card_services.card_play_read(key_prefix=prefix, card_id=card_id, level_id="corridor") is None
    assert card_services.card_play_read(key_prefix="0" * 12, card_id=card_id, level_id="room") is None
    other_prefix = api_key_create(user=make_user("other"), name="o").plaintext.split("_")[1]
    assert card_services.card_play_read(key_prefix=other_prefix, card_id=card_id, level_id="room") is None


# Each case: how the request differs from the play loop's usual one, and what DRF's view
# answers it. None of them may be written by the fast lane.
HANDED_OVER = [
    ("format_query", {"path_suffix": "?format=json"}, 200),
    ("html_accept", {"HTTP_ACCEPT": "text/html"}, (406, "not_acceptable")),
    ("form_body", {"as_form": True}, 200),
    ("long_body", {"data": {"action": "up", "note": "x" * 300}}, (400, "invalid")),
    ("extra_field", {"data": {"action": "up", "n": 1}}, (400, "invalid")),
    ("invalid_action", {"data": {"action": "jump"}}, (400, "invalid")),
]


@pytest.mark.parametrize(("case", "change", "expected"), HANDED_OVER, ids=[case for case, _, _ in HANDED_OVER])
def test_a_request_the_fast_lane_does_not_serve_gets_the_drf_views_answer(api, lane, case, change, expected):
    card_id = started_card(api)
    path = action_path(card_id) + change.get("path_suffix", "")
    data = change.get("data", {"action": "up"})
    extra = {name: value for name, value in change.items() if name.startswith("HTTP_")}
    form = {} if change.get("as_form") else {"format": "json"}
    response = api.post(path, data, **form, **extra)
    assert lane == []
    if expected == 200:
        assert response.status_code == 200 and response.json()["steps"] == 1
        assert steps_of(card_id) == 1
    else:
        assert error(response) == expected
        assert steps_of(card_id) == 0


# A body the usual one plus a field DRF's parser refuses, and the code it refuses it with.
REFUSED_BODIES = [
    (b'{"action": "up", "note": 1e400}', (400, "non_finite_number")),
    (b'{"action": "up", "note": "\\u0000"}', (400, "invalid_text")),
    (b'{"action": "up", "note": "\\ud800"}', (400, "invalid_text")),
]


@pytest.mark.parametrize(("raw", "expected"), REFUSED_BODIES, ids=["overflow", "nul", "lone_surrogate"])
def test_a_body_the_api_parser_refuses_is_refused_and_not_played_on_either_path(api, lane, raw, expected, monkeypatch):
    """The fast lane read these short bodies itself and played them (200, counted); DRF's view
    refuses them (400, not counted). One error contract: the lane hands them to the view."""
    import submissions.api.scorecards as play_api

    card_id = open_card(api).json()["id"]
    reset(api, card_id, "room")
    path = f"/api/v1/scorecards/{card_id}/levels/room/actions"
    assert error(api.generic("POST", path, raw, content_type="application/json")) == expected
    assert lane == []  # never offered to the unlocked write
    monkeypatch.setattr(play_api, "_fast_action", lambda *args: None)
    assert error(api.generic("POST", path, raw, content_type="application/json")) == expected
    episode = CardEpisode.objects.get(card_id=card_id)
    assert (episode.steps, episode.done) == (0, False)
    assert list(CardMove.objects.filter(episode=episode).values_list("action", flat=True)) == ["reset"]


def test_a_revoked_key_is_refused_by_the_drf_view_and_nothing_is_played(api, lane, player):
    card_id = started_card(api)
    api_key_revoke(user=player, key_id=ApiKey.objects.get(user=player).pk)
    assert error(act(api, card_id, "room", "up")) == (401, "authentication_failed")
    assert lane == [] and steps_of(card_id) == 0


def test_a_key_of_an_inactive_user_is_refused_and_nothing_is_played(api, lane, player):
    card_id = started_card(api)
    player.is_active = False
    player.save()
    assert error(act(api, card_id, "room", "up")) == (401, "authentication_failed")
    assert lane == [] and steps_of(card_id) == 0


def test_a_wrong_secret_for_the_owners_prefix_counts_one_failure(api, lane, key):
    card_id = started_card(api)
    wrong = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    response = APIClient().post(
        action_path(card_id), {"action": "up"}, format="json", HTTP_AUTHORIZATION=f"Api-Key {wrong}"
    )
    assert error(response) == (401, "authentication_failed")
    assert response["WWW-Authenticate"] == "Api-Key"
    assert failed_attempts(f"{key.split('_')[1]}@127.0.0.1") == 1  # once, not once per path
    assert lane == [] and steps_of(card_id) == 0


def test_a_throttled_key_is_refused_even_with_the_right_secret(api, lane, key, settings):
    from rest_framework.test import APIRequestFactory

    settings.PODIUM_API_KEY_FAILURE_LIMIT = 1
    card_id = started_card(api)
    wrong = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    APIClient().post(action_path(card_id), {"action": "up"}, format="json", HTTP_AUTHORIZATION=f"Api-Key {wrong}")
    assert failed_attempts(failure_ident(APIRequestFactory().get("/"), key)) == 1
    response = act(api, card_id, "room", "up")
    assert error(response) == (429, "api_key_attempts_throttled")
    assert lane == [] and steps_of(card_id) == 0


def test_an_idle_or_closed_card_is_handed_to_the_locked_path(api, lane):
    import datetime as dt

    from django.utils import timezone

    from submissions.models import Card

    idle = started_card(api)
    Card.objects.filter(pk=idle).update(last_activity_at=timezone.now() - dt.timedelta(hours=2))
    assert error(act(api, idle, "room", "up")) == (409, "card_closed")
    closed = started_card(api)
    assert api.post(f"/api/v1/scorecards/{closed}/close").status_code == 200
    assert error(act(api, closed, "room", "up")) == (409, "card_closed")
    assert lane == [False, False]  # read, then handed over unwritten
    assert CardMove.objects.exclude(action="reset").count() == 0


def test_a_card_on_a_revealed_release_is_handed_to_the_locked_path(api, lane, play_release):
    card_id = started_card(api)
    play_release.reveal_hidden_levels = True
    play_release.save(update_fields=["reveal_hidden_levels"])
    assert error(act(api, card_id, "room", "up")) == (409, "levels_revealed")
    assert lane == [False]  # read, then handed over unwritten
    assert steps_of(card_id) == 0 and CardMove.objects.exclude(action="reset").count() == 0


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_concurrent_actions_through_the_fast_lane_are_each_applied_once(make_user, tmp_path, lane):
    import threading

    from leaderboard.services.release_sync import release_sync
    from tests.schemes.conftest import write_play_manifest

    write_play_manifest(tmp_path / "play")
    release_sync(manifest=tmp_path / "play")
    user = make_user("racer")
    client = client_for(user)
    cards = [started_card(client) for _ in range(2)]
    errors: list[BaseException] = []

    def send(card_id: int) -> None:
        mine = APIClient()
        mine.credentials(**client._credentials)
        try:
            for _ in range(7):
                # "up" from the start is a step onto floor, then bumps into the top wall: never done early.
                response = act(mine, card_id, "room", "up")
                assert response.status_code == 200, response.json()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=send, args=(card_id,)) for card_id in cards for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert lane.count(True) > 0  # the lane served some; a lost race fell back to the lock
    for card_id in cards:
        assert_each_action_counted_once(card_id, 28)  # 4 threads x 7 actions


@pytest.mark.parametrize("length", ["\u00b2", "\u0663", "0", "-1"])
def test_a_content_length_that_is_not_a_small_ascii_number_leaves_the_fast_lane_without_a_500(api, lane, length):
    # str.isdigit() accepts "²" and Arabic-Indic digits, which int() refuses: a 500 where the
    # server passes such a header through (runserver does).
    import submissions.api.scorecards as play

    assert play._short_body(length) is False
    card_id = started_card(api)
    response = api.post(
        action_path(card_id), b'{"action": "up"}', content_type="application/json", CONTENT_LENGTH=length
    )
    assert response.status_code < 500 and lane == []


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("by", ["a reset of another level", "the close"])
def test_an_episode_ended_while_a_move_held_its_row_ends_after_that_move(make_user, tmp_path, by):
    """A reset (of another level) or a close ends the card's unfinished episode. An action through
    the fast lane holds that episode's row without the card's lock; the reset read its clock
    before waiting for the row, so the episode's ended_at came before the move's logged time
    (and the close's closed_at likewise). Both now read the clock once the episode is locked."""
    import threading

    from django.db import transaction as db_transaction

    from leaderboard.services.release_sync import release_sync
    from submissions.services import cards as card_services
    from tests.schemes.conftest import write_play_manifest

    write_play_manifest(tmp_path / "play")
    release_sync(manifest=tmp_path / "play")
    user = make_user("racer")
    card = card_services.card_open(
        user=user, api_key=None, benchmark_slug="sokoban-play", agent_name="Racer", agent_version="1"
    )
    card_services.card_episode_reset(card_id=card.pk, user=user, level_id="room")
    held, moved_at = threading.Event(), []

    def hold_the_episode() -> None:
        # What a fast-lane action does to its row: lock it by writing, stamp, commit (here slowly).
        try:
            with db_transaction.atomic():
                CardEpisode.objects.filter(card_id=card.pk, done=False).select_for_update().get()
                held.set()
                time.sleep(0.3)
                moved_at.append(timezone.now())
        finally:
            connection.close()

    thread = threading.Thread(target=hold_the_episode)
    thread.start()
    assert held.wait(10)
    if by == "the close":
        card_services.card_close(card_id=card.pk, user=user)
    else:
        card_services.card_episode_reset(card_id=card.pk, user=user, level_id="corridor")
    thread.join()
    ended = CardEpisode.objects.get(card_id=card.pk, level__level_id="room")
    assert ended.done and ended.ended_at >= moved_at[0]
    if by == "the close":
        card.refresh_from_db()
        assert card.closed_at >= moved_at[0]
    else:
        started = CardEpisode.objects.get(card_id=card.pk, level__level_id="corridor")
        assert started.started_at >= moved_at[0]
