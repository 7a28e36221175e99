"""The README's harness example, run as written (stock curl, tar and age) against a live server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from leaderboard.models import Evaluator, Run
from submissions.api_keys import api_key_create
from submissions.bundle.signatures import private_key_pem, public_key_b64
from submissions.models import Submission, SubmissionChallenge
from submissions.services.signing_keys import signing_key_register

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("curl", "tar", "age")

missing = [tool for tool in TOOLS if shutil.which(tool) is None]
if missing:
    if os.environ.get("REQUIRE_SERVICES"):
        pytest.fail(f"the README harness needs {', '.join(missing)} and REQUIRE_SERVICES is set")
    pytest.skip(f"the README harness needs {', '.join(missing)}", allow_module_level=True)


def readme_blocks() -> list[str]:
    """The ```sh blocks of the README's "Submitting from a script" section."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Submitting from a script", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, flags=re.DOTALL)


def bash(script: str, *, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"stdout: {done.stdout}\nstderr: {done.stderr}"
    return done.stdout


@pytest.mark.django_db(transaction=True)
def test_the_readme_harness_example_uploads_a_bundle_that_verifies(
    live_server, owner, release_from_spec, site_identity, tmp_path
):
    from submissions.bundle.demo import DEMO_BENCHMARK, DEMO_RELEASE, demo_release_spec, write_paper_gap_bundle_dir

    spec, _ = demo_release_spec()
    release_from_spec(spec, benchmark=DEMO_BENCHMARK, version=DEMO_RELEASE)
    evaluator = Ed25519PrivateKey.generate()
    signing_key_register(
        evaluator=Evaluator.objects.get(simulator="demo-sim"), public_key_b64=public_key_b64(evaluator), user=None
    )
    (tmp_path / "evaluator.pem").write_bytes(private_key_pem(evaluator))
    env = {
        **os.environ,
        "PODIUM": live_server.url,
        "PODIUM_KEY": api_key_create(user=owner, name="harness").plaintext,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO),
    }
    first, second = readme_blocks()

    out = bash(first + '\nprintf "%s\\n%s\\n" "$RECIPIENT" "$CHALLENGE"\n', cwd=tmp_path, env=env)
    recipient, challenge = out.split()
    assert recipient == str(site_identity.to_public())
    assert SubmissionChallenge.objects.get(token=challenge).user == owner

    # What "the harness writes bundle/" stands for: a podium-bundle/2 directory for that challenge.
    write_paper_gap_bundle_dir(
        tmp_path / "bundle", agent_name="acme-agent", agent_version="2.3.0", challenge=challenge, episodes_per_task=5
    )
    out = bash(second, cwd=tmp_path, env={**env, "RECIPIENT": recipient, "CHALLENGE": challenge})
    assert '"status"' in out

    submission = Submission.objects.get(submitter=owner)
    assert (submission.verdict, submission.error_code, submission.bundle_format) == (
        "validated",
        "",
        "podium-bundle/2",
    )
    assert submission.error_message.endswith("not attested: self-declared faithfulness")
    assert Run.objects.get(submission=submission).task_results.filter(signature="valid").count() == 11
    assert SubmissionChallenge.objects.get(token=challenge).submission == submission
