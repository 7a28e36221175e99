import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.contrib.auth import get_user_model

from leaderboard.models import Evaluator, SigningKey, Validator
from submissions.services.signing_keys import (
    SigningKeyError,
    evaluator_public_keys,
    signing_key_register,
    signing_key_revoke,
)
from tests.api_clients import api_for
from tests.concurrency import committed_meanwhile, on_postgresql_committing
from tests.staff import staff_grant


def new_public_key() -> tuple[bytes, str]:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return raw, base64.b64encode(raw).decode()


@pytest.fixture
def evaluator(db):
    return Evaluator.objects.create(simulator="robosuite")


@pytest.mark.django_db
def test_it_registers_an_evaluator_key_under_its_id(evaluator):
    from tests.staff import staff_with

    maintainer = staff_with("maintainer", "leaderboard.add_signingkey")
    raw, b64 = new_public_key()
    key = signing_key_register(evaluator=evaluator, public_key_b64=b64, user=maintainer)
    assert (key.owner_kind, key.evaluator, key.public_key, key.registered_by) == (
        "evaluator",
        evaluator,
        b64,
        maintainer,
    )
    assert key.key_id == hashlib.sha256(raw).hexdigest()[:16]
    assert evaluator_public_keys() == {key.key_id: raw}


@pytest.mark.django_db
def test_it_registers_a_validator_key(owner):
    from leaderboard.models import Benchmark

    benchmark = Benchmark.objects.create(slug="shop-race", name="Shop", scheme="race")
    validator = Validator.objects.create(slug="val", name="Val")
    key = signing_key_register(validator=validator, benchmark=benchmark, public_key_b64=new_public_key()[1], user=None)
    assert (key.owner_kind, key.benchmark_id) == ("validator", benchmark.pk)
    assert evaluator_public_keys() == {}


@pytest.mark.django_db
def test_registering_the_same_key_twice_returns_the_same_row(evaluator, owner):
    b64 = new_public_key()[1]
    first = signing_key_register(evaluator=evaluator, public_key_b64=b64, user=None)
    assert signing_key_register(evaluator=evaluator, public_key_b64=b64, user=None).pk == first.pk
    assert SigningKey.objects.count() == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "public key: empty; expected the base64 of a raw 32-byte Ed25519 public key"),
        ("not base64!", "public key: not valid base64; expected the base64 of a raw 32-byte Ed25519 public key"),
        (
            base64.b64encode(b"x" * 31).decode(),
            "public key: decodes to 31 bytes; an Ed25519 public key is exactly 32 bytes",
        ),
    ],
)
@pytest.mark.django_db
def test_it_refuses_a_malformed_key_saying_what_is_wrong(evaluator, owner, value, message):
    with pytest.raises(SigningKeyError) as refused:
        signing_key_register(evaluator=evaluator, public_key_b64=value, user=None)
    assert str(refused.value) == message
    assert SigningKey.objects.count() == 0


@pytest.mark.django_db
def test_a_key_needs_exactly_one_owner(owner):
    with pytest.raises(SigningKeyError, match="exactly one evaluator, validator or judge"):
        signing_key_register(public_key_b64=new_public_key()[1], user=None)


@pytest.mark.django_db
def test_a_scope_the_keys_kind_does_not_take_is_refused_and_nothing_is_stored(evaluator, owner):
    from leaderboard.models import Benchmark, Task

    benchmark = Benchmark.objects.create(slug="shop-race", name="Shop", scheme="race")
    validator = Validator.objects.create(slug="val", name="Val")
    task = Task.objects.create(
        benchmark=benchmark, slug="t", title="T", platform="manipulation", direction="learning",
        simulator=evaluator, genre="open", mode="batch", metric_name="m", metric_direction="higher_is_better",
        paper_md="-", brief_md="-",
    )  # fmt: skip
    with pytest.raises(SigningKeyError, match="a validator key signs race runs of its benchmark; it takes no task"):
        signing_key_register(
            validator=validator, benchmark=benchmark, tasks={task: ""}, public_key_b64=new_public_key()[1], user=None
        )
    with pytest.raises(SigningKeyError, match="only a validator key is scoped to a benchmark"):
        signing_key_register(evaluator=evaluator, benchmark=benchmark, public_key_b64=new_public_key()[1], user=None)
    assert not SigningKey.objects.exists()


@pytest.mark.django_db
def test_a_revoked_key_no_longer_attests_and_cannot_come_back(evaluator, owner):
    b64 = new_public_key()[1]
    key = signing_key_register(evaluator=evaluator, public_key_b64=b64, user=None)
    signing_key_revoke(signing_key=key, user=None)
    assert evaluator_public_keys() == {}
    with pytest.raises(SigningKeyError, match="was revoked and cannot be registered again"):
        signing_key_register(evaluator=evaluator, public_key_b64=b64, user=None)


@pytest.mark.django_db
def test_registering_or_revoking_a_key_needs_its_permission_whoever_calls_the_service(evaluator, make_user):
    """The admin and the API check first; the service checks again (leaderboard.permissions)."""
    from django.core.exceptions import PermissionDenied

    from tests.staff import staff_with

    viewer = staff_with("viewer")
    with pytest.raises(PermissionDenied):
        signing_key_register(evaluator=evaluator, public_key_b64=new_public_key()[1], user=viewer)
    with pytest.raises(PermissionDenied):
        signing_key_register(evaluator=evaluator, public_key_b64=new_public_key()[1], user=make_user("someone"))
    assert SigningKey.objects.count() == 0
    key = signing_key_register(
        evaluator=evaluator, public_key_b64=new_public_key()[1], user=staff_with("adder", "leaderboard.add_signingkey")
    )
    with pytest.raises(PermissionDenied):
        signing_key_revoke(signing_key=key, user=staff_with("adder-only", "leaderboard.add_signingkey"))
    key.refresh_from_db()
    assert key.revoked_at is None
    signing_key_revoke(signing_key=key, user=staff_with("revoker", "leaderboard.change_signingkey"))
    key.refresh_from_db()
    assert key.revoked_at is not None


PASSWORD = "a-long-test-password-1"


@pytest.mark.django_db(transaction=True)
@on_postgresql_committing
def test_two_registrations_of_one_signing_key_at_once_keep_one_row_and_are_not_a_500() -> None:
    staff = staff_grant(get_user_model().objects.create_user("erin", password=PASSWORD, is_staff=True))
    evaluator = Evaluator.objects.create(simulator="robosuite+robomimic")
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    public_key = base64.b64encode(raw).decode()
    api = api_for(staff)
    api.raise_request_exception = False

    def first_registration() -> None:
        signing_key_register(evaluator=evaluator, public_key_b64=public_key, user=None)

    with committed_meanwhile(first_registration):
        response = api.post(
            "/api/v1/admin/signing-keys/",
            {"owner_kind": "evaluator", "owner": "robosuite+robomimic", "public_key": public_key},
            format="json",
        )
    assert response.status_code in (200, 201), (response.status_code, response.content)
    assert SigningKey.objects.filter(public_key=public_key).count() == 1


@pytest.mark.django_db
def test_every_key_action_is_recorded_with_who_did_it_and_when_and_shown_to_staff(demo_release, client):
    """Who registered a key is on its row, but who revoked it, or widened its scope by registering
    it again (a judge key calibrated for one more task, or under another rubric), was nowhere:
    the admin's revoke action wrote no history, and a re-registration changed the scope silently.
    Each action is now an appended event, shown on the key's admin page and in the staff API."""
    from django.contrib.admin import helpers
    from django.urls import reverse

    from leaderboard.models import ReleaseTask, SigningKeyEvent
    from tests.staff import staff_with

    first, second = (
        rt.task.slug
        for rt in ReleaseTask.objects.filter(release=demo_release, genre="reproduction").order_by("position")[:2]
    )
    public_key = new_public_key()[1]
    registrar = staff_with("registrar", "leaderboard.add_signingkey")
    widener = staff_with("widener", "leaderboard.add_signingkey")
    revoker = staff_with("revoker", "leaderboard.change_signingkey", "leaderboard.view_signingkey")
    body = {"owner_kind": "judge", "owner": "judge/1", "benchmark": "ale-robotics", "public_key": public_key}
    created = api_for(registrar).post("/api/v1/admin/signing-keys/", {**body, "tasks": [f"{first}@r1"]}, format="json")
    assert created.status_code == 201, created.content
    again = api_for(widener).post(
        "/api/v1/admin/signing-keys/", {**body, "tasks": [f"{first}@r2", f"{second}@r1"]}, format="json"
    )
    assert again.status_code == 200, again.content
    key = SigningKey.objects.get(public_key=public_key)
    client.force_login(revoker)
    data = {"action": "revoke", helpers.ACTION_CHECKBOX_NAME: [str(key.pk)], "index": "0"}
    assert client.post(reverse("admin:leaderboard_signingkey_changelist"), data).status_code == 302
    # A second revoke changes nothing, so it records nothing.
    assert client.post(reverse("admin:leaderboard_signingkey_changelist"), data).status_code == 302

    events = list(SigningKeyEvent.objects.filter(signing_key=key).values_list("action", "actor__username", "detail"))
    assert events == [
        ("registered", "registrar", f"judge judge/1: {first} (rubric r1)"),
        ("scope_changed", "widener", f"{first}: rubric r1 -> r2"),
        ("scope_added", "widener", f"{second} (rubric r1)"),
        ("revoked", "revoker", ""),
    ]
    listed = api_for(staff_with("reader")).get("/api/v1/admin/signing-keys/").json()["results"][0]
    assert [(e["action"], e["actor"], e["detail"]) for e in listed["events"]] == events
    assert listed["registered_by"] == "registrar"
    page = client.get(reverse("admin:leaderboard_signingkey_change", args=[key.pk])).content.decode()
    assert "scope_changed" in page and "widener" in page and "revoker" in page


@pytest.mark.django_db
def test_it_refuses_a_small_order_key_under_which_anyone_forges_a_signature(evaluator, owner):
    for raw in (bytes(32), b"\x01" + bytes(31), b"\xec" + b"\xff" * 30 + b"\xff"):
        with pytest.raises(SigningKeyError) as refused:
            signing_key_register(evaluator=evaluator, public_key_b64=base64.b64encode(raw).decode(), user=None)
        assert refused.value.code == "signing_key_invalid"
        assert str(refused.value).startswith("public key: a small-order point (such as all zero bytes)")
    assert SigningKey.objects.count() == 0


@pytest.mark.django_db
def test_a_key_may_be_narrowed_to_a_task_its_simulator_ran_in_an_older_release(demo_release):
    from leaderboard.models import ReleaseTask, Task

    moved = ReleaseTask.objects.filter(release=demo_release).order_by("task__slug").first()
    old = moved.simulator
    # A newer release moved the task to another simulator: the shared row names the newer one.
    Task.objects.filter(pk=moved.task_id).update(simulator=Evaluator.objects.create(simulator="sim-next"))
    task = Task.objects.get(pk=moved.task_id)
    key = signing_key_register(evaluator=old, tasks={task: ""}, public_key_b64=new_public_key()[1], user=None)
    assert list(key.task_scopes.values_list("task_id", flat=True)) == [task.pk]
