import stat
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


def test_generate_writes_a_keyring_only_its_owner_can_read(keyring, capsys):
    call_command("site_keys", "generate")
    assert stat.S_IMODE(Path(keyring).stat().st_mode) == 0o600
    key_id, public = site_keys.current_public_key()
    assert public.startswith("age1")
    assert key_id == site_keys.key_id_for(public)
    assert capsys.readouterr().out.strip() == f"generated site key {key_id} {public}"


def test_generate_refuses_to_overwrite_an_existing_key(keyring):
    call_command("site_keys", "generate")
    with pytest.raises(CommandError, match="site keys already exist; use `site_keys rotate`"):
        call_command("site_keys", "generate")


def test_generate_if_missing_keeps_the_existing_key(keyring):
    call_command("site_keys", "generate")
    before = site_keys.current_public_key()
    call_command("site_keys", "generate", "--if-missing")
    assert site_keys.current_public_key() == before
    assert len(site_keys.site_keys()) == 1


def test_rotate_makes_a_new_current_key_and_old_keys_still_decrypt(keyring):
    call_command("site_keys", "generate")
    _, old_public = site_keys.current_public_key()
    sealed_to_old = pyrage.encrypt(b"bundle", [pyrage.x25519.Recipient.from_str(old_public)])
    call_command("site_keys", "rotate")
    _, new_public = site_keys.current_public_key()
    assert new_public != old_public
    assert pyrage.decrypt(sealed_to_old, site_keys.all_identities()) == b"bundle"


def test_list_shows_ids_and_public_keys_but_never_a_secret(keyring, capsys):
    call_command("site_keys", "generate")
    call_command("site_keys", "rotate")
    capsys.readouterr()
    call_command("site_keys", "list")
    out = capsys.readouterr().out
    keys = site_keys.site_keys()
    assert out.splitlines() == [
        f"{keys[0].key_id}  {keys[0].public_key}  old (still decrypts)",
        f"{keys[1].key_id}  {keys[1].public_key}  current",
    ]
    assert "AGE-SECRET-KEY" not in out


def test_keys_come_from_the_environment_comma_separated_newest_last(settings):
    first, second = pyrage.x25519.Identity.generate(), pyrage.x25519.Identity.generate()
    settings.PODIUM_SITE_KEYS = f"{first},{second}"
    assert site_keys.current_public_key()[1] == str(second.to_public())
    assert [str(i.to_public()) for i in site_keys.all_identities()] == [str(second.to_public()), str(first.to_public())]


def test_a_malformed_keyring_entry_is_named(settings):
    settings.PODIUM_SITE_KEYS = "AGE-SECRET-KEY-1NOTAKEY"
    with pytest.raises(site_keys.SiteKeyError, match="the PODIUM_SITE_KEYS environment variable, entry 1: not a valid"):
        site_keys.site_keys()


def test_a_missing_keyring_says_how_to_make_one(keyring):
    with pytest.raises(site_keys.SiteKeyError, match=r"run `python manage.py site_keys generate`"):
        site_keys.current_public_key()


def test_rotate_refuses_when_keys_come_from_the_environment(settings):
    settings.PODIUM_SITE_KEYS = str(pyrage.x25519.Identity.generate())
    with pytest.raises(CommandError, match="site keys come from PODIUM_SITE_KEYS"):
        call_command("site_keys", "rotate")
