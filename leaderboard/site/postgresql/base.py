"""Django's PostgreSQL backend, with a kept connection's health checked by the kernel first.

With ``CONN_HEALTH_CHECKS`` (settings: a kept connection that PostgreSQL dropped must not
answer a request 503), Django checks every kept connection once per request with a
``SELECT 1``: a round trip, and a statement the database parses and runs, on every request
that touches the database (bench/play_bench.py: a third of the play action's statements).

A connection PostgreSQL ends -- a restart, a failover, ``pg_terminate_backend`` -- is ended
by the server with an error message and then the socket's close, both of which make the
socket readable. An idle connection between requests has nothing to read otherwise: every
answer to an earlier statement was read whole. So an idle connection whose socket has nothing
waiting is in use as Django left it, and only one with something waiting (an end, or a
rarer unasked message: a notice, a changed server parameter) is asked with Django's own
``SELECT 1``. What neither check catches quickly is a peer that vanished without a word (a
partitioned host); libpq's keepalives and ``tcp_user_timeout`` bound that (settings).
"""

from __future__ import annotations

import select

import psycopg
from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        conn = self.connection
        if conn is None or conn.closed:
            return False
        pgconn = conn.pgconn
        if pgconn.status != pq.ConnStatus.OK or pgconn.transaction_status != pq.TransactionStatus.IDLE:
            # Mid-transaction or in an unknown state: not the between-requests case this
            # shortcut reasons about; Django's round trip decides.
            return bool(super().is_usable())
        try:
            poller = select.poll()
            poller.register(pgconn.socket, select.POLLIN | select.POLLPRI)
            waiting = poller.poll(0)
        except (OSError, ValueError, psycopg.Error):  # libpq has no socket for it any more
            return False
        # poll() reports a hang-up or an error whether or not they were asked for.
        return True if not waiting else bool(super().is_usable())
