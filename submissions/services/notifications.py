"""Verdict notifications: an email to the submitter and, when the account
set one, a signed webhook POST.

``notifications_for_verdict`` is called once, inside the transaction that writes a submission's
verdict (verification's ``_finish``): it writes one NotificationDelivery row per channel and
enqueues ``submissions.tasks.deliver_notification`` on commit. It never raises: a notification
must never fail or delay a verdict (its writes sit in a savepoint; the enqueue is robust).

``notification_deliver`` makes one attempt and records it on the row; the task retries with
backoff until PODIUM_WEBHOOK_MAX_ATTEMPTS, and the beat sweeper re-enqueues rows whose retry is
due (a lost enqueue, or the in-process mode which has no delayed retries).

Webhook signature: ``X-Podium-Signature: sha256=<hex>``, HMAC-SHA256 with the account's secret
over ``<X-Podium-Timestamp>.<raw body>`` (docs/api.md shows how to check it).

SSRF: a webhook URL must be http(s) and every address its host resolves to must be public
(``ipaddress.is_global``): loopback, private, link-local (cloud metadata), multicast and reserved
ranges, and IPv6 addresses that carry such an IPv4 address (IPv4-mapped, NAT64 64:ff9b::/96, 6to4,
Teredo), are refused when the URL is saved and again at each delivery, and the POST connects to the
address that was checked (a DNS answer that changes between check and connect cannot redirect it).
Redirects are not followed. PODIUM_WEBHOOK_ALLOW_PRIVATE lifts the address rule (development).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import ipaddress
import json
import logging
import re
import secrets
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import DatabaseError, transaction
from django.urls import reverse
from django.utils import timezone

from leaderboard.disclosure import submission_view
from submissions.models import NotificationDelivery, Submission, WebhookEndpoint
from submissions.services.enqueue import enqueue_on_commit

logger = logging.getLogger(__name__)

WEBHOOK_URL_MAX_CHARS = 500
# Seconds before retry n (1-based): 30, 60, 120 ... capped, so a receiver down for a day is
# tried a handful of times, not hammered.
RETRY_BASE_SECONDS = 30
RETRY_MAX_SECONDS = 3600
SIGNATURE_HEADER = "X-Podium-Signature"
TIMESTAMP_HEADER = "X-Podium-Timestamp"
EVENT = "submission.verdict"


class WebhookError(Exception):
    """A webhook URL that cannot be used, or a delivery that failed; ``code`` is stable."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# ------------------------------------------------------------------ the account's webhook


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    path: str
    address: str  # the checked IP the POST connects to


# IPv6 ranges whose last 32 bits are an IPv4 address the packet ends up at: the NAT64 well-known
# prefix (RFC 6052) and SIIT's IPv4-translated addresses (RFC 2765). ipaddress calls them global
# whatever the IPv4 address is, so 64:ff9b::a9fe:a9fe would reach 169.254.169.254.
_IPV4_IN_LAST_32_BITS = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("::ffff:0:0:0/96"))
# Refused whatever they embed: local-use NAT64 (RFC 8215) translates by the operator's own rules,
# and IPv4-compatible addresses (::a.b.c.d) are deprecated (RFC 4291) so no receiver has one.
_IPV6_REFUSED = (ipaddress.IPv6Network("64:ff9b:1::/48"), ipaddress.IPv6Network("::/96"))


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries: IPv4-mapped, 6to4, Teredo (server and
    client; 2001::/32 is not global anyway, this does not rely on it) and the ranges above."""
    embedded = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
    if any(ip in network for network in _IPV4_IN_LAST_32_BITS):
        embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return [address for address in embedded if address is not None]


def _public_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """The one rule for a webhook's address: a public internet address, in every form."""
    # is_global is False for loopback, private, link-local, shared (CGNAT) and reserved ranges;
    # multicast is "global" to ipaddress but never a receiver.
    if not ip.is_global or ip.is_multicast:
        return False
    if isinstance(ip, ipaddress.IPv4Address):
        return True
    # Site-local fec0::/10 is deprecated (RFC 3879) but still numbers some internal networks,
    # and ipaddress calls it global.
    if ip.is_site_local or any(ip in network for network in _IPV6_REFUSED):
        return False
    return all(_public_address(address) for address in _embedded_ipv4(ip))


def _refuse_private(hostname: str, addresses: list[str]) -> None:
    """Every address the host resolves to is a public internet address."""
    for address in addresses:
        if not _public_address(ipaddress.ip_address(address.split("%", 1)[0])):
            raise WebhookError(
                "webhook_url_private",
                f"url: {hostname[:100]!r} resolves to a non-public address; "
                "webhooks are only sent to public internet addresses",
            )


def _resolve(url: str) -> _Target:
    """Check ``url`` against the rules in the module docstring; the address to connect to."""
    if len(url) > WEBHOOK_URL_MAX_CHARS:
        raise WebhookError("webhook_url_invalid", f"url: at most {WEBHOOK_URL_MAX_CHARS} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise WebhookError("webhook_url_invalid", "url: not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise WebhookError("webhook_url_invalid", "url: expected an http:// or https:// URL")
    if not parts.hostname:
        raise WebhookError("webhook_url_invalid", "url: the URL names no host")
    if parts.username or parts.password:
        raise WebhookError("webhook_url_invalid", "url: credentials in the URL are not allowed")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise WebhookError(
            "webhook_url_unresolvable", f"url: the host {parts.hostname[:100]!r} does not resolve"
        ) from None
    addresses = sorted({str(info[4][0]) for info in infos})
    if not settings.PODIUM_WEBHOOK_ALLOW_PRIVATE:
        _refuse_private(parts.hostname, addresses)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return _Target(parts.scheme, parts.hostname, port, path, addresses[0])


def webhook_url_check(url: str) -> str:
    """The URL, stripped, if a webhook may be sent to it; WebhookError otherwise."""
    url = (url or "").strip()
    if not url:
        raise WebhookError("webhook_url_missing", "url: expected the http(s) URL to POST verdicts to")
    _resolve(url)
    return url


def _new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


@transaction.atomic
def webhook_set(*, user: User, url: str) -> tuple[WebhookEndpoint, str | None]:
    """Set (or change) the account's webhook URL. Returns the endpoint and, when a secret was
    created (first time), the secret: the only time it is ever returned."""
    url = webhook_url_check(url)
    # The account's row is the lock: two first PUTs (or forms) at once both found no endpoint
    # and the second INSERT hit the one-per-account unique index, a 500
    # (tests/submissions/test_notifications.py). Now the second waits and changes the first's URL.
    get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True).first()
    endpoint = WebhookEndpoint.objects.select_for_update().filter(user=user).first()
    if endpoint is None:
        endpoint = WebhookEndpoint.objects.create(user=user, url=url, secret=_new_secret())
        return endpoint, endpoint.secret
    endpoint.url = url
    endpoint.save(update_fields=["url", "updated_at"])
    return endpoint, None


@transaction.atomic
def webhook_rotate_secret(*, user: User) -> WebhookEndpoint:
    """Give the account's webhook a new secret; returns the endpoint as rotated (the caller answers
    from it: reading the row again after the commit found it deleted, or replaced, by a concurrent
    request, which answered a 500 or another endpoint with this secret)."""
    endpoint = WebhookEndpoint.objects.select_for_update().filter(user=user).first()
    if endpoint is None:
        raise WebhookError("webhook_not_set", "this account has no webhook")
    endpoint.secret = _new_secret()
    endpoint.save(update_fields=["secret", "updated_at"])
    return endpoint


def webhook_delete(*, user: User) -> bool:
    deleted, _ = WebhookEndpoint.objects.filter(user=user).delete()
    return bool(deleted)


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256(secret, timestamp + "." + body): what receivers recompute."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


# ------------------------------------------------------------------ the verdict hook


def notifications_for_verdict(*, submission: Submission) -> list[int]:
    """Owe the submitter their notifications for ``submission``'s verdict; never raises.

    Call inside the transaction that writes the verdict: the rows commit with it, and the
    deliveries are enqueued only once it has committed. Returns the new delivery ids.
    """
    if _owes_nothing(submission):
        # Nothing to write: no savepoint (two statements) around no statement at all.
        return []
    try:
        with transaction.atomic():  # a savepoint: a failure here leaves the verdict intact
            created = _owe(submission)
    except DatabaseError:
        logger.exception("submission %s: could not record its notifications", submission.pk)
        return []
    for delivery_id in created:
        enqueue_on_commit(partial(_enqueue, delivery_id), what=f"notification {delivery_id}")
    return created


def _cached_webhook_url(submission: Submission) -> str | None:
    """The submitter's webhook URL ("" when the account has none) when verification read it with
    the locked submission (``select_related("submitter__webhook")``, in the verdict's own
    transaction); None when it was not read and must be asked for."""
    if not Submission.submitter.is_cached(submission) or submission.submitter is None:
        return None
    user = submission.submitter
    if not type(user).webhook.is_cached(user):  # the reverse one-to-one's descriptor
        return None
    endpoint = getattr(user, "webhook", None)  # a cached absent reverse one-to-one raises DoesNotExist
    return endpoint.url if endpoint is not None else ""


def _owes_nothing(submission: Submission) -> bool:
    """Whether what verification already read shows no channel to notify (no email, no webhook):
    then nothing is owed, and nothing needs to be read or written."""
    return _cached_webhook_url(submission) == "" and not submission.submitter.email


def _owe(submission: Submission) -> list[int]:
    # Verification has read the submitter already (the duplicate-results check), with its
    # webhook: its email and URL are at hand, in this same transaction; otherwise one read of
    # the email alone, and one of the URL.
    user: User | None
    if Submission.submitter.is_cached(submission):
        user = submission.submitter
    else:
        user = get_user_model().objects.filter(pk=submission.submitter_id).only("email").first()
    targets: list[tuple[str, str]] = []
    if user is not None and user.email:
        targets.append((NotificationDelivery.Channel.EMAIL, user.email))
    url = _cached_webhook_url(submission)
    if url is None:
        url = WebhookEndpoint.objects.filter(user_id=submission.submitter_id).values_list("url", flat=True).first()
    if url:
        targets.append((NotificationDelivery.Channel.WEBHOOK, url))
    if not targets:
        return []
    # Every channel's row in one INSERT (its ids returned), where a get_or_create per channel
    # cost a SELECT, a savepoint and an INSERT each. Nothing to "get": a verdict is written once
    # (under the submission's row lock, and never again once done), and a verdict transaction
    # that rolled back left no rows. The one-per-channel constraint stays the backstop: a
    # conflict fails this savepoint, logged, and the verdict stands (notifications_for_verdict).
    rows = NotificationDelivery.objects.bulk_create(
        NotificationDelivery(submission_id=submission.pk, channel=channel, target=target[:500])
        for channel, target in targets
    )
    return [row.pk for row in rows]


def _enqueue(delivery_id: int) -> None:
    from submissions.tasks import deliver_notification  # tasks import the services: import late

    deliver_notification.delay(delivery_id)


# ------------------------------------------------------------------ delivering


def retry_delay_seconds(attempts: int) -> int:
    """Seconds to wait after the ``attempts``-th failed attempt (1-based)."""
    return int(min(RETRY_BASE_SECONDS * 2 ** max(attempts - 1, 0), RETRY_MAX_SECONDS))


def notification_payload(submission: Submission) -> dict[str, Any]:
    """What the submitter is told: the verdict as they may see it (leaderboard.disclosure)."""
    view = submission_view(submission, user=submission.submitter)
    run = getattr(submission, "run", None) if submission.kind == Submission.Kind.PAPER_GAP else None
    return {
        "event": EVENT,
        "submission": {
            "id": str(submission.pk),
            "status": submission.status,
            "verdict": submission.verdict,
            "error_code": submission.error_code,
            "message": view.message,
            "kind": submission.kind,
            "benchmark": submission.release.benchmark.slug if submission.release is not None else None,
            "release": submission.release.version if submission.release is not None else None,
            "run_id": run.pk if run is not None else None,
            "url": settings.SITE_URL.rstrip("/") + reverse("submission_detail", args=[submission.pk]),
            "finished_at": submission.finished_at.isoformat() if submission.finished_at else None,
        },
    }


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a checked address, with the URL's host name for SNI and certificate checks."""

    def __init__(self, host: str, address: str, **kwargs: Any):
        super().__init__(host, **kwargs)
        self._address = address

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        # The handshake's wait is one deadline (CPython's ssl counts the socket timeout across
        # the whole handshake): what is left of the delivery's, set by _post before connecting.
        self.sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)


# What is read of the answer: its status line, nothing more.
_STATUS_LINE_MAX_BYTES = 1024
_STATUS_LINE = re.compile(rb"HTTP/\d(?:\.\d)? (\d{3})[ \r]")


def _time_left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the receiver did not answer within PODIUM_WEBHOOK_TIMEOUT_SECONDS")
    return left


def _status_by(sock: socket.socket, deadline: float) -> int:
    """The status code of the answer's first line, read by ``deadline``. A socket timeout bounds
    one wait, so a receiver trickling a byte at a time would never trip it (http.client's
    getresponse also reads up to 100 header lines): each wait here gets only what is left."""
    data = b""
    while b"\n" not in data and len(data) < _STATUS_LINE_MAX_BYTES:
        sock.settimeout(_time_left(deadline))
        chunk = sock.recv(_STATUS_LINE_MAX_BYTES - len(data))
        if not chunk:
            break
        data += chunk
    match = _STATUS_LINE.match(data)
    if match is None:
        raise http.client.BadStatusLine(repr(data[:80]))
    return int(match.group(1))


def _post(target: _Target, body: bytes, headers: dict[str, str]) -> int:
    """POST ``body`` and answer the receiver's status code, all within one deadline of
    PODIUM_WEBHOOK_TIMEOUT_SECONDS (connect, TLS, send, status line): a delivery runs on a
    worker that also verifies, which no receiver may hold longer than that."""
    deadline = time.monotonic() + settings.PODIUM_WEBHOOK_TIMEOUT_SECONDS
    if target.scheme == "https":
        conn: http.client.HTTPConnection = _PinnedHTTPSConnection(
            target.host, target.address, port=target.port, timeout=_time_left(deadline)
        )
    else:
        conn = http.client.HTTPConnection(target.address, target.port, timeout=_time_left(deadline))
    try:
        conn.connect()
        assert conn.sock is not None
        conn.sock.settimeout(_time_left(deadline))  # sendall counts its timeout across the send
        host = target.host if ":" not in target.host else f"[{target.host}]"
        # http.client builds the request (and refuses a CR or LF in its path or headers).
        conn.request("POST", target.path, body=body, headers={"Host": f"{host}:{target.port}", **headers})
        return _status_by(conn.sock, deadline)
    finally:
        conn.close()


def _send_webhook(delivery: NotificationDelivery, submission: Submission) -> None:
    endpoint = WebhookEndpoint.objects.filter(user_id=submission.submitter_id).first()
    if endpoint is None or endpoint.url != delivery.target:
        # The account removed or changed its webhook since: the secret that would sign this is gone.
        raise WebhookError("webhook_removed", "the account's webhook was removed or changed; not sent")
    target = _resolve(delivery.target)  # again at delivery: the DNS answer may have changed
    payload = notification_payload(submission)
    payload["delivery"] = delivery.pk
    body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Podium-Webhook/1",
        "X-Podium-Event": EVENT,
        "X-Podium-Delivery": str(delivery.pk),
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: signature(endpoint.secret, timestamp, body),
    }
    try:
        status = _post(target, body, headers)
    except (OSError, http.client.HTTPException) as exc:
        raise WebhookError("webhook_unreachable", f"{type(exc).__name__}: {str(exc)[:200]}") from None
    if not 200 <= status < 300:
        raise WebhookError("webhook_status", f"the receiver answered HTTP {status}")


def _send_email(delivery: NotificationDelivery, submission: Submission) -> None:
    payload = notification_payload(submission)["submission"]
    verdict = payload["verdict"] or "no verdict"
    where = f" on {payload['benchmark']} {payload['release']}" if payload["benchmark"] else ""
    lines = [
        f"Your submission {payload['id']}{where} has been verified: {verdict}.",
        "",
        payload["message"] or "",
    ]
    if payload["error_code"]:
        lines.append(f"Error code: {payload['error_code']}")
    lines += ["", f"Details: {payload['url']}", "", "You receive this because you uploaded the bundle to Podium."]
    send_mail(
        subject=f"Podium: submission {str(submission.pk)[:8]} {verdict}",
        message="\n".join(lines),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[delivery.target],
    )


def notification_deliver(*, delivery_id: Any) -> NotificationDelivery | None:
    """One attempt at one delivery, recorded on its row; safe to run twice (a row no longer
    pending is returned untouched). Returns the row as left, None when it does not exist."""
    delivery = NotificationDelivery.objects.filter(pk=delivery_id).first()
    if delivery is None or delivery.state != NotificationDelivery.State.PENDING:
        return delivery
    submission = Submission.objects.select_related("submitter", "release__benchmark", "run").get(
        pk=delivery.submission_id
    )
    error = ""
    try:
        if delivery.channel == NotificationDelivery.Channel.WEBHOOK:
            _send_webhook(delivery, submission)
        else:
            _send_email(delivery, submission)
    except WebhookError as exc:
        error = f"{exc.code}: {exc.message}"
    except (OSError, ValueError) as exc:  # smtplib's errors are OSErrors
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
    with transaction.atomic():
        locked = NotificationDelivery.objects.select_for_update().get(pk=delivery.pk)
        if locked.state != NotificationDelivery.State.PENDING:
            return locked  # a concurrent attempt concluded it
        locked.attempts += 1
        if not error:
            locked.state = NotificationDelivery.State.SENT
            locked.sent_at = timezone.now()
            locked.last_error = ""
        else:
            locked.last_error = error[:300]
            if locked.attempts >= settings.PODIUM_WEBHOOK_MAX_ATTEMPTS or error.startswith("webhook_removed"):
                locked.state = NotificationDelivery.State.FAILED
        locked.save(update_fields=["attempts", "state", "sent_at", "last_error", "updated_at"])
    if error:
        logger.warning("notification %s (%s) attempt %s failed: %s", locked.pk, locked.channel, locked.attempts, error)
    return locked


# The sweeper leaves a pending row alone this much longer than its backoff: with a broker the
# task's own countdown retry fires at the backoff, and the sweeper must not send a second copy
# then; it only catches what the broker lost (and, in-process mode, where nothing waits).
SWEEP_GRACE_SECONDS = 300


def notifications_due_ids(*, now: Any = None) -> list[int]:
    """Pending deliveries whose retry is overdue (for the beat sweeper): attempted n times, last
    touched longer than ``retry_delay_seconds(n) + SWEEP_GRACE_SECONDS`` ago."""
    now = now or timezone.now()
    due = []
    rows = NotificationDelivery.objects.filter(state=NotificationDelivery.State.PENDING).values_list(
        "pk", "attempts", "created_at", "updated_at"
    )[:500]
    for pk, attempts, created_at, updated_at in rows:
        wait = (retry_delay_seconds(attempts) if attempts else 0) + SWEEP_GRACE_SECONDS
        if (updated_at or created_at) <= now - timedelta(seconds=wait):
            due.append(pk)
    return due
