"""``submit`` and ``status``: the submitter's command line against a Podium site (the evalai-cli
experience), standard library HTTP only, so it runs anywhere the bundle tool runs (no Django).

Configuration comes from the environment:

* ``PODIUM_URL``: the site, e.g. ``https://podium.example.org`` (required)
* ``PODIUM_API_KEY``: an API key from the site's API-keys page (required)

``submit DIR [--benchmark SLUG]`` (default: the manifest's benchmark) fetches the site's
current age key from ``/api/v1/site-key/``, seals DIR to it (writing the members map, like
``seal``), uploads it to ``/api/v1/submissions/``
with a progress line on stderr, waits for the verdict (``--wait SECONDS``, 0 to return at once)
and prints it with the claimed-versus-recomputed diff. ``status ID`` prints one submission.

Exit codes (as the other commands): 0 validated or attested, 1 mismatch, 3 rejected, 4 local
problem, 5 the site refused the request or could not be reached, 6 no verdict within --wait.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from submissions.bundle.seal import seal_dir

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_REJECTED = 3
EXIT_LOCAL = 4
EXIT_SERVER = 5
EXIT_PENDING = 6

# Upload chunk: small enough for a smooth progress line, large enough not to matter for speed.
CHUNK_BYTES = 256 * 1024
POLL_SECONDS = 2.0
HTTP_TIMEOUT_SECONDS = 60
VERDICT_EXIT = {"validated": EXIT_OK, "attested": EXIT_OK, "mismatch": EXIT_MISMATCH, "rejected": EXIT_REJECTED}


class ClientError(Exception):
    """A failed request or bad configuration; ``exit_code`` says which."""

    def __init__(self, message: str, exit_code: int = EXIT_SERVER, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        # Seconds the site asked to wait (a 503 while a service it needs is away); None otherwise.
        self.retry_after = retry_after


def _config() -> tuple[str, str]:
    url = os.environ.get("PODIUM_URL", "").strip().rstrip("/")
    key = os.environ.get("PODIUM_API_KEY", "").strip()
    if not url.startswith(("http://", "https://")):
        raise ClientError("set PODIUM_URL to the site's address, e.g. https://podium.example.org", EXIT_LOCAL)
    if not key:
        raise ClientError("set PODIUM_API_KEY to an API key from the site's API-keys page", EXIT_LOCAL)
    return url, key


def _call(
    method: str, url: str, *, key: str | None = None, data: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """One request; the JSON answer. An API error answer becomes a ClientError naming its code."""
    request = urllib.request.Request(url, method=method, data=data, headers=dict(headers or {}))  # noqa: S310
    request.add_header("Accept", "application/json")
    if key:
        request.add_header("Authorization", f"Api-Key {key}")
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECONDS) as response:  # noqa: S310 -- http(s) checked
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            error = json.loads(exc.read()).get("error", {})
        except (ValueError, AttributeError):
            error = {}
        code = error.get("code", f"http_{exc.code}")
        # 503 (a service restarting) and 429 (throttled) say when to come back; _wait honours it.
        retry_after = _retry_after(exc.headers.get("Retry-After")) if exc.code in (429, 503) else None
        raise ClientError(
            f"the site answered {exc.code} [{code}]: {error.get('message', exc.reason)}", retry_after=retry_after
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ClientError(f"cannot reach {url.split('/api/')[0]}: {reason}") from None
    except ValueError:
        raise ClientError(f"{url}: the answer is not JSON (is PODIUM_URL the Podium site?)") from None


def _multipart(path: Path, fields: dict[str, str], progress: bool) -> tuple[Iterator[bytes], int, str]:
    """A streamed multipart body (fields, then the file as ``bundle``), its length and content type."""
    boundary = uuid.uuid4().hex
    head = b"".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        for name, value in fields.items()
    )
    head += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="bundle"; filename="{path.name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    size = path.stat().st_size

    def chunks() -> Iterator[bytes]:
        yield head
        sent = 0
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                sent += len(chunk)
                if progress:
                    print(f"\ruploading {sent}/{size} bytes ({100 * sent // max(size, 1)}%)", end="", file=sys.stderr)
                yield chunk
        if progress:
            print(file=sys.stderr)
        yield tail

    return chunks(), len(head) + size + len(tail), f"multipart/form-data; boundary={boundary}"


def _print_submission(body: dict[str, Any]) -> None:
    print(f"submission {body.get('id')}: {body.get('status')} {body.get('verdict') or ''}".rstrip())
    if body.get("error_code"):
        print(f"error code: {body['error_code']}")
    if body.get("message"):
        print(f"message: {body['message']}")
    if body.get("run_id") or body.get("run"):
        print(f"run: {body.get('run_id') or body.get('run')}")
    diff = [row for row in body.get("diff") or [] if isinstance(row, dict) and row.get("status") != "match"]
    if diff:
        print(f"{'field':<48} {'claimed':>14} {'recomputed':>14}  status")
        for row in diff:
            claimed = "withheld" if row.get("withheld") else _fmt(row.get("claimed"))
            recomputed = "withheld" if row.get("withheld") else _fmt(row.get("recomputed"))
            print(f"{str(row.get('path'))[:48]:<48} {claimed:>14} {recomputed:>14}  {row.get('status')}")


def _fmt(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _exit_code(body: dict[str, Any]) -> int:
    if body.get("status") != "done":
        return EXIT_PENDING
    return VERDICT_EXIT.get(str(body.get("verdict")), EXIT_SERVER)


def _retry_after(value: str | None) -> float:
    """A Retry-After of seconds (the only form the site sends); POLL_SECONDS when absent or odd."""
    try:
        return max(0.0, float(value)) if value is not None else POLL_SECONDS
    except ValueError:
        return POLL_SECONDS


def _wait(url: str, key: str, submission_id: str, seconds: float) -> dict[str, Any]:
    """Poll until the verdict or ``seconds``. A 503 (the site's database restarting, say) or a
    429 (the account's request rate) is waited out as the site asks (Retry-After) within the
    same deadline: the upload is stored, and the verdict is what the caller waits for."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            _, body = _call("GET", f"{url}/api/v1/submissions/{submission_id}/", key=key)
        except ClientError as exc:
            left = deadline - time.monotonic()
            if exc.retry_after is None or left <= 0:
                raise
            time.sleep(min(exc.retry_after, left))
            continue
        if body.get("status") == "done" or time.monotonic() >= deadline:
            return body
        time.sleep(POLL_SECONDS)


def _manifest_benchmark(directory: Path) -> str:
    """The benchmark slug DIR's manifest.json names (what --benchmark defaults to)."""
    try:
        value = json.loads((directory / "manifest.json").read_text(encoding="utf-8")).get("benchmark")
    except (OSError, ValueError, AttributeError):
        value = None
    if not isinstance(value, str) or not value:
        raise ClientError(f"{directory}/manifest.json names no benchmark; pass --benchmark SLUG", EXIT_LOCAL)
    return value


def cmd_submit(args: argparse.Namespace) -> int:
    url, key = _config()
    directory = Path(args.directory)
    if not (directory / "manifest.json").is_file():
        raise ClientError(f"{directory}: not a bundle directory (no manifest.json)", EXIT_LOCAL)
    benchmark = args.benchmark or _manifest_benchmark(directory)
    _, site_key = _call("GET", f"{url}/api/v1/site-key/")
    recipient = str(site_key.get("public_key", ""))
    if not recipient.startswith("age1"):
        raise ClientError("the site's key answer has no age public key", EXIT_SERVER)
    print(f"sealing {directory} to the site's key {site_key.get('key_id', '')}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="podium-submit-") as scratch:
        sealed = seal_dir(directory, recipient, Path(scratch) / f"{directory.name or 'bundle'}.age")
        body, length, content_type = _multipart(sealed, {"benchmark": benchmark}, progress=not args.quiet)
        status, answer = _call(
            "POST",
            f"{url}/api/v1/submissions/",
            key=key,
            data=body,
            headers={"Content-Type": content_type, "Content-Length": str(length)},
        )
    if status == 200:
        print("this exact bundle was uploaded before; showing that submission", file=sys.stderr)
    submission_id = str(answer.get("id"))
    print(f"uploaded: submission {submission_id}", file=sys.stderr)
    if args.wait > 0 and answer.get("status") != "done":
        print(f"waiting up to {args.wait}s for the verdict ...", file=sys.stderr)
        answer = _wait(url, key, submission_id, args.wait)
    _print_submission(answer)
    return _exit_code(answer)


def cmd_status(args: argparse.Namespace) -> int:
    url, key = _config()
    try:
        submission_id = str(uuid.UUID(args.submission_id))
    except ValueError:
        raise ClientError(f"{args.submission_id!r} is not a submission id (a UUID)", EXIT_LOCAL) from None
    answer = (
        _wait(url, key, submission_id, args.wait)
        if args.wait > 0
        else _call("GET", f"{url}/api/v1/submissions/{submission_id}/", key=key)[1]
    )
    _print_submission(answer)
    return _exit_code(answer)


def _guard(func: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        try:
            return int(func(args))
        except ClientError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return exc.exit_code

    return run


def add_commands(sub: Any) -> None:
    """Register ``submit`` and ``status`` on the bundle tool's subcommand parser."""
    p = sub.add_parser("submit", help="seal a bundle directory to the site's key, upload it, wait for the verdict")
    p.add_argument("directory", metavar="DIR")
    p.add_argument("--benchmark", metavar="SLUG", help="the benchmark the bundle is for (default: the manifest's)")
    p.add_argument("--wait", type=int, default=600, metavar="SECONDS", help="wait this long for the verdict (0: don't)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line")
    p.set_defaults(func=_guard(cmd_submit))
    p = sub.add_parser("status", help="show one of your submissions (verdict, message, diff)")
    p.add_argument("submission_id", metavar="ID")
    p.add_argument("--wait", type=int, default=0, metavar="SECONDS", help="wait this long for the verdict")
    p.set_defaults(func=_guard(cmd_status))
