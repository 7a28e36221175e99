"""`manage.py load_demo`: a populated site through the real paths, idempotently.

Syncs the demo releases (examples/demo-release-0.4 and examples/demo-release),
signs them off and publishes them, registers a demo evaluator signing key per
simulator and a demo judge key calibrated for the reproduction tasks, and
pushes a dozen demo agents' podium-bundle/2 bundles (each made for a challenge
the demo user asks for) through submission_create + submission_verify as the
user ``demo-submitter`` (a mix: complete, partial coverage, judge-signed
faithfulness -> attested, self-declared -> validated, one mismatch, one rejected). Then the scorecard
and race demo loaders, when installed. Running it again changes nothing: a
bundle whose name the demo user already submitted is skipped (age sealing is
randomised, so the same run would otherwise be new bytes).
"""

from __future__ import annotations

import hashlib
import importlib
import io
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from celery import current_app
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from leaderboard.manifest import ManifestError, load_manifest
from leaderboard.models import Evaluator
from leaderboard.services.release_gates import release_sign_off_all
from leaderboard.services.release_sync import release_sync
from leaderboard.users import username_holder, username_lock
from submissions import site_keys
from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
from submissions.bundle.signatures import public_key_b64
from submissions.models import Submission
from submissions.services.challenges import ChallengeRequest, challenge_issue
from submissions.services.signing_keys import SigningKeyError, signing_key_register
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify

DEMO_USERNAME = "demo-submitter"
DEMO_MANIFESTS = ("examples/demo-release-0.4", "examples/demo-release")
# The demo evaluator key is derived from a fixed label, so re-runs sign identically
# and register the same key id. It is a demo key: never use it for a real evaluator.
DEMO_EVALUATOR_KEY_LABEL = b"podium demo evaluator key (public, never for real results)"
DEMO_JUDGE_KEY_LABEL = b"podium demo judge key (public, never for real verdicts)"
DEMO_JUDGE = "demo-judge/1"
DEMO_RUBRIC = "demo-rubric/1"


@dataclass(frozen=True)
class DemoRun:
    agent: str
    version: str
    skill: float
    seed: int
    signed: bool = False  # every result signed by its simulator's demo evaluator key
    judged: bool = False  # the faithfulness verdicts signed by the demo judge (else self-declared)
    tasks: int | None = None  # partial coverage: the first N task slugs
    # Partial coverage of only the tasks whose anchor is published: an unsigned result for a
    # withheld anchor would reveal it (leaderboard.disclosure), so an unsigned demo run covers none.
    published_anchors_only: bool = False
    tamper: str | None = None
    effort: str = "standard"
    extra: dict[str, Any] = field(default_factory=dict)


# Per release version. The mix covers every level a visitor can meet. Runs covering a task
# whose anchor is withheld are evaluator-signed (verification refuses an unsigned result for
# such a task: its scores would reveal the anchor); the unsigned example covers only
# published-anchor tasks. Judged runs (judge-signed faithfulness) are attested; the other
# consistent runs are validated ("self-declared faithfulness").
DEMO_RUNS: dict[str, tuple[DemoRun, ...]] = {
    "0.4": (
        DemoRun("Kestrel", "1.2", 0.86, 41, signed=True, judged=True),
        DemoRun("Baseline BC", "1.0", 0.55, 42, published_anchors_only=True),
        DemoRun("Voyager RL", "0.9", 0.74, 43, signed=True),
    ),
    "0.5": (
        DemoRun("Atlas Reproducer", "2.0", 1.05, 1, signed=True, judged=True, effort="high"),
        DemoRun("Kestrel", "1.3", 0.97, 2, signed=True, judged=True),
        DemoRun("Kestrel", "1.2", 0.88, 3, signed=True),
        DemoRun("Marlin", "3.1", 1.18, 4, signed=True, effort="high"),
        DemoRun("OpenHands Robotics", "0.9", 0.92, 5, signed=True),
        DemoRun("Voyager RL", "1.0", 0.81, 6, signed=True),
        DemoRun("Tinker", "0.4", 0.68, 7, signed=True, effort="low"),
        DemoRun("Baseline BC", "1.0", 0.55, 8, effort="low", published_anchors_only=True),
        DemoRun("Sparrow", "0.2", 1.0, 9, signed=True, tasks=4),
        DemoRun("Heron", "1.1", 0.85, 10, signed=True, tasks=7),
        DemoRun("Quill", "0.7", 0.9, 11, signed=True, tamper="claimed_score"),
        DemoRun("Mallard", "0.1", 0.8, 12, tamper="release_hash"),
        # Unsigned results on withheld-anchor tasks: refused (unsigned_withheld_task), nothing recorded.
        # Its skill is unlike any ranked run's, so no chosen success rate equals a signed one by chance.
        DemoRun("Magpie", "0.3", 0.42, 13),
    ),
}


def demo_evaluator_key(simulator: str = "") -> Ed25519PrivateKey:
    label = DEMO_EVALUATOR_KEY_LABEL + (b" " + simulator.encode() if simulator else b"")
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(label).digest())


def demo_judge_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(DEMO_JUDGE_KEY_LABEL).digest())


class Command(BaseCommand):
    help = "Load the demo releases and runs through the real verification path (idempotent)."

    def handle(self, *args, **options):
        # The demo verifies in-process. With a broker configured, the uploads' on-commit
        # enqueue (and each run's follow-ups) would also leave every task in the queue for
        # a worker to redo: run them eagerly here instead, so the broker sees nothing.
        # current_app: the site's Celery app (leaderboard.site loads it with the settings).
        saved = current_app.conf.task_always_eager
        current_app.conf.task_always_eager = True
        try:
            self._handle()
        except ManifestError as exc:
            raise CommandError(f"a demo manifest is invalid: {exc}") from None
        except SigningKeyError as exc:
            # A demo key revoked on this site (the admin's Revoke action): it can never be
            # registered again, so the demo cannot sign its runs here.
            raise CommandError(
                f"a demo signing key: {exc}. The demo signs its runs with fixed keys; load it into a fresh "
                "database (make clean removes the embedded one) rather than one where its keys were revoked"
            ) from None
        finally:
            current_app.conf.task_always_eager = saved

    def _handle(self) -> None:
        user = self._demo_user()  # first: a refused user leaves no site key generated
        recipient = self._site_recipient()
        manifests = []
        for relative in DEMO_MANIFESTS:
            path = Path(settings.BASE_DIR) / relative
            result = release_sync(manifest=path, user=None)
            # Calibrated with the demo judge's rubric: a judge's verdict counts only for the rubric
            # the release's faithfulness gate passed with.
            release = release_sign_off_all(release=result.release, user=None, rubric_version=DEMO_RUBRIC)
            state = "published" if release.published else "not published"
            self.stdout.write(f"release {release.benchmark.slug} {release.version}: {result.status}, {state}")
            manifests.append((load_manifest(path), release))

        # One evaluator key per simulator (a key signs only its simulator's tasks) and one judge
        # calibrated for every reproduction task of the demo releases.
        keys = {}
        demo_tasks = {
            release_task.task
            for _, release in manifests
            for release_task in release.release_tasks.select_related("task")
        }
        for simulator in sorted({task.simulator for manifest, _ in manifests for task in manifest.tasks}):
            keys[simulator] = demo_evaluator_key(simulator)
            evaluator = Evaluator.objects.get(simulator=simulator)
            # Narrowed to the demo's own tasks: the key's private half is public (derived from a
            # label), so unscoped it would sign for any task a real release later puts on this
            # simulator (docs/security-model.md, "Keys are scoped").
            signing = signing_key_register(
                evaluator=evaluator,
                tasks={task: "" for task in demo_tasks if task.simulator_id == evaluator.pk},
                public_key_b64=public_key_b64(keys[simulator]),
                user=None,
            )
            self.stdout.write(f"demo evaluator key {signing.key_id} registered for {simulator}'s demo tasks")
        calibrated = {
            release_task.task: DEMO_RUBRIC
            for _, release in manifests
            for release_task in release.release_tasks.select_related("task").filter(genre="reproduction")
        }
        judge = signing_key_register(
            judge_name=DEMO_JUDGE, tasks=calibrated, public_key_b64=public_key_b64(demo_judge_key()), user=None
        )
        self.stdout.write(f"demo judge key {judge.key_id} registered for {len(calibrated)} reproduction tasks")

        for manifest, release in manifests:
            for run in DEMO_RUNS.get(release.version, ()):
                self._submit(run, manifest=manifest, release=release, user=user, recipient=recipient, keys=keys)

        for module_name, function_name in (
            ("submissions.demo_loaders.scorecard", "load_scorecard_demo"),
            ("submissions.demo_loaders.race", "load_race_demo"),
        ):
            try:
                loader = getattr(importlib.import_module(module_name), function_name)
            except (ImportError, AttributeError):
                self.stdout.write(f"{module_name} not installed; skipped")
                continue
            loader(stdout=self.stdout)
        self.stdout.write("demo loaded")

    def _site_recipient(self) -> str:
        try:
            return site_keys.current_public_key()[1]
        except site_keys.SiteKeyError:
            if settings.PODIUM_SITE_KEYS:
                raise
            key = site_keys.keyring_append_new_key()
            self.stdout.write(f"generated site key {key.key_id}")
            return key.public_key

    def _demo_user(self) -> Any:
        users = get_user_model()
        # Usernames are unique whatever their case (leaderboard/migrations/0004): creating the
        # demo user beside such an account failed with an IntegrityError, a traceback naming
        # no account; submitting as that account would put the demo in someone else's name.
        with transaction.atomic():
            username_lock(DEMO_USERNAME)  # an admin adding the name meanwhile waits, or we do
            taken_by = username_holder(DEMO_USERNAME)
            if taken_by is not None and taken_by != DEMO_USERNAME:
                raise CommandError(
                    f"the account {taken_by!r} holds the demo's username {DEMO_USERNAME!r} in another case "
                    "(usernames are unique whatever their case); rename it in the admin, then run load_demo again."
                )
            user, created = users.objects.get_or_create(username=DEMO_USERNAME)
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
        return user

    def _submit(
        self, run: DemoRun, *, manifest: Any, release: Any, user: Any, recipient: str, keys: dict[str, Any]
    ) -> None:
        name = f"{manifest.benchmark.slug}-{manifest.version}-{run.agent}-{run.version}.age".replace(" ", "-").lower()
        existing = Submission.objects.filter(submitter=user, original_name=name).first()
        if existing is not None:
            self.stdout.write(f"  {name}: unchanged ({existing.verdict or existing.status})")
            return
        slugs = sorted(task.slug for task in manifest.tasks)
        if run.published_anchors_only:
            slugs = sorted(task.slug for task in manifest.tasks if task.anchor_published)
        challenge = challenge_issue(
            user=user,
            request=ChallengeRequest(
                benchmark=release.benchmark.slug,
                release=release.version,
                agent_name=run.agent,
                agent_version=run.version,
            ),
        )
        with tempfile.TemporaryDirectory(prefix="podium-demo-") as work:
            directory = write_paper_gap_bundle_dir(
                Path(work) / "bundle",
                release_manifest=manifest,
                agent_name=run.agent,
                agent_version=run.version,
                skill=run.skill,
                seed=run.seed,
                tasks=slugs[: run.tasks] if run.tasks else (slugs if run.published_anchors_only else None),
                tamper=run.tamper,
                sign_with=keys if run.signed else None,
                judge_with=demo_judge_key() if run.judged else None,
                judge_name=DEMO_JUDGE,
                rubric_version=DEMO_RUBRIC,
                challenge=challenge.token,
                effort_tier=run.effort,
            )
            sealed = seal_dir(directory, recipient).read_bytes()
        submission, _ = submission_create(user=user, uploaded_file=io.BytesIO(sealed), original_name=name)
        submission_verify(submission_id=submission.pk)
        submission.refresh_from_db()
        detail = f" {submission.error_code}" if submission.error_code else ""
        self.stdout.write(f"  {name}: {submission.verdict or submission.status}{detail}")
