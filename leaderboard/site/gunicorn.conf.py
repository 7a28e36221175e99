"""gunicorn configuration: `gunicorn -c leaderboard/site/gunicorn.conf.py leaderboard.site.wsgi`.

Every value can be changed from the environment (docs/deploy.md):

PODIUM_BIND            where to listen (default 127.0.0.1:8000: only the TLS proxy on
                       this host reaches it; never expose gunicorn itself)
WEB_CONCURRENCY        worker processes (default 2 x cores + 1, at most 8)
GUNICORN_TIMEOUT       seconds a request may take before its worker is recycled (60)
FORWARDED_ALLOW_IPS    proxies whose X-Forwarded-* headers gunicorn believes (127.0.0.1)

Why these values: Podium's requests are short database reads and streamed uploads
(256 MiB at most) that the proxy buffers before passing on, so sync workers suffice;
``max_requests`` recycles a worker now and then so a slow leak cannot grow forever;
the access log goes to stdout in one line per request (Django's own log is on stderr).
"""

from __future__ import annotations

import multiprocessing
import os


def _int(name: str, default: int, minimum: int = 1) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r}: expected a whole number") from None
    if value < minimum:
        raise SystemExit(f"{name}={raw!r}: expected a whole number >= {minimum}")
    return value


wsgi_app = "leaderboard.site.wsgi:application"
bind = [address.strip() for address in os.environ.get("PODIUM_BIND", "127.0.0.1:8000").split(",") if address.strip()]
workers = _int("WEB_CONCURRENCY", min(8, multiprocessing.cpu_count() * 2 + 1))
worker_class = "sync"
timeout = _int("GUNICORN_TIMEOUT", 60)
graceful_timeout = 30
keepalive = 5
max_requests = 2000
max_requests_jitter = 200
# Request-line and header bounds (gunicorn's defaults, stated): a client cannot make
# a worker hold an unbounded header.
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190

# The TLS proxy in front sets X-Forwarded-Proto (and X-Forwarded-For); gunicorn trusts
# them only from these addresses. Django trusts X-Forwarded-Proto through
# SECURE_PROXY_SSL_HEADER, so the proxy must overwrite (never pass on) whatever a
# client sent in that header, and gunicorn must be reachable only through it.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
secure_scheme_headers = {"X-FORWARDED-PROTO": "https"}

accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# One line per request: time, client (as the proxy forwarded it), request line, status,
# bytes, duration in microseconds, user agent.
access_log_format = '%(t)s access %({x-forwarded-for}i)s "%(r)s" %(s)s %(B)s %(D)sus "%(a)s"'
proc_name = "podium-web"

# gunicorn 27's control socket (a runtime admin interface Podium never uses) sits at one path per
# user (~/.gunicorn/gunicorn.ctl): two sites, or a site and a test run, on one host shared it.
control_socket_disable = True
