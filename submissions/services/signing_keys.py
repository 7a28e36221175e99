"""Ed25519 public keys registered for evaluators (attestation of results), judges
(faithfulness verdicts) and validators (race runs), each with its scope: an
evaluator key signs results of its simulator's tasks (narrowed by ``tasks``),
a judge key the verdicts of the tasks it is calibrated for (``tasks`` with
their rubric versions), a validator key race runs of one ``benchmark``. Admins register them; nothing is ever deleted, a
compromised key is revoked, and each registration, change of scope (registering a key again with
more tasks, or another rubric) and revocation is appended to the key's history with who did it
(SigningKeyEvent). Revocation looks forward: a result it signs counts from then on as
signed by an unregistered key, while a run it attested before keeps its level and its page
marks the key "since revoked" (docs/security-model.md); staff lower such runs by hand
(``submissions.services.reruns.run_level_change``)."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone

from leaderboard.models import (
    Benchmark,
    Evaluator,
    ReleaseTask,
    SigningKey,
    SigningKeyEvent,
    SigningKeyTask,
    Task,
    Validator,
)
from leaderboard.permissions import ADD_SIGNING_KEY, CHANGE_SIGNING_KEY, staff_write_actor
from submissions.bundle.signatures import small_order_public_key

ED25519_PUBLIC_KEY_BYTES = 32


class SigningKeyError(ValueError):
    """A key that cannot be registered, with a message naming what is wrong and a stable
    ``code`` for the API (``signing_key_invalid`` unless a more specific one applies)."""

    def __init__(self, message: str, *, code: str = "signing_key_invalid") -> None:
        super().__init__(message)
        self.code = code


def signing_key_id(raw: bytes) -> str:
    """First 16 hex characters of the SHA-256 of the raw 32-byte public key."""
    return hashlib.sha256(raw).hexdigest()[:16]


def decode_public_key(public_key_b64: str) -> bytes:
    """The raw key bytes of a base64 Ed25519 public key; SigningKeyError says what is wrong."""
    text = (public_key_b64 or "").strip()
    if not text:
        raise SigningKeyError("public key: empty; expected the base64 of a raw 32-byte Ed25519 public key")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise SigningKeyError(
            "public key: not valid base64; expected the base64 of a raw 32-byte Ed25519 public key"
        ) from None
    if len(raw) != ED25519_PUBLIC_KEY_BYTES:
        raise SigningKeyError(f"public key: decodes to {len(raw)} bytes; an Ed25519 public key is exactly 32 bytes")
    try:
        Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise SigningKeyError("public key: not a valid Ed25519 public key") from None
    if small_order_public_key(raw):
        raise SigningKeyError(
            "public key: a small-order point (such as all zero bytes), under which anyone can forge a signature; "
            "register the public half of a key pair you generated (python -m submissions.bundle ed25519-keygen)"
        )
    return raw


def _check_owner_and_scope(
    *,
    evaluator: Evaluator | None,
    validator: Validator | None,
    judge_name: str,
    benchmark: Benchmark | None,
    tasks: dict[Task, str] | None,
) -> None:
    """Exactly one owner, and the scope that owner's kind of key needs (see signing_key_register)."""
    owners = [evaluator is not None, validator is not None, bool(judge_name)]
    if sum(owners) != 1:
        raise SigningKeyError("owner: a signing key belongs to exactly one evaluator, validator or judge")
    if validator is not None and benchmark is None:
        raise SigningKeyError(
            "benchmark: a validator key signs race runs of one benchmark; name it", code="benchmark_missing"
        )
    if validator is not None and tasks:
        # Stored, it would read as a scope; a validator key's only scope is its benchmark.
        raise SigningKeyError("tasks: a validator key signs race runs of its benchmark; it takes no task scope")
    if validator is None and benchmark is not None:
        raise SigningKeyError(
            "benchmark: only a validator key is scoped to a benchmark; an evaluator key is scoped by its "
            "simulator (and tasks), a judge key by its tasks"
        )
    if judge_name and not tasks:
        raise SigningKeyError("tasks: a judge key signs verdicts only of the tasks it is calibrated for; list them")
    if len(judge_name) > 100:
        raise SigningKeyError("judge: at most 100 characters")
    for task, rubric in (tasks or {}).items():
        if evaluator is not None and not _runs_on(task, evaluator):
            raise SigningKeyError(f"tasks: {task.slug!r} runs on {task.simulator}, not on {evaluator}")
        if judge_name and not (rubric or "").strip():
            raise SigningKeyError(f"tasks: {task.slug!r} needs the rubric version the judge was calibrated with")


def _runs_on(task: Task, evaluator: Evaluator) -> bool:
    """Whether ``task`` runs on ``evaluator``'s simulator in some release: its shared row names the
    newest release's, and verification reads each release's own snapshot
    (leaderboard.selectors.releases.release_task_simulator), so a key for an older release's
    simulator may be narrowed to the task too."""
    return task.simulator_id == evaluator.pk or ReleaseTask.objects.filter(task=task, simulator=evaluator).exists()


@transaction.atomic
def signing_key_register(
    *,
    evaluator: Evaluator | None = None,
    validator: Validator | None = None,
    judge_name: str = "",
    benchmark: Benchmark | None = None,
    tasks: dict[Task, str] | None = None,
    public_key_b64: str,
    user: User | None,
) -> SigningKey:
    """Register a key for exactly one evaluator, validator or judge (named ``judge_name``).

    Scopes: a validator key needs ``benchmark`` (the race runs it may sign); a judge key
    needs ``tasks`` ({task: rubric version} it is calibrated for); an evaluator key may be
    narrowed to ``tasks`` of its simulator. Registering the same key again for the same
    owner returns the existing row (adding any new task scopes); for a different owner
    (or after it was revoked) it is refused.
    """
    staff_write_actor(user, ADD_SIGNING_KEY, doing="register signing keys")
    judge_name = (judge_name or "").strip()
    _check_owner_and_scope(
        evaluator=evaluator, validator=validator, judge_name=judge_name, benchmark=benchmark, tasks=tasks
    )
    raw = decode_public_key(public_key_b64)
    key_id = signing_key_id(raw)
    kind = (
        SigningKey.Owner.EVALUATOR
        if evaluator is not None
        else SigningKey.Owner.VALIDATOR
        if validator is not None
        else SigningKey.Owner.JUDGE
    )
    # get_or_create: two registrations of one key at once (two deploy jobs) both found no row,
    # and the second INSERT failed the unique key_id, a 500 (tests/submissions/test_signing_keys.py);
    # now the second meets the first's row and is checked against it like any re-registration.
    key, created = SigningKey.objects.get_or_create(
        key_id=key_id,
        defaults={
            "owner_kind": kind,
            "evaluator": evaluator,
            "validator": validator,
            "judge_name": judge_name,
            "benchmark": benchmark if validator is not None else None,
            "public_key": base64.b64encode(raw).decode("ascii"),
            "registered_by": user,
        },
    )
    if created:
        owner = evaluator or (f"{validator} on benchmark {benchmark.slug}" if validator and benchmark else judge_name)
        scope = ", ".join(_scope_text(task, rubric) for task, rubric in (tasks or {}).items())
        detail = f"{kind} {owner}" + (f": {scope}" if scope else "")
        SigningKeyEvent.objects.create(
            signing_key=key, action=SigningKeyEvent.Action.REGISTERED, actor=user, detail=detail[:500]
        )
    else:
        existing = SigningKey.objects.select_for_update().get(pk=key.pk)
        same_owner = (
            existing.owner_kind == kind
            and existing.evaluator_id == getattr(evaluator, "pk", None)
            and existing.validator_id == getattr(validator, "pk", None)
            and existing.judge_name == judge_name
            and existing.benchmark_id == getattr(benchmark, "pk", None)
        )
        if not same_owner:
            raise SigningKeyError(f"public key: already registered (key id {key_id}) for another owner")
        if existing.revoked_at is not None:
            raise SigningKeyError(f"public key: key {key_id} was revoked and cannot be registered again")
        key = existing
    if not created:
        _scope_changes_record(key=key, tasks=tasks or {}, user=user)
    for task, rubric in (tasks or {}).items():
        SigningKeyTask.objects.update_or_create(
            signing_key=key, task=task, defaults={"rubric_version": _rubric(rubric)}
        )
    return key


def _rubric(given: str | None) -> str:
    """A rubric version as stored on a key's task (``SigningKeyTask.rubric_version``, 100 characters)."""
    return (given or "").strip()[:100]


def _scope_text(task: Task, rubric: str) -> str:
    rubric = _rubric(rubric)
    return f"{task.slug} (rubric {rubric})" if rubric else task.slug


def _scope_changes_record(*, key: SigningKey, tasks: dict[Task, str], user: User | None) -> None:
    """An event per task a re-registration adds to ``key``'s scope, or moves to another rubric:
    either changes what the key may sign from now on."""
    current = dict(SigningKeyTask.objects.filter(signing_key=key).values_list("task_id", "rubric_version"))
    for task, given in tasks.items():
        rubric = _rubric(given)
        if task.pk not in current:
            action, detail = SigningKeyEvent.Action.SCOPE_ADDED, _scope_text(task, rubric)
        elif current[task.pk] != rubric:
            action, detail = SigningKeyEvent.Action.SCOPE_CHANGED, f"{task.slug}: rubric {current[task.pk]} -> {rubric}"
        else:
            continue
        SigningKeyEvent.objects.create(signing_key=key, action=action, actor=user, detail=detail[:500])


@transaction.atomic
def signing_key_revoke(*, signing_key: SigningKey, user: User | None) -> SigningKey:
    """Revoke a key (idempotent): it stops attesting new submissions. ``user``: staff holding
    ``leaderboard.change_signingkey`` (None for a script), recorded with the revocation (a
    SigningKeyEvent; a key already revoked records nothing more)."""
    staff_write_actor(user, CHANGE_SIGNING_KEY, doing="revoke signing keys")
    # Exclusively: a verdict counting this key holds it shared until it commits (signing_keys_revoked).
    _signer_locks(key_ids=[signing_key.key_id], shared=False)
    locked = SigningKey.objects.select_for_update().get(pk=signing_key.pk)
    if locked.revoked_at is None:
        locked.revoked_at = timezone.now()
        locked.save(update_fields=["revoked_at"])
        SigningKeyEvent.objects.create(signing_key=locked, action=SigningKeyEvent.Action.REVOKED, actor=user)
    return locked


class SigningKeysRevoked(Exception):
    """Keys a verdict counted were revoked while it was being reached (signing_keys_revoked)."""

    def __init__(self, key_ids: Iterable[str]) -> None:
        self.key_ids = sorted(key_ids)
        super().__init__(f"signing keys revoked during verification: {', '.join(self.key_ids)}")


def signing_keys_revoked(*, key_ids: Iterable[str]) -> set[str]:
    """Which of ``key_ids`` are revoked now, read inside the caller's transaction (the verdict's).

    Verification reads the keys before it recomputes a bundle (seconds for a large one) and
    records the run after: a revocation committed in between would let the key attest a run
    recorded after its revocation. So the verdict's transaction asks again before it records,
    holding each key's shared lock until it commits (PostgreSQL; SQLite serializes writers
    anyway), which ``signing_key_revoke`` takes exclusively: a revocation is either seen here
    or waits until this run is recorded, like any run the key attested before it."""
    wanted = sorted(set(key_ids) - {""})
    if not wanted:
        return set()
    _signer_locks(key_ids=wanted, shared=True)
    return set(SigningKey.objects.filter(key_id__in=wanted, revoked_at__isnull=False).values_list("key_id", flat=True))


def _signer_locks(*, key_ids: list[str], shared: bool) -> None:
    """On PostgreSQL, the transaction-scoped advisory lock of each signing key (sorted: two
    transactions sharing keys cannot deadlock)."""
    if connection.vendor != "postgresql":
        return
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {function}(hashtextextended(key, 0)) "  # noqa: S608 -- one of two fixed names
            "FROM (SELECT key FROM unnest(%s::text[]) WITH ORDINALITY AS k(key, position) ORDER BY position) AS s",
            [[f"signing-key:{key_id}" for key_id in sorted(key_ids)]],
        )


def evaluator_public_keys() -> dict[str, bytes]:
    """key_id -> raw public key of every active evaluator key (without scopes; the
    verification uses submissions.services.runs.scoped_evaluator_keys)."""
    return {
        key_id: base64.b64decode(public_key)
        for key_id, public_key in SigningKey.objects.filter(
            owner_kind=SigningKey.Owner.EVALUATOR, revoked_at__isnull=True
        ).values_list("key_id", "public_key")
    }
