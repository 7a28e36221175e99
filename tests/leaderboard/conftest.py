"""Fixtures for the registry: copies of the demo manifests to edit, and staff users."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard.users import username_lock
from tests.concurrency import committed_meanwhile
from tests.staff import staff_grant

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo-release"
DEMO_04 = REPO / "examples" / "demo-release-0.4"


@pytest.fixture
def demo_dir(tmp_path: Path) -> Path:
    """An editable copy of examples/demo-release (ALE Robotics 0.5, 11 tasks)."""
    target = tmp_path / "demo-release"
    shutil.copytree(DEMO, target)
    return target


@pytest.fixture
def demo_04_dir(tmp_path: Path) -> Path:
    target = tmp_path / "demo-release-0.4"
    shutil.copytree(DEMO_04, target)
    return target


@pytest.fixture
def edit() -> Callable[[Path, str, str, str], None]:
    """Replace exactly one occurrence of ``old`` by ``new`` in a manifest file."""

    def replace(root: Path, relpath: str, old: str, new: str) -> None:
        path = root / relpath
        text = path.read_text()
        assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {relpath}"
        path.write_text(text.replace(old, new))

    return replace


@pytest.fixture
def staff(db):
    """A maintainer: staff with every staff-write permission (a helper without them: test_permissions)."""
    return staff_grant(get_user_model().objects.create_user("maintainer", password="pw-maintainer-1", is_staff=True))


@pytest.fixture
def helper(db):
    """A staff account given no permission: it reads as staff and may write nothing."""
    return get_user_model().objects.create_user("helper", password="pw-helper-12345", is_staff=True)


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_superuser("root", email="", password="pw-root-12345")


@pytest.fixture
def visitor(db):
    return get_user_model().objects.create_user("visitor", password="pw-visitor-1")


def account_created_meanwhile(username: str, *, superuser: bool = False) -> contextlib.AbstractContextManager[None]:
    """While the block runs, another connection is creating the account ``username`` as a
    concurrent admin (or ensure_admin) does: under the username lock, committed only a second
    after the block starts, so the request under test looks the name up (and, without the lock,
    INSERTs) while it is still uncommitted. Needs ``django_db(transaction=True)`` and PostgreSQL."""

    def create() -> None:
        username_lock(username)
        create = get_user_model().objects.create_superuser if superuser else get_user_model().objects.create_user
        create(username, password="a-long-test-password-1")

    return committed_meanwhile(create, hold_seconds=1.0)
