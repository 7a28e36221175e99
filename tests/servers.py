"""Real server processes for the deployment, multi-host and degradation tests.

A private ``redis-server`` on a free loopback port (a test that stops Redis stops its
own, never the shared one on 6379) and the web process under gunicorn with the
committed config (leaderboard/site/gunicorn.conf.py). Every process is started in a new
session and stopped by its own pid.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
READY_TIMEOUT_SECONDS = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stop(process: subprocess.Popen[bytes] | None, *, kill: bool = False) -> None:
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


class PrivateRedis:
    """``redis-server`` on 127.0.0.1:<free port>, no persistence; kill() it to simulate an outage."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> PrivateRedis:
        server = shutil.which("redis-server")
        if server is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        log = (self.workdir / f"redis-{self.port}.log").open("ab")
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"private redis-server on port {self.port} did not answer")

    def kill(self) -> None:
        """SIGKILL: the outage, without a goodbye."""
        _stop(self.process, kill=True)
        self.process = None

    def freeze(self) -> None:
        """SIGSTOP: a Redis that stops answering without refusing (a frozen host, a partition):
        the kernel still accepts connections, nothing ever replies."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


class WebServer:
    """The web process: gunicorn with leaderboard/site/gunicorn.conf.py, on a free loopback port."""

    def __init__(self, log_dir: Path, env: dict[str, str], *, workers: int = 1) -> None:
        self.port = free_port()
        self.log_path = log_dir / f"web-{self.port}.log"
        self.env = {**env, "PODIUM_BIND": f"127.0.0.1:{self.port}", "WEB_CONCURRENCY": str(workers)}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> WebServer:
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [str(BIN / "gunicorn"), "-c", "leaderboard/site/gunicorn.conf.py"],
            cwd=REPO_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.base}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"gunicorn did not answer /healthz in {READY_TIMEOUT_SECONDS}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        _stop(self.process)
        self.process = None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a redirect is the answer under test, not something to follow


_OPENER = urllib.request.build_opener(_NoRedirect)


def request(
    method: str, url: str, *, headers: dict[str, str] | None = None, body: bytes | None = None, timeout: float = 30
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one HTTP request; an error status is an answer, not an exception."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with _OPENER.open(req, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]) -> tuple[str, bytes]:
    """(content type, body) of a multipart/form-data request."""
    boundary = f"podium-test-{os.urandom(8).hex()}"
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, (filename, data) in files.items():
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        )
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return f"multipart/form-data; boundary={boundary}", b"".join(parts)


def database_url() -> str:
    """DATABASE_URL of the database this test process uses (pytest-django's test_<name>)."""
    from urllib.parse import quote

    from django.db import connection

    params = connection.settings_dict
    user = quote(params.get("USER") or "")
    password = f":{quote(params['PASSWORD'])}" if params.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    port = f":{params['PORT']}" if params.get("PORT") else ""
    return f"postgres://{auth}{params.get('HOST') or '127.0.0.1'}{port}/{params['NAME']}"


def site_env(var_dir: Path, **overrides: str) -> dict[str, str]:
    """The environment of a Podium process on this test's database, site key and queue.

    DEBUG is off, as in production, so an error would show the error page, not a traceback.
    """
    from django.conf import settings

    from leaderboard.site.celery import app

    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "leaderboard.site.settings",
        "DATABASE_URL": database_url(),
        "DB_CONN_MAX_AGE": "0",
        "CELERY_QUEUE": app.conf.task_default_queue,
        "SECRET_KEY": settings.SECRET_KEY,
        "PODIUM_SITE_KEYS": settings.PODIUM_SITE_KEYS,
        "PODIUM_VAR_DIR": str(var_dir),
        "MEDIA_ROOT": str(var_dir / "media"),
        "DEBUG": "0",
        **overrides,
    }
