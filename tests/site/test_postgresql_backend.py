"""The PostgreSQL backend's health check (leaderboard/site/postgresql): no round trip on a
healthy kept connection, and a connection the server ended is found unusable."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection, connections

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL backend's own check"),
]


def _other_connection() -> psycopg.Connection:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return psycopg.connect(**params, autocommit=True)


def _statements_sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    sent: list[str] = []
    real = psycopg.Cursor.execute

    def execute(self, query, *args, **kwargs):
        sent.append(str(query))
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    return sent


def test_the_site_runs_on_the_backend_whose_health_check_asks_the_kernel_first():
    assert type(connections["default"]).__module__ == "leaderboard.site.postgresql.base"
    assert connection.health_check_enabled


def test_an_idle_kept_connection_is_usable_without_a_statement(monkeypatch):
    connection.ensure_connection()
    sent = _statements_sent(monkeypatch)
    assert connection.is_usable() is True
    assert sent == []


def test_a_connection_the_server_ended_is_unusable_and_replaced_before_use():
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with _other_connection() as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
        # The server's message and close arrive at once; wait until it is gone on its side.
        for _ in range(100):
            if other.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone() == (0,):
                break
            time.sleep(0.02)
    assert connection.is_usable() is False
    # What a request does first: the dead connection is closed and the next query reconnects.
    connection.health_check_done = False
    connection.close_if_health_check_failed()
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
    assert connection.connection.info.backend_pid != pid


def test_a_connection_with_an_unasked_message_waiting_is_asked_with_a_statement(monkeypatch):
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("LISTEN podium_health_probe")
    try:
        with _other_connection() as other:
            other.execute("NOTIFY podium_health_probe")
        sent = _statements_sent(monkeypatch)
        for _ in range(100):  # the notification reaches the socket shortly
            if connection.is_usable() is True and sent:
                break
            time.sleep(0.02)
        assert sent == ["SELECT 1"]
    finally:
        with connection.cursor() as cursor:
            cursor.execute("UNLISTEN *")
