"""examples/play_sokoban.py against a live server: the reference client plays a card end to end.

With the live services configured (PostgreSQL, Redis) the server is a gunicorn
subprocess on a free loopback port over the test database, and a real Celery
worker closes an idle card through the beat-scheduled task; without them it is
pytest-django's in-process live server on SQLite.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from leaderboard.models import ScorecardRun
from leaderboard.models.races import ScorecardStanding
from submissions.api_keys import api_key_create
from submissions.models import Card, CardEpisode, CardMove
from tests.conftest import _test_database_url, services_missing
from tests.schemes.conftest import write_play_manifest

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "examples" / "play_sokoban.py"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def live_url(request, transactional_db, settings) -> Iterator[str]:
    if services_missing() is not None:
        yield request.getfixturevalue("live_server").url
        return
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard.site.settings",
        "DATABASE_URL": _test_database_url(),
        "DB_CONN_MAX_AGE": "0",
        "SECRET_KEY": settings.SECRET_KEY,
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
    }
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "leaderboard.site.wsgi:application",
         "--bind", f"127.0.0.1:{port}",
         "--workers", "2", "--log-level", "warning"],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=2).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("gunicorn did not answer within 60 s") from None
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def released(transactional_db, tmp_path):
    from leaderboard.services.release_sync import release_sync

    write_play_manifest(tmp_path / "play")
    return release_sync(manifest=tmp_path / "play").release


def run_client(url: str, key: str, *extra: str) -> dict:
    completed = subprocess.run(
        [sys.executable, str(CLIENT), "--server", url, "--benchmark", "sokoban-play", *extra],
        env={"PODIUM_API_KEY": key, "PATH": os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


@pytest.mark.django_db(transaction=True)
def test_the_reference_client_plays_a_card_that_lands_on_the_board(live_url, released, make_user):
    user = make_user("client-player")
    key = api_key_create(user=user, name="reference client").plaintext
    card = run_client(live_url, key, "--agent", "Reference BFS", "--version", "1.0", "--nodes", "5000")
    # Every level of the play set is small enough for the client's BFS: all solved optimally.
    assert (card["status"], card["episodes"], card["solved"], card["move_efficiency"]) == ("closed", 5, 5, 1.0)
    run = ScorecardRun.objects.get(card__pk=card["id"])
    assert (run.solved, run.total_actions) == (5, card["total_actions"])
    assert CardMove.objects.filter(episode__card_id=card["id"]).exclude(action="reset").count() == run.total_actions
    assert ScorecardStanding.objects.get(release=released).scorecard == run


@pytest.mark.django_db(transaction=True)
def test_a_client_with_no_search_budget_plays_randomly_and_still_gets_a_measured_card(live_url, released, make_user):
    key = api_key_create(user=make_user("random-player"), name="random").plaintext
    card = run_client(live_url, key, "--agent", "Random Walker", "--nodes", "0", "--levels", "2", "--seed", "7")
    episodes = list(CardEpisode.objects.filter(card_id=card["id"]))
    assert len(episodes) == 2 and all(episode.done for episode in episodes)
    assert card["total_actions"] == sum(episode.steps for episode in episodes)
    assert card["episodes"] == 5


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_closes_an_idle_card_through_the_scheduled_task(released, make_user, celery_worker):
    from submissions.services.cards import card_open
    from submissions.tasks import close_idle_scorecards

    card = card_open(user=make_user("idler"), api_key=None, benchmark_slug="sokoban-play", agent_name="Idler",
                     agent_version="1")  # fmt: skip
    Card.objects.filter(pk=card.pk).update(last_activity_at=timezone.now() - dt.timedelta(days=1))
    close_idle_scorecards.delay()
    deadline = time.monotonic() + 60
    while Card.objects.get(pk=card.pk).status != "closed":
        assert time.monotonic() < deadline, celery_worker.log()
        time.sleep(0.2)
    assert (Card.objects.get(pk=card.pk).closed_by, ScorecardRun.objects.get(card=card).episodes) == ("expiry", 5)
