"""Runtime and tokens come from manifest.json, which no evaluator or judge signs: whatever the
submitter writes there is what the run shows, even on an attested run. So no page, export or
API description may call them harness-recorded (seed 000 reserves that word for the LLM
gateway's authoritative usage log, which Podium never sees): they are labelled
submitter-reported, and so is the cost priced from them (docs/scoring.md, decisions)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Evaluator, ReleasePrice, ReleaseTask, Run, RunCost
from submissions.bundle.demo import seal_dir, write_paper_gap_bundle_dir
from submissions.bundle.signatures import public_key_b64
from submissions.services.signing_keys import signing_key_register
from submissions.services.submissions import submission_create
from submissions.services.verification import submission_verify

HARNESS = ("harness-recorded", "harness_recorded", "Harness-recorded", "LLM gateway")


@pytest.fixture
def attested_run_with_forged_usage(demo_release, owner, issue_challenge, tmp_path, site_identity):
    """An attested run (every result and verdict signed) whose manifest claims 1 token and 1 second."""
    from decimal import Decimal

    ReleasePrice.objects.create(
        release=demo_release, model="*", input_usd_per_mtok=Decimal(3), output_usd_per_mtok=Decimal(15)
    )
    evaluator = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(evaluator), user=None
    )
    judge = Ed25519PrivateKey.generate()
    reproduction = ReleaseTask.objects.filter(release=demo_release, genre="reproduction")
    # The release's faithfulness gate passed with rubric/1: a judge key counts for what was calibrated.
    reproduction.update(faithfulness_rubric_version="rubric/1", faithfulness_calibrated_at=timezone.now())
    tasks = {rt.task: "rubric/1" for rt in reproduction}
    signing_key_register(judge_name="judge/1", tasks=tasks, public_key_b64=public_key_b64(judge), user=None)
    directory = write_paper_gap_bundle_dir(
        tmp_path / "bundle", sign_with=evaluator, judge_with=judge, challenge=issue_challenge(owner)
    )
    # The submitter edits the unsigned manifest after the evaluator and judge have signed.
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["runtime_seconds"] = 1
    manifest["tokens"] = {"input": 1, "output": 0}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    sealed = seal_dir(directory, str(site_identity.to_public())).read_bytes()
    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(sealed), is_private=False)
    submission = submission_verify(submission_id=submission.pk)
    assert submission.verdict == "attested", submission.error_message
    return Run.objects.get(submission=submission)


@pytest.mark.django_db
def test_the_manifest_usage_is_taken_as_written_even_on_an_attested_run(attested_run_with_forged_usage):
    run = attested_run_with_forged_usage
    assert (run.runtime_seconds, run.tokens_in, run.tokens_out) == (1, 1, 0)
    assert RunCost.objects.get(run=run).usd == pytest.approx(3 / 1_000_000)


@pytest.mark.django_db
def test_the_run_page_and_the_board_label_runtime_and_tokens_submitter_reported(client, attested_run_with_forged_usage):
    run = attested_run_with_forged_usage
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    board_url = reverse("release_board", args=[run.release.benchmark.slug, run.release.version])
    board = client.get(board_url).content.decode()
    for html in (page, board):
        assert not any(word in html for word in HARNESS), [word for word in HARNESS if word in html]
    assert page.count('<span class="th-note">submitter-reported</span>') == 2
    assert board.count('<span class="th-note">submitter-reported</span>') == 2
    assert "cost-basis--recorded" in board and "priced from submitter-reported tokens" in board


@pytest.mark.django_db
def test_the_exports_name_runtime_and_tokens_submitter_reported(client, attested_run_with_forged_usage):
    run = attested_run_with_forged_usage
    args = [run.release.benchmark.slug, run.release.version]
    response = client.get(reverse("board_csv", args=args))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert float(rows[0]["runtime_seconds_submitter_reported"]) == 1
    assert rows[0]["tokens_submitter_reported"] == "1"
    assert not any(word in name for name in rows[0] for word in HARNESS)
    data = json.loads(client.get(reverse("board_json", args=args)).content)
    assert data["rows"][0]["tokens_submitter_reported"] == 1
    assert not any(word in json.dumps(data["notes"]) for word in HARNESS)
