"""The project's hand-written migrations, run for real: ``manage.py migrate`` on a fresh SQLite
file (the suite itself builds its database from the models, with ``--no-migrations``)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def migrate(database: Path, *target: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}"}
    return subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0", *target],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def add_accounts(database: Path, *usernames: str) -> None:
    with sqlite3.connect(database) as db:
        db.executemany(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, email, is_staff, "
            "is_active, date_joined) VALUES ('!', 0, ?, '', '', '', 0, 1, '2026-01-01 00:00:00')",
            [(username,) for username in usernames],
        )


def username_indexes(database: Path) -> list[str]:
    with sqlite3.connect(database) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'auth_user'")
        return sorted(name for (name,) in rows if not name.startswith("sqlite_autoindex"))


def test_migrate_builds_the_index_that_refuses_a_username_differing_only_in_case(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    done = migrate(database)
    assert done.returncode == 0, done.stderr
    assert username_indexes(database) == ["auth_user_username_lower_uniq"]
    add_accounts(database, "bob")
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed: index 'auth_user_username_lower_uniq'"):
        add_accounts(database, "Bob")
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT username FROM auth_user").fetchall() == [("bob",)]


def test_migrate_names_the_usernames_that_differ_only_in_case_and_builds_no_index(tmp_path: Path) -> None:
    database = tmp_path / "db.sqlite3"
    for target in ((), ("leaderboard", "0003")):  # every migration, then 0004 undone: its reverse drops the index
        done = migrate(database, *target)
        assert done.returncode == 0, done.stderr
    add_accounts(database, "Bob", "bob", "eve", "Eve", "carol")
    done = migrate(database)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "UsernameCaseClash: auth_user holds usernames that differ only in case, which the unique index on "
        "lower(username) refuses: 'Bob', 'bob'; 'Eve', 'eve'. Rename or remove all but one of each (the admin's "
        "user pages), then run migrate again."
    )
    assert "Traceback" not in done.stderr and "IntegrityError" not in done.stderr
    assert username_indexes(database) == []
