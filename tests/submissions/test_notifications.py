"""Verdict notifications (issue 13 feature 7): email and signed webhooks, with a real HTTP
receiver on loopback; the webhook API and form with owner / another account / anonymous /
staff; the SSRF rule; retries with backoff recorded on the delivery row."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import re
import socket
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import DatabaseError
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from submissions.models import NotificationDelivery, Submission, WebhookEndpoint
from submissions.services import notifications
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify
from tests.api_clients import api_for
from tests.concurrency import committed_meanwhile, on_postgresql_committing
from tests.staff import staff_grant


class Receiver:
    """A loopback HTTP server recording every POST; answers ``statuses`` in turn, then 200."""

    def __init__(self, statuses: list[int] | None = None):
        self.requests: list[dict] = []
        self.statuses = list(statuses or [])
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook?src=podium"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Trickler:
    """A loopback receiver that reads the request, sends ``first`` at once, then one byte every
    ``gap`` seconds for ``seconds``: every wait shorter than a socket timeout, the whole far longer."""

    def __init__(self, first: bytes, *, gap: float, seconds: float):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        self.first, self.gap, self.seconds = first, gap, seconds
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        try:
            conn.recv(65536)
            conn.sendall(self.first)
            end = time.monotonic() + self.seconds
            while time.monotonic() < end:
                time.sleep(self.gap)
                conn.sendall(b"H")
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.sock.close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def loopback_allowed(settings):
    settings.PODIUM_WEBHOOK_ALLOW_PRIVATE = True


@pytest.fixture
def staff(make_user):
    user = make_user("staffer")
    user.is_staff = True
    user.save()
    return staff_grant(user)  # a maintainer: every staff-write permission


def api_as(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def verify(submission, capture) -> Submission:
    with capture(execute=True):
        return submission_verify(submission_id=submission.pk)


def check_signature(secret: str, request: dict) -> bool:
    timestamp = request["headers"]["X-Podium-Timestamp"]
    expected = (
        "sha256=" + hmac.new(secret.encode(), timestamp.encode() + b"." + request["body"], hashlib.sha256).hexdigest()
    )
    return hmac.compare_digest(expected, request["headers"]["X-Podium-Signature"])


@pytest.fixture
def garbage(owner, site_identity):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(b"this is not an age file at all\n" * 4))
    return submission


@pytest.mark.django_db
class TestEmail:
    def test_a_rejected_verdict_emails_the_submitter_once(self, owner, garbage, django_capture_on_commit_callbacks):
        owner.email = "owner@example.org"
        owner.save()
        verify(garbage, django_capture_on_commit_callbacks)
        assert len(mail.outbox) == 1
        message = mail.outbox[0]
        assert message.to == ["owner@example.org"]
        assert "rejected" in message.subject and "not_age_file" in message.body
        delivery = NotificationDelivery.objects.get(submission=garbage)
        assert (delivery.channel, delivery.state, delivery.attempts) == ("email", "sent", 1)

    def test_delivering_twice_sends_once(self, owner, garbage, django_capture_on_commit_callbacks):
        owner.email = "owner@example.org"
        owner.save()
        verify(garbage, django_capture_on_commit_callbacks)
        delivery = NotificationDelivery.objects.get(submission=garbage)
        notifications.notification_deliver(delivery_id=delivery.pk)
        assert len(mail.outbox) == 1

    def test_no_address_and_no_webhook_owes_nothing(self, garbage, django_capture_on_commit_callbacks):
        verify(garbage, django_capture_on_commit_callbacks)
        assert not NotificationDelivery.objects.exists() and mail.outbox == []

    def test_a_notification_failure_never_blocks_the_verdict(self, owner, garbage, django_capture_on_commit_callbacks):
        owner.email = "owner@example.org"
        owner.save()
        with mock.patch.object(notifications, "_owe", side_effect=DatabaseError("boom")):
            submission = verify(garbage, django_capture_on_commit_callbacks)
        assert (submission.status, submission.verdict) == ("done", "rejected")
        assert Submission.objects.get(pk=garbage.pk).verdict == "rejected"
        assert not NotificationDelivery.objects.exists()


@pytest.mark.django_db
class TestWebhookDelivery:
    def test_a_validated_run_is_posted_signed_to_a_loopback_receiver(
        self, owner, receiver, loopback_allowed, demo_release, seal, django_capture_on_commit_callbacks
    ):
        answer = api_as(owner).put("/api/v1/account/webhook/", {"url": receiver.url}, format="json")
        assert answer.status_code == 201
        secret = answer.json()["secret"]
        assert secret.startswith("whsec_")
        submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
        verified = verify(submission, django_capture_on_commit_callbacks)
        assert verified.verdict == "validated"
        assert len(receiver.requests) == 1
        request = receiver.requests[0]
        assert request["path"] == "/hook?src=podium"
        assert check_signature(secret, request)
        assert not check_signature(secret + "x", request)
        body = json.loads(request["body"])
        assert body["event"] == "submission.verdict"
        assert body["submission"]["id"] == str(submission.pk)
        assert body["submission"]["verdict"] == "validated"
        assert body["submission"]["run_id"] == verified.run.pk
        assert request["headers"]["X-Podium-Delivery"] == str(body["delivery"])
        delivery = NotificationDelivery.objects.get(submission=submission, channel="webhook")
        assert (delivery.state, delivery.attempts, delivery.last_error) == ("sent", 1, "")

    def test_a_failing_receiver_is_retried_with_backoff_until_it_answers(
        self, owner, loopback_allowed, garbage, django_capture_on_commit_callbacks
    ):
        failing = Receiver(statuses=[500, 503])
        try:
            notifications.webhook_set(user=owner, url=failing.url)
            verify(garbage, django_capture_on_commit_callbacks)  # attempt 1 (in-process: no waiting)
            delivery = NotificationDelivery.objects.get(submission=garbage)
            assert (delivery.state, delivery.attempts) == ("pending", 1)
            assert delivery.last_error == "webhook_status: the receiver answered HTTP 500"
            # The sweeper's clock: not due before its backoff (30 s) plus the grace, due after.
            due = delivery.updated_at + timedelta(seconds=30 + notifications.SWEEP_GRACE_SECONDS)
            assert delivery.pk not in notifications.notifications_due_ids(now=due - timedelta(seconds=1))
            assert delivery.pk in notifications.notifications_due_ids(now=due + timedelta(seconds=1))
            # With a broker the task itself schedules the retry, 30 s then 60 s.
            from submissions.tasks import deliver_notification

            with (
                mock.patch.object(deliver_notification, "retry", side_effect=RuntimeError("retry")) as retry,
                pytest.raises(RuntimeError),
            ):
                deliver_notification.run(delivery.pk)
            assert retry.call_args.kwargs["countdown"] == 60
            delivery.refresh_from_db()
            assert (delivery.state, delivery.attempts) == ("pending", 2)
            notifications.notification_deliver(delivery_id=delivery.pk)
            delivery.refresh_from_db()
            assert (delivery.state, delivery.attempts) == ("sent", 3)
            assert len(failing.requests) == 3
            # The same delivery id each time, so the receiver can drop duplicates.
            assert {r["headers"]["X-Podium-Delivery"] for r in failing.requests} == {str(delivery.pk)}
        finally:
            failing.close()

    def test_retries_end_failed_after_the_attempt_limit(
        self, owner, loopback_allowed, garbage, settings, django_capture_on_commit_callbacks
    ):
        settings.PODIUM_WEBHOOK_MAX_ATTEMPTS = 2
        failing = Receiver(statuses=[500] * 5)
        try:
            notifications.webhook_set(user=owner, url=failing.url)
            verify(garbage, django_capture_on_commit_callbacks)
            delivery = NotificationDelivery.objects.get(submission=garbage)
            notifications.notification_deliver(delivery_id=delivery.pk)
            delivery.refresh_from_db()
            assert (delivery.state, delivery.attempts) == ("failed", 2)
            notifications.notification_deliver(delivery_id=delivery.pk)
            assert len(failing.requests) == 2
            assert delivery.pk not in notifications.notifications_due_ids(now=timezone.now() + timedelta(days=1))
        finally:
            failing.close()

    def test_an_unreachable_receiver_is_a_recorded_failure_not_an_error(
        self, owner, loopback_allowed, garbage, django_capture_on_commit_callbacks
    ):
        notifications.webhook_set(user=owner, url="http://127.0.0.1:9/nothing-listens")
        submission = verify(garbage, django_capture_on_commit_callbacks)
        assert submission.verdict == "rejected"
        delivery = NotificationDelivery.objects.get(submission=garbage)
        assert delivery.state == "pending" and delivery.last_error.startswith("webhook_unreachable")

    @pytest.mark.parametrize("trickled", ["headers", "status line"])
    def test_a_receiver_trickling_its_answer_holds_a_delivery_no_longer_than_the_timeout(
        self, owner, loopback_allowed, garbage, settings, trickled
    ):
        # One byte per 0.4 s never trips a 1 s socket timeout; the delivery's deadline does.
        settings.PODIUM_WEBHOOK_TIMEOUT_SECONDS = 1
        trickler = Trickler(b"HTTP/1.1 200 OK\r\nX-Slow: " if trickled == "headers" else b"", gap=0.4, seconds=8)
        try:
            notifications.webhook_set(user=owner, url=trickler.url)
            submission_verify(submission_id=garbage.pk)  # on_commit not run: owed, delivered below
            delivery = NotificationDelivery.objects.get(submission=garbage)
            started = time.monotonic()
            notifications.notification_deliver(delivery_id=delivery.pk)
            assert time.monotonic() - started < 2.5
            delivery.refresh_from_db()
            if trickled == "headers":  # the status line came at once: that is the answer
                assert (delivery.state, delivery.attempts) == ("sent", 1)
            else:
                assert delivery.state == "pending"
                assert delivery.last_error.startswith("webhook_unreachable: TimeoutError")
        finally:
            trickler.close()

    def test_a_removed_webhook_is_not_posted(self, owner, receiver, loopback_allowed, garbage):
        notifications.webhook_set(user=owner, url=receiver.url)
        submission = submission_verify(submission_id=garbage.pk)  # on_commit not run: owed, not sent
        notifications.webhook_delete(user=owner)
        delivery = NotificationDelivery.objects.get(submission=submission)
        notifications.notification_deliver(delivery_id=delivery.pk)
        delivery.refresh_from_db()
        assert delivery.state == "failed" and receiver.requests == []


@pytest.mark.django_db
class TestWebhookUrlRule:
    @pytest.mark.parametrize(
        ("url", "code"),
        [
            ("http://127.0.0.1:8000/hook", "webhook_url_private"),
            ("http://localhost/hook", "webhook_url_private"),
            ("http://10.1.2.3/hook", "webhook_url_private"),
            ("http://192.168.0.1/hook", "webhook_url_private"),
            ("http://169.254.169.254/latest/meta-data/", "webhook_url_private"),
            ("http://[::1]/hook", "webhook_url_private"),
            ("http://0.0.0.0/hook", "webhook_url_private"),
            ("http://[::ffff:127.0.0.1]/hook", "webhook_url_private"),
            ("http://[fec0::1]/hook", "webhook_url_private"),  # site-local (deprecated, still internal)
            ("http://[feff::1]/hook", "webhook_url_private"),
            ("http://100.64.0.1/hook", "webhook_url_private"),
            ("http://[fd00::1]/hook", "webhook_url_private"),
            ("http://224.0.0.1/hook", "webhook_url_private"),
            ("ftp://example.org/hook", "webhook_url_invalid"),
            ("file:///etc/passwd", "webhook_url_invalid"),
            ("http://user:pw@93.184.216.34/", "webhook_url_invalid"),
            ("http://93.184.216.34:99999/", "webhook_url_invalid"),
            ("", "webhook_url_missing"),
            ("http://no-such-host.invalid/", "webhook_url_unresolvable"),
        ],
    )
    def test_non_public_or_non_http_urls_are_refused(self, owner, url, code):
        response = api_as(owner).put("/api/v1/account/webhook/", {"url": url}, format="json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == code
        assert not WebhookEndpoint.objects.exists()

    @pytest.mark.parametrize(
        ("url", "kind"), [(80, "number"), (["https://93.184.216.34/hook"], "array"), ({}, "object"), (True, "boolean")]
    )
    def test_a_url_that_is_not_a_string_is_refused_naming_its_json_type(self, owner, url, kind):
        # It was str()-ed first: ["https://..."] was refused as the URL "['https://...']".
        response = api_as(owner).put("/api/v1/account/webhook/", {"url": url}, format="json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid"
        assert response.json()["error"]["message"] == f"url: Expected a string, got {kind}."
        assert not WebhookEndpoint.objects.exists()

    def test_a_body_without_a_url_is_refused_as_missing(self, owner):
        response = api_as(owner).put("/api/v1/account/webhook/", {}, format="json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "webhook_url_missing"
        assert not WebhookEndpoint.objects.exists()

    @pytest.mark.parametrize(
        "address",
        [
            pytest.param("64:ff9b::a9fe:a9fe", id="nat64-of-cloud-metadata"),
            pytest.param("64:ff9b::7f00:1", id="nat64-of-loopback"),
            pytest.param("64:ff9b::a00:1", id="nat64-of-10/8"),
            pytest.param("64:ff9b:1::808:808", id="local-use-nat64-even-of-a-public-ipv4"),
            pytest.param("2002:a9fe:a9fe::1", id="6to4-of-cloud-metadata"),
            pytest.param("2002:c0a8:1::1", id="6to4-of-192.168/16"),
            pytest.param("2001:0:808:808::5601:5601", id="teredo-client-cloud-metadata"),
            pytest.param("::ffff:a9fe:a9fe", id="ipv4-mapped-cloud-metadata"),
            pytest.param("::a9fe:a9fe", id="ipv4-compatible-cloud-metadata"),
            pytest.param("::808:808", id="ipv4-compatible-even-of-a-public-ipv4"),
            pytest.param("::ffff:0:7f00:1", id="ipv4-translated-loopback"),
            pytest.param("64:ff9b::e000:1", id="nat64-of-multicast"),
        ],
    )
    def test_ipv6_forms_of_non_public_ipv4_addresses_are_refused(self, owner, address):
        response = api_as(owner).put("/api/v1/account/webhook/", {"url": f"http://[{address}]/hook"}, format="json")
        assert response.status_code == 400
        assert response.json()["error"] == {
            "code": "webhook_url_private",
            "message": f"url: {address!r} resolves to a non-public address; "
            "webhooks are only sent to public internet addresses",
        }
        assert not WebhookEndpoint.objects.exists()

    @pytest.mark.parametrize(
        "address",
        [
            pytest.param("2606:4700:4700::1111", id="native-ipv6"),
            pytest.param("64:ff9b::808:808", id="nat64-of-a-public-ipv4"),
            pytest.param("2002:808:808::1", id="6to4-of-a-public-ipv4"),
        ],
    )
    def test_a_public_ipv6_address_is_accepted(self, owner, address):
        url = f"https://[{address}]/hook"
        response = api_as(owner).put("/api/v1/account/webhook/", {"url": url}, format="json")
        assert response.status_code == 201
        assert WebhookEndpoint.objects.get(user=owner).url == url

    def test_a_public_address_is_accepted(self, owner):
        response = api_as(owner).put("/api/v1/account/webhook/", {"url": "https://93.184.216.34/hook"}, format="json")
        assert response.status_code == 201
        assert WebhookEndpoint.objects.get(user=owner).url == "https://93.184.216.34/hook"

    def test_an_address_that_became_private_is_refused_at_delivery(self, owner, garbage, settings):
        WebhookEndpoint.objects.create(user=owner, url="http://127.0.0.1:9/x", secret="whsec_x")
        submission = submission_verify(submission_id=garbage.pk)
        delivery = NotificationDelivery.objects.get(submission=submission)
        notifications.notification_deliver(delivery_id=delivery.pk)
        delivery.refresh_from_db()
        assert delivery.last_error.startswith("webhook_url_private")

    def test_an_ipv6_form_of_the_metadata_address_is_refused_at_delivery(self, owner, garbage):
        WebhookEndpoint.objects.create(user=owner, url="http://[64:ff9b::a9fe:a9fe]/x", secret="whsec_x")
        submission = submission_verify(submission_id=garbage.pk)
        delivery = NotificationDelivery.objects.get(submission=submission)
        notifications.notification_deliver(delivery_id=delivery.pk)
        delivery.refresh_from_db()
        assert delivery.last_error.startswith("webhook_url_private")


@pytest.mark.django_db
class TestWebhookApi:
    URL = "https://93.184.216.34/hook"

    def test_the_secret_is_shown_once(self, owner):
        created = api_as(owner).put("/api/v1/account/webhook/", {"url": self.URL}, format="json").json()
        assert "secret" in created
        shown = api_as(owner).get("/api/v1/account/webhook/").json()
        assert shown == {"url": self.URL, "created_at": shown["created_at"]}
        changed = api_as(owner).put("/api/v1/account/webhook/", {"url": self.URL + "2"}, format="json")
        assert changed.status_code == 200 and "secret" not in changed.json()
        assert WebhookEndpoint.objects.get(user=owner).secret == created["secret"]

    def test_rotating_replaces_the_secret(self, owner):
        created = api_as(owner).put("/api/v1/account/webhook/", {"url": self.URL}, format="json").json()
        rotated = api_as(owner).post("/api/v1/account/webhook/rotate-secret/").json()
        assert rotated["secret"] != created["secret"]
        assert WebhookEndpoint.objects.get(user=owner).secret == rotated["secret"]

    def test_a_rotation_answers_what_it_rotated_though_a_delete_commits_right_after_it(self, owner, monkeypatch):
        # The view read the row again after the rotation committed: a DELETE landing in between
        # made that read a 500 (seen under parallel requests on PostgreSQL).
        from submissions.services import notifications

        api_as(owner).put("/api/v1/account/webhook/", {"url": self.URL}, format="json")
        rotate = notifications.webhook_rotate_secret

        def rotate_then_deleted(**kwargs):
            endpoint = rotate(**kwargs)
            WebhookEndpoint.objects.filter(user=owner).delete()  # the concurrent DELETE, committed
            return endpoint

        monkeypatch.setattr(notifications, "webhook_rotate_secret", rotate_then_deleted)
        answer = api_as(owner).post("/api/v1/account/webhook/rotate-secret/")
        assert answer.status_code == 200
        assert answer.json()["url"] == self.URL and len(answer.json()["secret"]) > 20
        assert not WebhookEndpoint.objects.filter(user=owner).exists()

    def test_another_account_sees_only_its_own(self, owner, stranger):
        api_as(owner).put("/api/v1/account/webhook/", {"url": self.URL}, format="json")
        response = api_as(stranger).get("/api/v1/account/webhook/")
        assert response.status_code == 404 and response.json()["error"]["code"] == "webhook_not_set"
        assert api_as(stranger).delete("/api/v1/account/webhook/").status_code == 404
        assert WebhookEndpoint.objects.filter(user=owner).exists()

    def test_staff_have_no_view_of_other_accounts_webhooks(self, owner, staff):
        api_as(owner).put("/api/v1/account/webhook/", {"url": self.URL}, format="json")
        assert api_as(staff).get("/api/v1/account/webhook/").status_code == 404

    def test_anonymous_is_refused(self):
        for method in ("get", "put", "delete"):
            response = getattr(api_as(), method)("/api/v1/account/webhook/", {"url": self.URL}, format="json")
            assert response.status_code == 401
            assert response.json()["error"]["code"] == "not_authenticated"
        assert not WebhookEndpoint.objects.exists()

    def test_delete_removes_it(self, owner):
        api_as(owner).put("/api/v1/account/webhook/", {"url": self.URL}, format="json")
        assert api_as(owner).delete("/api/v1/account/webhook/").status_code == 204
        assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
class TestWebhookForm:
    URL = "https://93.184.216.34/hook"

    def test_the_owner_sets_it_on_the_api_keys_page_and_sees_the_secret_once(self, owner, client):
        client.force_login(owner)
        assert reverse("webhook_update") in client.get(reverse("api_keys")).content.decode()
        response = client.post(reverse("webhook_update"), {"url": self.URL})
        assert response.status_code == 200 and response["Cache-Control"].find("no-store") >= 0
        secret = WebhookEndpoint.objects.get(user=owner).secret
        assert secret in response.content.decode()
        page = client.get(reverse("api_keys")).content.decode()
        assert self.URL in page and secret not in page

    def test_a_private_url_is_refused_with_its_code(self, owner, client):
        client.force_login(owner)
        response = client.post(reverse("webhook_update"), {"url": "http://10.0.0.1/"})
        assert response.status_code == 400 and 'data-code="webhook_url_private"' in response.content.decode()
        assert not WebhookEndpoint.objects.exists()

    def test_a_refused_url_comes_back_in_the_form_as_typed_with_a_400(self, owner, client):
        client.force_login(owner)
        response = client.post(reverse("webhook_update"), {"url": "ftp://example.org/hook"})
        assert response.status_code == 400
        field = re.search(r'<div class="field">(.*?)</div>', response.content.decode(), re.DOTALL).group(1)
        assert re.search(r"<input [^>]*>", field).group() == (
            '<input id="webhook-url" name="url" type="text" inputmode="url" autocomplete="url" maxlength="500"'
            ' required value="ftp://example.org/hook" placeholder="https://ci.example.org/podium-hook"'
            ' aria-invalid="true" aria-describedby="webhook-url-error" autofocus>'
        )

    def test_a_refused_urls_error_is_beside_the_field_sentence_first(self, owner, client):
        client.force_login(owner)
        body = client.post(reverse("webhook_update"), {"url": "ftp://example.org/hook"}).content.decode()
        field = re.search(r'<div class="field">(.*?)</div>', body, re.DOTALL).group(1)
        error = re.search(
            r'<p class="field-error" id="webhook-url-error" data-code="([^"]+)">(.*?)</p>', field, re.DOTALL
        )
        assert error.group(1) == "webhook_url_invalid"
        assert " ".join(re.sub(r"<[^>]+>", " ", error.group(2)).split()) == (
            "Expected an http:// or https:// URL. Code webhook_url_invalid"
        )
        assert 'class="error-box"' not in body  # the field's error only, not a second one above

    def test_a_new_secret_without_a_webhook_is_refused_above_the_form(self, owner, client):
        client.force_login(owner)
        response = client.post(reverse("webhook_update"), {"action": "rotate"})
        assert response.status_code == 400
        box = re.search(
            r'<div class="error-box" role="alert" data-code="webhook_not_set">(.*?)</div>',
            response.content.decode(),
            re.DOTALL,
        )
        assert (
            " ".join(re.sub(r"<[^>]+>", " ", box.group(1)).split())
            == "This account has no webhook. Code webhook_not_set"
        )
        assert 'aria-invalid="true"' not in response.content.decode()

    def test_anonymous_is_sent_to_sign_in(self, client):
        response = client.post(reverse("webhook_update"), {"url": self.URL})
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
        assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_the_sweeper_re_enqueues_only_overdue_pending_deliveries(owner, garbage):
    from submissions.tasks import deliver_notification, sweep_notifications

    old = timezone.now() - timedelta(seconds=notifications.SWEEP_GRACE_SECONDS + 60)
    overdue = NotificationDelivery.objects.create(submission=garbage, channel="email", target="a@example.org")
    fresh = NotificationDelivery.objects.create(submission=garbage, channel="webhook", target="https://93.184.216.34/")
    NotificationDelivery.objects.filter(pk=overdue.pk).update(updated_at=old)
    with mock.patch.object(deliver_notification, "delay") as delay:
        assert sweep_notifications() == 1
    delay.assert_called_once_with(overdue.pk)
    assert fresh.pk not in notifications.notifications_due_ids()


@pytest.mark.django_db
def test_staff_send_a_failed_notification_again_from_the_admin(
    owner, garbage, make_user, client, django_capture_on_commit_callbacks
):
    admin_user = make_user("admin")
    admin_user.is_staff = admin_user.is_superuser = True
    admin_user.save()
    failed = NotificationDelivery.objects.create(
        submission=garbage, channel="email", target="a@example.org", state="failed", attempts=6
    )
    client.force_login(admin_user)
    assert client.get("/admin/submissions/notificationdelivery/").status_code == 200
    with mock.patch.object(notifications, "_enqueue") as enqueue, django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/admin/submissions/notificationdelivery/", {"action": "send_again", "_selected_action": [failed.pk]}
        )
    failed.refresh_from_db()
    assert (failed.state, failed.attempts) == ("pending", 0)
    assert client.get("/admin/submissions/runvisibilityevent/").status_code == 200
    enqueue.assert_called_once_with(failed.pk)


def test_notifications_and_rescoring_go_to_the_follow_up_queue_never_ahead_of_verdicts(settings):
    from leaderboard.site.celery import route_task

    for name in ("submissions.tasks.deliver_notification", "submissions.tasks.compute_rescore"):
        assert route_task(name, (), {}, {}) == {"queue": settings.PODIUM_FOLLOWUP_QUEUE}
    assert route_task("submissions.tasks.verify_submission", (), {}, {}) is None


@pytest.mark.django_db
def test_the_api_keys_page_has_the_webhook_form_once_and_a_plain_title(owner, client):
    client.force_login(owner)
    body = client.get(reverse("api_keys")).content.decode()
    assert body.count('id="webhook-url"') == 1
    assert "<title>API keys" in body and "<title>API keys\n<section" not in body


PASSWORD = "a-long-test-password-1"


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_first_webhook_urls_at_once_keep_one_endpoint_and_are_not_a_500() -> None:
    owner = get_user_model().objects.create_user("carol", password=PASSWORD)
    api = api_for(owner)
    api.raise_request_exception = False
    first_secret: list[str | None] = []

    def first_url() -> None:
        first_secret.append(notifications.webhook_set(user=owner, url="https://93.184.216.34/first")[1])

    with committed_meanwhile(first_url):
        response = api.put("/api/v1/account/webhook/", {"url": "https://93.184.216.34/second"}, format="json")
    assert response.status_code == 200, (response.status_code, response.content)
    assert "secret" not in response.json()  # the first request's secret stands; it was shown once, to it
    endpoint = WebhookEndpoint.objects.get(user=owner)
    assert (endpoint.url, endpoint.secret) == ("https://93.184.216.34/second", first_secret[0])


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_first_webhook_forms_at_once_keep_one_endpoint_and_are_not_a_500() -> None:
    owner = get_user_model().objects.create_user("dave", password=PASSWORD)
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    first_secret: list[str | None] = []

    def first_url() -> None:
        first_secret.append(notifications.webhook_set(user=owner, url="https://93.184.216.34/first")[1])

    with committed_meanwhile(first_url):
        response = client.post("/accounts/api-keys/webhook/", {"url": "https://93.184.216.34/second"})
    assert response.status_code == 302, response.status_code
    assert WebhookEndpoint.objects.get(user=owner).url == "https://93.184.216.34/second"


@pytest.mark.django_db
def test_a_verdict_whose_notification_cannot_be_enqueued_still_lands_and_the_sweeper_owes_it(
    owner, receiver, loopback_allowed, garbage, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    # The broker away at the verdict's commit: the publish fails after the writes committed; it
    # is logged and left to the sweeper (the pending row), never raised into the verification.
    from kombu.exceptions import OperationalError as BrokerError

    from submissions import tasks

    def broker_down(delivery_id):
        raise BrokerError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    notifications.webhook_set(user=owner, url=receiver.url)
    monkeypatch.setattr(tasks.deliver_notification, "delay", broker_down)
    submission = verify(garbage, django_capture_on_commit_callbacks)  # raises nothing
    assert submission.verdict == "rejected"
    delivery = NotificationDelivery.objects.get(submission=submission, channel="webhook")
    assert delivery.state == "pending" and receiver.requests == []
    assert f"could not enqueue notification {delivery.pk}; the sweeper will" in caplog.text
