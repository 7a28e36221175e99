"""`site_keys export` writes the identities encrypted to the operator's own age recipient,
`site_keys import` reads them back, `site_keys check` opens stored bundles with them."""

from __future__ import annotations

import io
import shutil
import stat
import subprocess
from pathlib import Path

import pyrage
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from submissions import site_keys


@pytest.fixture
def keyring(settings, tmp_path):
    settings.PODIUM_SITE_KEYS = ""
    settings.PODIUM_SITE_KEYS_FILE = tmp_path / "keys" / "site-keys.txt"
    return settings.PODIUM_SITE_KEYS_FILE


@pytest.fixture
def operator(tmp_path):
    """The operator's own age key pair: the identity file stays with them, off the server."""
    identity = pyrage.x25519.Identity.generate()
    path = tmp_path / "operator.key"
    path.write_text(f"# created: by age-keygen\n# public key: {identity.to_public()}\n{identity}\n")
    return identity, path


def export(tmp_path, operator, name="site-keys.age"):
    target = tmp_path / name
    call_command("site_keys", "export", "--recipient", str(operator[0].to_public()), "--output", str(target))
    return target


def test_export_holds_every_identity_but_only_the_operators_identity_opens_it(keyring, operator, tmp_path, capsys):
    call_command("site_keys", "generate")
    call_command("site_keys", "rotate")
    target = export(tmp_path, operator)
    data = target.read_bytes()
    assert data.startswith(b"-----BEGIN AGE ENCRYPTED FILE-----")
    assert b"AGE-SECRET-KEY" not in data
    assert stat.S_IMODE(Path(target).stat().st_mode) == 0o600
    plain = pyrage.decrypt(data, [operator[0]]).decode()
    assert [key.key_id for key in site_keys.parse_keyring(plain)] == [key.key_id for key in site_keys.site_keys()]
    with pytest.raises(pyrage.DecryptError):
        pyrage.decrypt(data, [pyrage.x25519.Identity.generate()])
    assert "AGE-SECRET-KEY" not in capsys.readouterr().out


def test_export_refuses_to_overwrite_a_file_and_a_recipient_that_is_not_an_age_key(keyring, operator, tmp_path):
    call_command("site_keys", "generate")
    export(tmp_path, operator)
    with pytest.raises(CommandError, match="already exists"):
        export(tmp_path, operator)
    with pytest.raises(CommandError, match=r"--recipient 'ssh-ed25519 AAAA': not an age X25519 recipient"):
        call_command("site_keys", "export", "--recipient", "ssh-ed25519 AAAA", "--output", str(tmp_path / "x"))


def test_import_onto_a_fresh_host_restores_the_keyring_with_the_same_current_key(keyring, operator, tmp_path, capsys):
    call_command("site_keys", "generate")
    call_command("site_keys", "rotate")
    original = [key.key_id for key in site_keys.site_keys()]
    target = export(tmp_path, operator)
    keyring.unlink()  # the host is lost
    capsys.readouterr()
    call_command("site_keys", "import", str(target), "--identity", str(operator[1]))
    assert [key.key_id for key in site_keys.site_keys()] == original
    assert stat.S_IMODE(Path(keyring).stat().st_mode) == 0o600
    assert f"2 key(s) added; current key {original[-1]}" in capsys.readouterr().out


def test_import_twice_adds_nothing_the_second_time(keyring, operator, tmp_path, capsys):
    call_command("site_keys", "generate")
    target = export(tmp_path, operator)
    call_command("site_keys", "import", str(target), "--identity", str(operator[1]))
    assert len(site_keys.site_keys()) == 1
    assert "0 key(s) added" in capsys.readouterr().out


def test_import_with_the_wrong_identity_is_refused_and_changes_nothing(keyring, operator, tmp_path):
    call_command("site_keys", "generate")
    target = export(tmp_path, operator)
    before = keyring.read_text()
    stranger = tmp_path / "stranger.key"
    stranger.write_text(f"{pyrage.x25519.Identity.generate()}\n")
    with pytest.raises(CommandError, match="does not open with the given identity"):
        call_command("site_keys", "import", str(target), "--identity", str(stranger))
    assert keyring.read_text() == before


def test_import_is_refused_when_the_keys_come_from_the_environment(settings, operator, tmp_path):
    settings.PODIUM_SITE_KEYS = str(pyrage.x25519.Identity.generate())
    target = export(tmp_path, operator)
    with pytest.raises(CommandError, match="site keys come from PODIUM_SITE_KEYS"):
        call_command("site_keys", "import", str(target), "--identity", str(operator[1]))


@pytest.mark.skipif(shutil.which("age") is None, reason="the age CLI is not installed")
def test_the_age_cli_opens_an_export_with_the_operators_identity(keyring, operator, tmp_path):
    call_command("site_keys", "generate")
    target = export(tmp_path, operator)
    done = subprocess.run(
        ["age", "-d", "-i", str(operator[1]), str(target)], capture_output=True, text=True, timeout=30, check=True
    )
    assert [key.key_id for key in site_keys.parse_keyring(done.stdout)] == [site_keys.site_keys()[0].key_id]


@pytest.mark.django_db
def test_check_opens_the_stored_bundles_and_fails_naming_one_the_keyring_cannot_open(
    owner, demo_release, seal, settings, capsys
):
    from submissions.services.submissions import submission_create
    from submissions.services.verification import submission_verify

    submission, _ = submission_create(user=owner, uploaded_file=io.BytesIO(seal()))
    submission_verify(submission_id=submission.pk)
    call_command("site_keys", "check")
    assert "1 stored bundle(s) open with the site keys" in capsys.readouterr().out

    settings.PODIUM_SITE_KEYS = str(pyrage.x25519.Identity.generate())  # the keys were lost
    with pytest.raises(CommandError, match="1 of 1 stored bundle"):
        call_command("site_keys", "check")
    assert f"FAILED {submission.pk}" in capsys.readouterr().out


def test_export_without_an_output_file_prints_the_armored_file_and_nothing_secret(keyring, operator, capsys):
    call_command("site_keys", "generate")
    capsys.readouterr()
    call_command("site_keys", "export", "--recipient", str(operator[0].to_public()))
    captured = capsys.readouterr()
    assert captured.out.startswith("-----BEGIN AGE ENCRYPTED FILE-----")
    assert "AGE-SECRET-KEY" not in captured.out
    plain = pyrage.decrypt(captured.out.encode(), [operator[0]]).decode()
    assert site_keys.parse_keyring(plain)[0].key_id == site_keys.site_keys()[0].key_id
