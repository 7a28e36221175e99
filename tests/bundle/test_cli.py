"""python -m submissions.bundle: keygen, seal, open, check, ed25519-keygen, sign-results, sign-faithfulness."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from submissions.bundle.cli import main
from submissions.bundle.demo import write_paper_gap_bundle_dir
from submissions.bundle.signatures import key_id_for, signed_payload

ROOT = Path(__file__).resolve().parents[2]
DEMO_RELEASE = ROOT / "examples" / "demo-release"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def keys(tmp_path, capsys) -> tuple[Path, str]:
    identity = tmp_path / "site.key"
    assert _run(capsys, "keygen", "-o", str(identity))[0] == 0
    public = next(line.split(": ")[1] for line in identity.read_text().splitlines() if line.startswith("# public key"))
    return identity, public


@pytest.fixture
def release_manifest():
    from leaderboard.manifest import load_manifest

    if not DEMO_RELEASE.is_dir():
        pytest.fail(f"{DEMO_RELEASE} is missing: the check command is tested against the demo release")
    return load_manifest(DEMO_RELEASE)


def test_help_works_without_django_or_a_database():
    env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL")}
    env["PYTHONPATH"] = str(ROOT)
    probe = (
        "import sys, submissions.bundle, submissions.bundle.cli, submissions.bundle.demo;print('django' in sys.modules)"
    )
    imported = subprocess.run([sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True)
    assert imported.stdout.strip() == "False", imported.stderr
    helped = subprocess.run(
        [sys.executable, "-m", "submissions.bundle", "--help"], env=env, cwd=ROOT, capture_output=True, text=True
    )
    assert helped.returncode == 0
    assert "seal" in helped.stdout and "check" in helped.stdout and "Traceback" not in helped.stderr


def test_keygen_writes_an_age_identity_readable_only_by_its_owner(keys):
    identity, public = keys
    assert public.startswith("age1")
    assert identity.read_text().splitlines()[-1].startswith("AGE-SECRET-KEY-1")
    assert identity.stat().st_mode & 0o777 == 0o600


def test_keygen_refuses_to_overwrite_a_key(keys, capsys):
    code, _, err = _run(capsys, "keygen", "-o", str(keys[0]))
    assert code == 4
    assert err == f"error: {keys[0]} already exists; refusing to overwrite a key\n"


def test_seal_writes_the_members_map_and_open_lists_them(tmp_path, keys, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["members"] = {}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    code, out, _ = _run(capsys, "seal", str(directory), "-r", keys[1], "-o", str(tmp_path / "run.age"))
    assert code == 0
    assert out.startswith(f"sealed {directory} -> {tmp_path / 'run.age'} (")
    assert len(json.loads((directory / "manifest.json").read_text())["members"]) == 13
    code, out, _ = _run(capsys, "open", str(tmp_path / "run.age"), "-i", str(keys[0]))
    assert code == 0
    assert out.splitlines()[0] == "run.age: paper_gap bundle, ale-robotics 0.5, agent demo-agent 1.0.0"
    assert "  results/orb-slam-ate.json  " in out


def test_open_can_write_the_members_out(tmp_path, keys, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5)
    _run(capsys, "seal", str(directory), "-r", keys[1], "-o", str(tmp_path / "run.age"))
    code, out, _ = _run(capsys, "open", str(tmp_path / "run.age"), "-i", str(keys[0]), "-o", str(tmp_path / "out"))
    assert code == 0
    assert out.endswith(f"written to {tmp_path / 'out'}\n")
    assert (tmp_path / "out" / "score_breakdown.json").read_bytes() == (directory / "score_breakdown.json").read_bytes()


def test_open_reports_a_rejection_without_a_traceback(tmp_path, keys, capsys):
    path = tmp_path / "empty.age"
    path.write_bytes(b"")
    code, out, err = _run(capsys, "open", str(path), "-i", str(keys[0]))
    assert (code, out, err) == (3, "", "rejected [empty_file]: empty.age: the file is empty (0 bytes)\n")


def test_seal_refuses_a_bad_recipient(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5)
    code, _, err = _run(capsys, "seal", str(directory), "-r", "age1nope", "-o", str(tmp_path / "x.age"))
    assert code == 4
    assert err == "error: not an age X25519 recipient (age1...): 'age1nope'\n"


def test_seal_refuses_a_directory_that_would_be_rejected(tmp_path, keys, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5)
    (directory / "faithfulness.json").write_text("{")
    code, _, err = _run(capsys, "seal", str(directory), "-r", keys[1], "-o", str(tmp_path / "x.age"))
    assert code == 3
    assert err.startswith("rejected [invalid_json]: faithfulness.json: invalid JSON at line 1 column 2")
    assert not (tmp_path / "x.age").exists()


def test_check_prints_the_servers_verdict(tmp_path, capsys, release_manifest):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", release_manifest=release_manifest, episodes_per_task=10)
    code, out, _ = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "verdict: validated"
    assert lines[1] == (
        "every claim matches the recomputation; not attested: podium-bundle/1 bundles carry no submission "
        "challenge; not every evaluator result is signed by a registered key; self-declared faithfulness"
    )
    assert lines[2] == "agent: demo-agent 1.0.0  release: ale-robotics 0.5"
    assert "coverage 11/11" in lines[3]
    assert any(line.split()[0] == "drones_hover_ppo" for line in lines[5:])


def test_check_takes_null_claims_of_a_withheld_anchors_values_as_the_server_does(tmp_path, capsys, release_manifest):
    import json

    withheld = next(task for task in release_manifest.tasks if not task.anchor_published)
    directory = write_paper_gap_bundle_dir(tmp_path / "run", release_manifest=release_manifest, episodes_per_task=10)
    claim_path = directory / "score_breakdown.json"
    claim = json.loads(claim_path.read_text())
    for field in ("gap", "score", "final"):
        claim["tasks"][withheld.slug][field] = None
    for aggregate in ("overall", withheld.genre):
        claim["aggregates"][aggregate] = None
    claim_path.write_text(json.dumps(claim))
    code, out, _ = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    assert code == 0, out
    assert out.splitlines()[1].endswith("(5 value(s) claimed as null: derived from a withheld anchor)")


def test_check_prints_the_diff_of_a_mismatch(tmp_path, capsys, release_manifest):
    directory = write_paper_gap_bundle_dir(
        tmp_path / "run", release_manifest=release_manifest, episodes_per_task=10, tamper="claimed_aggregate"
    )
    code, out, _ = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    assert code == 1
    assert out.splitlines()[0] == "verdict: mismatch"
    assert "  diff: aggregates.overall: claimed " in out


def test_check_prints_a_rejection_with_its_code(tmp_path, capsys, release_manifest):
    directory = write_paper_gap_bundle_dir(
        tmp_path / "run", release_manifest=release_manifest, episodes_per_task=10, tamper="release_hash"
    )
    code, out, _ = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--json", "--resamples", "0")
    assert code == 3
    doc = json.loads(out)
    assert (doc["verdict"], doc["error_code"]) == ("rejected", "release_hash_mismatch")


def test_check_rejects_a_bundle_for_another_release(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5, release_version="9.9")
    code, out, _ = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    assert code == 3
    assert out.splitlines()[:2] == [
        "verdict: rejected [unknown_release]",
        f"manifest.json: benchmark 'ale-robotics' release '9.9' is not the release in {DEMO_RELEASE} "
        "(ale-robotics 0.5)",
    ]


def test_sign_results_with_task_signs_only_those_tasks_so_each_evaluator_signs_its_own(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3, challenge="c" * 43)
    slugs = sorted(path.stem for path in (directory / "results").glob("*.json"))
    key = tmp_path / "carla.pem"
    assert _run(capsys, "ed25519-keygen", "-o", str(key))[0] == 0
    code, out, _ = _run(
        capsys, "sign-results", str(directory), "--key", str(key), "--task", slugs[0], "--task", slugs[1]
    )
    assert (code, out.startswith("signed 2 result file(s)")) == (0, True)
    signed = {p.stem for p in (directory / "results").glob("*.json") if "signature" in json.loads(p.read_text())}
    assert signed == set(slugs[:2])
    code, _, err = _run(capsys, "sign-results", str(directory), "--key", str(key), "--task", "no-such-task")
    assert code == 4 and "no results for task(s) no-such-task" in err


def test_signed_results_check_as_attested_with_the_trusted_key(tmp_path, capsys, release_manifest):
    from submissions.bundle.signatures import generate_signing_key, public_key_b64

    judge = generate_signing_key()
    directory = write_paper_gap_bundle_dir(
        tmp_path / "run",
        release_manifest=release_manifest,
        episodes_per_task=10,
        challenge="c" * 43,
        judge_with=judge,
    )
    key = tmp_path / "evaluator.pem"
    code, out, _ = _run(capsys, "ed25519-keygen", "-o", str(key))
    assert code == 0
    public = out.splitlines()[0].split(": ")[1]
    code, out, _ = _run(capsys, "sign-results", str(directory), "--key", str(key))
    assert (code, out.startswith("signed 11 result file(s) with key id ")) == (0, True)
    assert out.rstrip().endswith("(with the manifest's challenge)")
    trusted = ["--trust", public, "--trust-judge", public_key_b64(judge)]
    code, out, _ = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), *trusted, "--resamples", "0")
    assert (code, out.splitlines()[0]) == (0, "verdict: attested")
    code, out, _ = _run(
        capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--trust", public, "--resamples", "0"
    )
    assert (code, out.splitlines()[:2]) == (
        0,
        ["verdict: validated", "every claim matches the recomputation; not attested: self-declared faithfulness"],
    )
    code, out, _ = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    assert (code, out.splitlines()[0]) == (0, "verdict: validated")


def test_check_explains_an_unreadable_release_manifest(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=5)
    code, _, err = _run(capsys, "check", str(directory), "--manifest", str(tmp_path / "nowhere"))
    assert code == 4
    assert err.startswith(f"error: release manifest {tmp_path / 'nowhere'}: ")


def _keyfile(tmp_path, capsys, name: str) -> tuple[Path, str]:
    """A new Ed25519 key file (ed25519-keygen) and its public key."""
    path = tmp_path / name
    code, out, _ = _run(capsys, "ed25519-keygen", "-o", str(path))
    assert code == 0
    return path, out.splitlines()[0].split(": ")[1]


def test_sign_faithfulness_signs_every_verdict_with_its_rubric_and_the_challenge_and_check_attests_it(
    tmp_path, capsys, release_manifest
):
    directory = write_paper_gap_bundle_dir(
        tmp_path / "run", release_manifest=release_manifest, episodes_per_task=10, challenge="c" * 43
    )
    evaluator, evaluator_public = _keyfile(tmp_path, capsys, "evaluator.pem")
    judge, judge_public = _keyfile(tmp_path, capsys, "judge.pem")
    assert _run(capsys, "sign-results", str(directory), "--key", str(evaluator))[0] == 0
    code, out, _ = _run(capsys, "sign-faithfulness", str(directory), "--key", str(judge), "--rubric", "r3")
    verdicts = json.loads((directory / "faithfulness.json").read_text())
    assert (code, out) == (
        0,
        f"signed {len(verdicts)} faithfulness verdict(s) with key id {key_id_for(judge_public)} "
        "(rubric r3, with the manifest's challenge)\n",
    )
    assert {
        (slug, v["task"], v["rubric_version"], v["challenge"], v["signature"]["key_id"]) for slug, v in verdicts.items()
    } == {(slug, slug, "r3", "c" * 43, key_id_for(judge_public)) for slug in verdicts}
    # Each verdict names the results it judged: the digest of what the evaluator signed.
    signed_results = {slug: json.loads((directory / "results" / f"{slug}.json").read_text()) for slug in verdicts}
    assert {slug: v["results_sha256"] for slug, v in verdicts.items()} == {
        slug: hashlib.sha256(signed_payload(doc)).hexdigest() for slug, doc in signed_results.items()
    }
    trusted = ["--trust", evaluator_public, "--trust-judge", judge_public, "--resamples", "0"]
    # --keep-members: the members map sign-faithfulness rewrote is the one a tar of DIR carries.
    code, out, _ = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), *trusted, "--keep-members")
    assert (code, out.splitlines()[:2]) == (
        0,
        [
            "verdict: attested",
            "every claim matches, every evaluator result is signed by a registered key for its task, and every "
            "faithfulness verdict by a calibrated judge",
        ],
    )


def test_sign_faithfulness_refuses_a_verdict_whose_results_are_missing_and_signs_nothing(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3, challenge="c" * 43)
    before = (directory / "faithfulness.json").read_bytes()
    slug = min(json.loads(before))
    (directory / "results" / f"{slug}.json").unlink()
    judge, _ = _keyfile(tmp_path, capsys, "judge.pem")
    code, _, err = _run(capsys, "sign-faithfulness", str(directory), "--key", str(judge), "--rubric", "r3")
    assert (code, err) == (
        4,
        f"error: {directory / 'results' / f'{slug}.json'}: no results for task {slug!r}; a judge's verdict "
        "names the results it judged\n",
    )
    assert (directory / "faithfulness.json").read_bytes() == before


def test_check_warns_when_results_changed_after_the_judge_signed_their_verdict(tmp_path, capsys, release_manifest):
    directory = write_paper_gap_bundle_dir(
        tmp_path / "run", release_manifest=release_manifest, episodes_per_task=5, challenge="c" * 43
    )
    judge, _ = _keyfile(tmp_path, capsys, "judge.pem")
    assert _run(capsys, "sign-faithfulness", str(directory), "--key", str(judge), "--rubric", "r3")[0] == 0
    # The evaluator's results re-written after the judge judged them (another attempt's numbers).
    slug = min(json.loads((directory / "faithfulness.json").read_text()))
    path = directory / "results" / f"{slug}.json"
    results = json.loads(path.read_text())
    results["episodes"][0]["metric"] = 1.0 - results["episodes"][0]["metric"]
    path.write_text(json.dumps(results))
    _, _, err = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    assert f"warning: faithfulness.json: {slug}: the judge's verdict names results with SHA-256 " in err
    assert "(sign the results first, then have the judge sign the verdict)" in err
    assert "; the server refuses it [verdict_results_mismatch]\n" in err


def test_sign_faithfulness_with_task_signs_only_those_verdicts(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3, challenge="c" * 43)
    before = json.loads((directory / "faithfulness.json").read_text())
    first, *others = sorted(before)
    judge, _ = _keyfile(tmp_path, capsys, "judge.pem")
    code, out, _ = _run(
        capsys, "sign-faithfulness", str(directory), "--key", str(judge), "--rubric", "r3", "--task", first
    )
    assert (code, out.startswith("signed 1 faithfulness verdict(s)")) == (0, True)
    after = json.loads((directory / "faithfulness.json").read_text())
    assert "signature" in after[first]
    assert {slug: after[slug] for slug in others} == {slug: before[slug] for slug in others}


def test_sign_faithfulness_names_a_task_without_a_verdict_and_signs_nothing(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3, challenge="c" * 43)
    before = (directory / "faithfulness.json").read_bytes()
    judge, _ = _keyfile(tmp_path, capsys, "judge.pem")
    code, _, err = _run(
        capsys, "sign-faithfulness", str(directory), "--key", str(judge), "--rubric", "r3", "--task", "no-such-task"
    )
    assert (code, err) == (4, "error: faithfulness.json: no verdict for task(s) no-such-task\n")
    assert (directory / "faithfulness.json").read_bytes() == before


def test_sign_faithfulness_refuses_a_bundle_without_a_challenge_because_the_signature_must_cover_one(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3)  # podium-bundle/1
    before = (directory / "faithfulness.json").read_bytes()
    judge, _ = _keyfile(tmp_path, capsys, "judge.pem")
    code, _, err = _run(capsys, "sign-faithfulness", str(directory), "--key", str(judge), "--rubric", "r3")
    assert code == 4
    assert err == (
        f"error: {directory / 'manifest.json'}: no challenge; a judge signs a verdict together with the run's "
        "challenge (podium-bundle/2): ask the site for one (POST /api/v1/challenges/) and write it into "
        "manifest.json first\n"
    )
    assert (directory / "faithfulness.json").read_bytes() == before


def test_sign_faithfulness_refuses_a_verdict_the_server_would_refuse_and_leaves_the_file_as_it_was(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3, challenge="c" * 43)
    verdicts = json.loads((directory / "faithfulness.json").read_text())
    slug = min(verdicts)
    verdicts[slug]["faithful"] = "yes"
    (directory / "faithfulness.json").write_text(json.dumps(verdicts))
    before = (directory / "faithfulness.json").read_bytes()
    judge, _ = _keyfile(tmp_path, capsys, "judge.pem")
    code, _, err = _run(capsys, "sign-faithfulness", str(directory), "--key", str(judge), "--rubric", "r3")
    assert (code, err) == (
        3,
        f"rejected [schema_error]: faithfulness.json: {slug}.faithful must be true or false, got 'yes'\n",
    )
    assert (directory / "faithfulness.json").read_bytes() == before


def test_sign_faithfulness_without_a_faithfulness_file_says_there_is_nothing_to_sign(tmp_path, capsys):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3, challenge="c" * 43)
    (directory / "faithfulness.json").unlink()
    judge, _ = _keyfile(tmp_path, capsys, "judge.pem")
    code, _, err = _run(capsys, "sign-faithfulness", str(directory), "--key", str(judge), "--rubric", "r3")
    assert (code, err) == (4, f"error: {directory / 'faithfulness.json'}: no faithfulness.json to sign\n")


@pytest.mark.parametrize("command", [["sign-results"], ["sign-faithfulness", "--rubric", "r3"]])
def test_both_sign_commands_refuse_a_key_file_that_is_not_an_ed25519_key_alike(tmp_path, capsys, keys, command):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", episodes_per_task=3, challenge="c" * 43)
    age_identity = keys[0]  # an age identity, not an Ed25519 key
    code, _, err = _run(capsys, command[0], str(directory), "--key", str(age_identity), *command[1:])
    assert code == 4
    assert err.startswith(f"error: {age_identity}: not an Ed25519 private key (")


def test_check_warns_when_the_members_map_is_stale_and_names_each_file_with_the_servers_code(
    tmp_path, capsys, release_manifest
):
    directory = write_paper_gap_bundle_dir(
        tmp_path / "run", release_manifest=release_manifest, episodes_per_task=3, artifact_bytes=64
    )
    (directory / "artifacts" / "trajectory.bin").write_bytes(b"rewritten after the map was written")
    (directory / "artifacts" / "log.txt").write_text("added after the map was written\n")
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["members"]["artifacts/gone.bin"] = "0" * 64
    (directory / "manifest.json").write_text(json.dumps(manifest))
    code, out, err = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    # Judged as seal and submit pack it (a fresh map): the verdict is the run's, the warning the map's.
    assert (code, out.splitlines()[0]) == (0, "verdict: validated")
    assert err == (
        f"warning: {directory}/manifest.json members is stale (checked here as seal and submit pack the directory, "
        "with a fresh map):\n"
        "  artifacts/trajectory.bin: changed since the map was written [member_hash_mismatch]\n"
        "  artifacts/log.txt: not listed [unexpected_member]\n"
        "  artifacts/gone.bin: listed but absent [missing_member]\n"
        "the directory packed as it is (tar and age) would be rejected; seal or submit it with this tool, which "
        "rewrites the map, or see the verdict on the map as written with check --keep-members\n"
    )
    code, out, err = _run(
        capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0", "--keep-members"
    )
    assert (code, out.splitlines()[0], err) == (3, "verdict: rejected [missing_member]", "")


def test_check_says_nothing_of_a_members_map_that_matches_the_files(tmp_path, capsys, release_manifest):
    directory = write_paper_gap_bundle_dir(
        tmp_path / "run", release_manifest=release_manifest, episodes_per_task=3, artifact_bytes=64
    )
    code, _, err = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    assert (code, err) == (0, "")


def test_check_notes_an_empty_members_map_that_seal_fills_in(tmp_path, capsys, release_manifest):
    directory = write_paper_gap_bundle_dir(tmp_path / "run", release_manifest=release_manifest, episodes_per_task=3)
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["members"] = {}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    code, _, err = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    assert (code, err) == (
        0,
        f"note: {directory}/manifest.json lists no members yet; seal and submit write them, while the directory "
        "packed as it is (tar and age) would be rejected [unexpected_member]\n",
    )


def test_a_members_map_made_stale_by_a_harness_is_fresh_again_after_seal(tmp_path, capsys, keys, release_manifest):
    directory = write_paper_gap_bundle_dir(
        tmp_path / "run", release_manifest=release_manifest, episodes_per_task=3, artifact_bytes=64
    )
    (directory / "artifacts" / "log.txt").write_text("added after the map was written\n")
    assert _run(capsys, "seal", str(directory), "-r", keys[1], "-o", str(tmp_path / "run.age"))[0] == 0
    code, _, err = _run(capsys, "check", str(directory), "--manifest", str(DEMO_RELEASE), "--resamples", "0")
    assert (code, err) == (0, "")
