"""Fixtures for the registry: copies of the demo manifests to edit, and staff users."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction

from leaderboard.users import username_lock
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


# How long the other transaction keeps its new account uncommitted: long enough that the request
# under test looks the name up (and, without the lock, INSERTs) while it is still uncommitted.
MEANWHILE_HOLD_SECONDS = 1.0


@contextlib.contextmanager
def account_created_meanwhile(username: str) -> Iterator[None]:
    """While the block runs, another connection is creating the account ``username`` as a
    concurrent admin (or ensure_admin) does: under the username lock, committed only after
    MEANWHILE_HOLD_SECONDS. Needs ``django_db(transaction=True)`` and PostgreSQL."""
    inserted = threading.Event()
    failure: list[BaseException] = []

    def other() -> None:
        try:
            with transaction.atomic():
                username_lock(username)
                get_user_model().objects.create_user(username, password="a-long-test-password-1")
                inserted.set()
                time.sleep(MEANWHILE_HOLD_SECONDS)
        except BaseException as exc:  # reported by the test's thread below
            failure.append(exc)
            inserted.set()
        finally:
            connection.close()

    thread = threading.Thread(target=other)
    thread.start()
    assert inserted.wait(10), "the other transaction never created its account"
    try:
        yield
    finally:
        thread.join(10)
    assert not failure, failure
