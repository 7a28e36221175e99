"""The submissions admin: read-only verdicts, re-verify, append-only attestations, key registration."""

import html
import io
import re

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.contrib.auth import get_user_model
from django.urls import reverse

from leaderboard.models import Evaluator, Run, SigningKey, VerificationEvent
from submissions.bundle.signatures import public_key_b64
from submissions.models import Submission
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify


@pytest.fixture
def admin_client(client, db):
    user = get_user_model().objects.create_superuser(username="root", password="a-long-test-password-123")
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def run(demo_release, seal, owner):
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    submission_verify(submission_id=submission.pk)
    return Run.objects.get(submission=submission)


@pytest.mark.django_db
def test_the_submission_page_shows_the_verdict_read_only(admin_client, run):
    url = reverse("admin:submissions_submission_change", args=[run.submission.pk])
    response = admin_client.get(url)
    assert response.status_code == 200
    assert b"validated" in response.content
    assert b'name="verdict"' not in response.content  # no editable field


@pytest.mark.django_db
def test_re_verify_queues_unfinished_submissions_and_skips_finished_ones(admin_client, run, owner, site_identity):
    pending, _ = submission_create(user=owner, uploaded_file=io.BytesIO(b"not an age file" * 8))
    response = admin_client.post(
        reverse("admin:submissions_submission_changelist"),
        {"action": "reverify", "index": 0, "_selected_action": [str(pending.pk), str(run.submission.pk)]},
        follow=True,
    )
    assert "Queued 1 submission(s); skipped 1 with a verdict of their own" in response.content.decode()
    pending.refresh_from_db()
    assert (pending.status, pending.error_code) == ("done", "not_age_file")  # tasks run in-process in tests


@pytest.mark.django_db
def test_an_admin_records_an_official_re_run_bundle_and_the_run_becomes_verified(admin_client, run, seal):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = admin_client.post(
        reverse("admin:leaderboard_run_rerun", args=[run.pk]),
        {"bundle": SimpleUploadedFile("rerun.age", seal()), "results": "", "note": "hidden seeds, 3 GPUs"},
    )
    assert response.status_code == 302, response.content.decode()[:800]
    event = VerificationEvent.objects.get(run=run, level="verified")
    assert event.actor == admin_client.user and event.rerun is not None
    run.refresh_from_db()
    assert run.level == "verified"


@pytest.mark.django_db
def test_the_admin_can_no_longer_add_a_verified_event_by_hand(admin_client, run):
    response = admin_client.post(
        reverse("admin:leaderboard_verificationevent_add"),
        {"run": run.pk, "method": "official re-run", "evidence_sha256": "cd" * 32, "note": ""},
    )
    assert response.status_code == 403
    run.refresh_from_db()
    assert run.level == "validated"


@pytest.mark.django_db
def test_verification_events_can_be_neither_changed_nor_deleted(admin_client, run):
    event = VerificationEvent.objects.get(run=run)
    change = admin_client.post(
        reverse("admin:leaderboard_verificationevent_change", args=[event.pk]),
        {"run": run.pk, "method": "edited", "evidence_sha256": "00" * 32},
    )
    delete = admin_client.post(reverse("admin:leaderboard_verificationevent_delete", args=[event.pk]), {"post": "yes"})
    assert change.status_code == 403
    assert delete.status_code == 403
    event.refresh_from_db()
    assert event.method.startswith("server recomputation")


@pytest.mark.django_db
def test_an_admin_registers_an_evaluator_signing_key(admin_client):
    evaluator = Evaluator.objects.create(simulator="carla")
    key = public_key_b64(Ed25519PrivateKey.generate())
    response = admin_client.post(
        reverse("admin:leaderboard_signingkey_add"), {"evaluator": evaluator.pk, "validator": "", "public_key_b64": key}
    )
    assert response.status_code == 302
    assert SigningKey.objects.get().public_key == key
    assert SigningKey.objects.get().registered_by == admin_client.user


@pytest.mark.django_db
def test_a_refused_signing_key_is_neither_logged_nor_announced_as_added(admin_client):
    from django.contrib.admin.models import LogEntry

    evaluator, other = Evaluator.objects.create(simulator="carla"), Evaluator.objects.create(simulator="isaac")
    key = public_key_b64(Ed25519PrivateKey.generate())
    form = {"evaluator": evaluator.pk, "validator": "", "public_key_b64": key}
    first = admin_client.post(reverse("admin:leaderboard_signingkey_add"), form, follow=True)
    assert "was added successfully" in first.content.decode()  # (its message read here, not later)
    logged = LogEntry.objects.count()
    # The same public key for another owner: refused by the service.
    again = admin_client.post(reverse("admin:leaderboard_signingkey_add"), {**form, "evaluator": other.pk}, follow=True)
    page = again.content.decode()
    assert "already registered" in page and "was added successfully" not in page
    assert LogEntry.objects.count() == logged and SigningKey.objects.count() == 1


@pytest.mark.django_db
def test_a_malformed_signing_key_is_refused_with_the_reason(admin_client):
    evaluator = Evaluator.objects.create(simulator="carla")
    response = admin_client.post(
        reverse("admin:leaderboard_signingkey_add"),
        {"evaluator": evaluator.pk, "validator": "", "public_key_b64": "abc"},
    )
    assert response.status_code == 200
    assert "public key: not valid base64" in response.content.decode()
    assert SigningKey.objects.count() == 0
    assert Submission.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("view", ["admin:leaderboard_run_rerun", "admin:leaderboard_run_level"])
def test_the_rerun_and_level_pages_need_the_change_run_permission_of_the_runs_own_app(client, run, view):
    """Run lives in the leaderboard app: a check of "submissions.change_run" (a permission that
    does not exist) let only superusers in, whatever permissions staff were given."""
    from django.contrib.auth.models import Permission

    staff = get_user_model().objects.create_user(username="staffer", password="a-long-test-password-123")
    staff.is_staff = True
    staff.save()
    client.force_login(staff)
    url = reverse(view, args=[run.pk])
    assert client.get(url).status_code == 403
    staff.user_permissions.add(Permission.objects.get(content_type__app_label="leaderboard", codename="change_run"))
    assert client.get(url).status_code == 200
    assert client.post(url, {}).status_code == 400  # the form's refusal: nothing recorded
    run.refresh_from_db()
    assert run.level == "validated" and list(run.events.values_list("level", flat=True)) == ["validated"]


@pytest.mark.django_db
def test_a_refused_re_run_shows_its_sentence_then_its_code(admin_client, run):
    response = admin_client.post(
        reverse("admin:leaderboard_run_rerun", args=[run.pk]), {"results": "[]", "note": "by hand"}
    )
    assert response.status_code == 400
    note = re.search(r'<p class="errornote">(.*?)</p>', response.content.decode(), re.DOTALL).group(1)
    assert html.unescape(" ".join(re.sub(r"<[^>]+>", " ", note).split())) == (
        "results: expected an object of task slug -> {measured, rates, faithful}. Code results_invalid"
    )


@pytest.mark.django_db
def test_after_a_compromise_staff_find_every_run_a_revoked_key_signed_from_the_keys_page(
    admin_client, demo_release, seal, owner
):
    """The documented remedy for a compromised key is to lower the runs it signed, one by one; the
    admin could not list them (no filter of runs by key), so staff had to search the database.
    The key's page links the run list filtered to the runs whose results or verdicts it signed."""
    from submissions.services.signing_keys import signing_key_register, signing_key_revoke

    private = Ed25519PrivateKey.generate()
    key = signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(private), user=None
    )
    signed = []
    for version, sign_with in (("1", private), ("2", private), ("3", None)):
        submission, _ = submission_create(
            user=owner, uploaded_file=io.BytesIO(seal(agent_version=version, seed=int(version), sign_with=sign_with))
        )
        submission_verify(submission_id=submission.pk)
        if sign_with is not None:
            signed.append(Run.objects.get(submission=submission).pk)
    signing_key_revoke(signing_key=key, user=admin_client.user)

    page = admin_client.get(reverse("admin:leaderboard_signingkey_change", args=[key.pk])).content.decode()
    listing = reverse("admin:leaderboard_run_changelist") + f"?signed_by={key.key_id}"
    assert f'href="{listing}"' in page and "2 runs" in page
    response = admin_client.get(listing)
    assert response.status_code == 200
    assert sorted(run.pk for run in response.context["cl"].result_list) == sorted(signed)
    other = signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"),
        public_key_b64=public_key_b64(Ed25519PrivateKey.generate()),
        user=None,
    )
    unused = admin_client.get(reverse("admin:leaderboard_run_changelist") + f"?signed_by={other.key_id}")
    assert (unused.status_code, list(unused.context["cl"].result_list)) == (200, [])
