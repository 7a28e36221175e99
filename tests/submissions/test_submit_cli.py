"""``python -m submissions.bundle submit`` / ``status`` end to end: the command runs in a child
process *without Django importable* against a live Podium server (pytest-django's live server:
real HTTP on loopback, in-process verification), configured by PODIUM_URL and PODIUM_API_KEY."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leaderboard.models import Run
from submissions.models import Submission
from tests.servers import REPO_ROOT

# Runs the tool with Django made unimportable: the client must need the standard library only.
NO_DJANGO = (
    "import sys; sys.modules['django'] = None; from submissions.bundle.cli import main; sys.exit(main(sys.argv[1:]))"
)


def tool(*args: str, url: str, key: str = "", timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PODIUM_URL": url, "PODIUM_API_KEY": key}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "-c", NO_DJANGO, *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def key(owner, site_identity):
    from submissions.api_keys import api_key_create

    return api_key_create(user=owner, name="cli").plaintext


@pytest.fixture
def bundle_dir(tmp_path):
    from submissions.bundle.demo import write_paper_gap_bundle_dir

    def make(**kwargs) -> Path:
        return write_paper_gap_bundle_dir(tmp_path / f"run-{len(list(tmp_path.iterdir()))}", **kwargs)

    return make


@pytest.mark.django_db(transaction=True)
def test_submit_seals_uploads_waits_and_prints_the_verdict(live_server, demo_release, key, bundle_dir, owner):
    result = tool(
        "submit", str(bundle_dir()), "--benchmark", "ale-robotics", "--wait", "60", url=live_server.url, key=key
    )
    assert result.returncode == 0, result.stderr
    assert "uploading" in result.stderr and "(100%)" in result.stderr
    submission = Submission.objects.get(submitter=owner)
    assert (submission.status, submission.verdict) == ("done", "validated")
    assert f"submission {submission.pk}: done validated" in result.stdout
    assert f"run: {Run.objects.get(submission=submission).pk}" in result.stdout

    status = tool("status", str(submission.pk), url=live_server.url, key=key)
    assert status.returncode == 0 and f"submission {submission.pk}: done validated" in status.stdout


@pytest.mark.django_db(transaction=True)
def test_a_mismatch_prints_the_diff_and_exits_1(live_server, demo_release, key, bundle_dir):
    # No --benchmark: the manifest's own benchmark is used.
    result = tool(
        "submit", str(bundle_dir(tamper="claimed_aggregate")), "-q",
        url=live_server.url, key=key,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "done mismatch" in result.stdout and "aggregates.overall" in result.stdout
    assert "uploading" not in result.stderr  # --quiet


@pytest.mark.django_db(transaction=True)
def test_a_wrong_key_is_refused_with_the_sites_code(live_server, demo_release, bundle_dir, site_identity):
    result = tool("submit", str(bundle_dir()), "--benchmark", "ale-robotics", url=live_server.url, key="pdm_nope_x")
    assert result.returncode == 5
    assert "[authentication_failed]" in result.stderr and "Traceback" not in result.stderr
    assert not Submission.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_another_accounts_submission_is_not_found(live_server, demo_release, key, bundle_dir, make_user):
    from submissions.api_keys import api_key_create

    tool("submit", str(bundle_dir()), "--benchmark", "ale-robotics", "-q", url=live_server.url, key=key)
    submission = Submission.objects.get()
    other = api_key_create(user=make_user("other"), name="x").plaintext
    result = tool("status", str(submission.pk), url=live_server.url, key=other)
    assert result.returncode == 5 and "[not_found]" in result.stderr


def test_missing_configuration_is_a_local_error(tmp_path):
    result = tool("status", "00000000-0000-0000-0000-000000000000", url="", key="")
    assert result.returncode == 4 and "PODIUM_URL" in result.stderr
    result = tool("status", "00000000-0000-0000-0000-000000000000", url="http://127.0.0.1:9", key="")
    assert result.returncode == 4 and "PODIUM_API_KEY" in result.stderr


def test_an_unreachable_site_is_exit_5_without_a_traceback(tmp_path):
    result = tool("status", "00000000-0000-0000-0000-000000000000", url="http://127.0.0.1:9", key="pdm_x_y")
    assert result.returncode == 5 and "cannot reach" in result.stderr and "Traceback" not in result.stderr


def test_not_a_bundle_directory_is_a_local_error(tmp_path):
    result = tool("submit", str(tmp_path), "--benchmark", "x", url="http://127.0.0.1:9", key="pdm_x_y")
    assert result.returncode == 4 and "no manifest.json" in result.stderr


def test_a_malformed_submission_id_is_a_local_error():
    result = tool("status", "not-a-uuid", url="http://127.0.0.1:9", key="pdm_x_y")
    assert result.returncode == 4 and "not a submission id" in result.stderr


@contextlib.contextmanager
def _answers(sequence):
    """A loopback server answering each GET with the next (status, headers, JSON body); yields its URL."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    remaining = list(sequence)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            status, headers, body = remaining.pop(0) if remaining else sequence[-1]
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_waiting_for_a_verdict_waits_out_a_503_as_the_site_asks():
    from submissions.bundle import client

    unavailable = (503, {"Retry-After": "0"}, {"error": {"code": "database_unavailable", "message": "back soon"}})
    done = (200, {}, {"id": "x", "status": "done", "verdict": "validated"})
    with _answers([unavailable, unavailable, done]) as url:
        assert client._wait(url, "pdm_k", "x", seconds=10)["verdict"] == "validated"


def test_waiting_for_a_verdict_waits_out_a_429_as_the_site_asks():
    # The account's request rate: the tool exited 5 on the first throttled poll.
    from submissions.bundle import client

    throttled = (429, {"Retry-After": "0"}, {"error": {"code": "throttled", "message": "available in 0 seconds"}})
    done = (200, {}, {"id": "x", "status": "done", "verdict": "validated"})
    with _answers([throttled, done]) as url:
        assert client._wait(url, "pdm_k", "x", seconds=10)["verdict"] == "validated"


def test_waiting_for_a_verdict_gives_up_on_503s_at_its_deadline_and_on_other_errors_at_once():
    from submissions.bundle import client

    unavailable = (503, {"Retry-After": "0.1"}, {"error": {"code": "database_unavailable", "message": "back soon"}})
    with _answers([unavailable]) as url, pytest.raises(client.ClientError, match="database_unavailable"):
        client._wait(url, "pdm_k", "x", seconds=0.5)
    forbidden = (404, {}, {"error": {"code": "not_found", "message": "no such submission"}})
    with _answers([forbidden]) as url, pytest.raises(client.ClientError, match="not_found"):
        client._wait(url, "pdm_k", "x", seconds=30)
