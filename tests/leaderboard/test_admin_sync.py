"""The admin side of the registry: sync_manifest, ensure_admin, the upload form and admin actions."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import base as management_base
from django.core.management import call_command, execute_from_command_line
from django.db import connection
from django.test import Client
from django.urls import reverse

from leaderboard.models import Benchmark, Release, ReleaseTask
from leaderboard.services.release_gates import release_sign_off_all
from leaderboard.services.release_sync import release_sync
from tests.leaderboard.conftest import account_created_meanwhile

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("keep_db_connection")]

UPLOAD = "admin:leaderboard_release_upload"


@pytest.fixture
def keep_db_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    # run_from_argv closes every connection when the command ends, which would drop the test
    # database's connection (and its transaction) on PostgreSQL.
    monkeypatch.setattr(management_base.connections, "close_all", lambda: None)


def run_command(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run a command the way manage.py does (exit code, stdout, stderr)."""
    code = 0
    try:
        execute_from_command_line(["manage.py", *argv])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def zipped(root: Path, extra: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(root).as_posix())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


# ------------------------------------------------------------- sync_manifest


def test_sync_manifest_prints_what_changed_and_exits_zero(demo_dir: Path, capsys) -> None:
    code, out, err = run_command(capsys, "sync_manifest", str(demo_dir))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "ale-robotics 0.5: created"
    assert "  task a1_stairs_climb: created" in lines
    assert "  release task a1_stairs_climb: added" in lines
    assert Release.objects.get().version == "0.5"


def test_sync_manifest_says_unchanged_the_second_time(demo_dir: Path, capsys) -> None:
    run_command(capsys, "sync_manifest", str(demo_dir))
    code, out, _ = run_command(capsys, "sync_manifest", str(demo_dir))
    assert code == 0
    assert out.splitlines()[0] == "ale-robotics 0.5: unchanged"


def test_sync_manifest_lists_every_problem_and_exits_one_without_a_traceback(demo_dir: Path, edit, capsys) -> None:
    edit(demo_dir, "tasks/a1_stairs_climb/task.yaml", "genre: open", "genre: closed")
    edit(demo_dir, "tasks/drones_hover_ppo/task.yaml", "limit: 0.05", "limit: 0")
    code, out, err = run_command(capsys, "sync_manifest", str(demo_dir))
    assert (code, out) == (1, "")
    assert err == (
        f"CommandError: {demo_dir}: manifest refused\n"
        "the manifest has 2 problems:\n"
        "  tasks/drones_hover_ppo/task.yaml:19: penalties[0].limit: expected a number > 0 "
        "(factor = 1 - min(1, rate / limit)), got 0\n"
        "  tasks/a1_stairs_climb/task.yaml:6: genre: expected one of reproduction, open, got 'closed'\n"
    )
    assert "Traceback" not in err
    assert Benchmark.objects.count() == 0


def test_sync_manifest_accepts_a_zip(demo_dir: Path, tmp_path: Path, capsys) -> None:
    archive = tmp_path / "demo.zip"
    archive.write_bytes(zipped(demo_dir))
    code, out, _ = run_command(capsys, "sync_manifest", str(archive))
    assert code == 0
    assert out.splitlines()[0] == "ale-robotics 0.5: created"


def test_sync_manifest_refuses_a_published_release_change_with_the_bump_message(demo_dir: Path, edit, capsys) -> None:
    release_sign_off_all(release=release_sync(manifest=demo_dir, user=None).release, user=None)
    edit(demo_dir, "tasks/a1_stairs_climb/brief.md", "Climb the stairs", "Climb all the stairs")
    code, _, err = run_command(capsys, "sync_manifest", str(demo_dir))
    assert code == 1
    assert err.splitlines()[-1] == (
        "  release.yaml:11: version: release ale-robotics 0.5 is published and cannot change; "
        "bump the version to release a changed manifest"
    )


def test_sync_manifest_of_a_missing_path_is_a_clear_error(tmp_path: Path, capsys) -> None:
    code, _, err = run_command(capsys, "sync_manifest", str(tmp_path / "missing"))
    assert code == 1
    assert err.splitlines()[-1] == f"  {tmp_path / 'missing'}: expected a manifest directory containing release.yaml"


# --------------------------------------------------------------- ensure_admin


def test_ensure_admin_creates_the_superuser_and_prints_the_password_once(monkeypatch) -> None:
    monkeypatch.delenv("PODIUM_ADMIN_PASSWORD", raising=False)
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    first, second = out.getvalue().splitlines()
    password = first.removeprefix("Created superuser 'admin' with password: ")
    assert len(password) >= 20
    assert second == "This password is shown once and stored nowhere else; keep it now."
    user = get_user_model().objects.get(username="admin")
    assert user.is_superuser and user.check_password(password)
    again = io.StringIO()
    call_command("ensure_admin", stdout=again)
    assert again.getvalue() == "Superuser 'admin' already exists; its password is unchanged.\n"
    user.refresh_from_db()
    assert user.check_password(password)


def test_ensure_admin_says_an_admin_account_that_lost_its_flags_cannot_sign_in_and_changes_nothing(
    monkeypatch,
) -> None:
    get_user_model().objects.create_user("admin", password="a-long-test-password-1", is_active=False)
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    assert out.getvalue().startswith(
        "The account 'admin' exists but is not active or staff or superuser: it cannot sign in to the admin."
    )
    user = get_user_model().objects.get(username="admin")
    assert (user.is_active, user.is_staff, user.is_superuser) == (False, False, False)


def test_ensure_admin_uses_the_password_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("PODIUM_ADMIN_PASSWORD", "correct-horse-battery")
    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    assert out.getvalue() == "Created superuser 'admin' with password: the value of PODIUM_ADMIN_PASSWORD\n"
    assert get_user_model().objects.get(username="admin").check_password("correct-horse-battery")


def test_ensure_admin_names_an_account_holding_admin_in_another_case_and_creates_nothing(capsys) -> None:
    get_user_model().objects.create_user("Admin", password="a-long-test-password-1")
    code, out, err = run_command(capsys, "ensure_admin")
    assert (code, out) == (1, "")
    assert err == (
        "CommandError: the account 'Admin' holds the username 'admin' in another case (usernames are unique "
        "whatever their case); rename it in the admin, then run ensure_admin again.\n"
    )
    assert list(get_user_model().objects.values_list("username", "is_superuser")) == [("Admin", False)]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite runs one writing transaction at a time")
@pytest.mark.django_db(transaction=True)
def test_ensure_admin_while_another_run_creates_the_superuser_says_it_exists(monkeypatch) -> None:
    monkeypatch.setenv("PODIUM_ADMIN_PASSWORD", "correct-horse-battery")
    out = io.StringIO()
    with account_created_meanwhile("admin", superuser=True):  # as the other ensure_admin does
        # Without the lock it saw no account yet and its INSERT failed on the unique index.
        call_command("ensure_admin", stdout=out)
    assert out.getvalue() == "Superuser 'admin' already exists; its password is unchanged.\n"
    # The other run's account, not this one's (whose password came from the environment).
    admin = get_user_model().objects.get()
    assert (admin.username, admin.is_superuser, admin.check_password("correct-horse-battery")) == ("admin", True, False)


# -------------------------------------------------------------------- upload


def test_staff_with_permission_can_upload_a_manifest_zip(client, admin_user, demo_dir: Path) -> None:
    client.force_login(admin_user)
    upload = SimpleUploadedFile("demo.zip", zipped(demo_dir), content_type="application/zip")
    response = client.post(reverse(UPLOAD), {"archive": upload})
    release = Release.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:leaderboard_release_change", args=[release.pk])
    assert release.synced_by == admin_user
    assert release.release_tasks.count() == 11


def test_an_uploaded_bad_manifest_lists_its_problems_and_changes_nothing(
    client, admin_user, demo_dir: Path, edit
) -> None:
    edit(demo_dir, "tasks/a1_stairs_climb/task.yaml", "mode: interactive", "mode: live")
    (demo_dir / "tasks/drones_hover_ppo/paper.md").unlink()
    client.force_login(admin_user)
    upload = SimpleUploadedFile("demo.zip", zipped(demo_dir), content_type="application/zip")
    response = client.post(reverse(UPLOAD), {"archive": upload})
    assert response.status_code == 400
    assert response.context["problems"] == [
        "tasks/drones_hover_ppo/paper.md: file is missing; expected the paper the agent reads",
        "tasks/a1_stairs_climb/task.yaml:8: mode: expected one of interactive, batch, read_from_task_config, "
        "got 'live'",
    ]
    assert "The manifest was refused (2 problems); nothing was changed." in response.content.decode()
    assert Benchmark.objects.count() == 0


HUGE = "9" * 400  # a YAML integer no double holds


@pytest.mark.parametrize(
    ("relpath", "old", "new", "field"),
    [
        ("tasks/robomimic_lift_bc_rnn/task.yaml", "score_cap: 1.5", f"score_cap: {HUGE}", "metric.score_cap"),
        ("tasks/drones_gate_racing/task.yaml", "limit: 0.1", f"limit: {HUGE}", "penalties[0].limit"),
        ("release.yaml", "paper_value: 0.96", f"paper_value: {HUGE}", "paper_value"),
        ("release.yaml", "default_score_cap: 1.5", f"default_score_cap: {HUGE}", "default_score_cap"),
        ("release.yaml", "wall_clock_hours: 12", f"wall_clock_hours: {HUGE}", "budgets.wall_clock_hours"),
        (
            "release.yaml",
            "published_at: 2026-06-01T00:00:00Z",
            "published_at: 9999-12-31T23:59:59-05:00",
            "published_at",
        ),
        ("release.yaml", "published_at: 2026-06-01T00:00:00Z", "published_at: 2026-02-30", "is not valid YAML"),
        ("release.yaml", "wall_clock_hours: 12", "wall_clock_hours: " + "9" * 5000, "is not valid YAML"),
    ],
)
def test_an_out_of_range_number_or_date_is_a_named_problem_not_a_500(
    admin_user, demo_dir: Path, edit, relpath, old, new, field
) -> None:
    edit(demo_dir, relpath, old, new)
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    upload = SimpleUploadedFile("demo.zip", zipped(demo_dir), content_type="application/zip")
    response = client.post(reverse(UPLOAD), {"archive": upload})
    assert response.status_code == 400
    problems = response.context["problems"]
    assert any(problem.startswith(relpath) and field in problem for problem in problems), problems
    assert Benchmark.objects.count() == 0


def test_an_uploaded_zip_with_path_traversal_is_refused(client, admin_user, demo_dir: Path) -> None:
    client.force_login(admin_user)
    data = zipped(demo_dir, extra={"../../etc/cron.d/evil": b"* * * * * root true"})
    response = client.post(reverse(UPLOAD), {"archive": SimpleUploadedFile("demo.zip", data)})
    assert response.status_code == 400
    assert response.context["problems"] == ["../../etc/cron.d/evil: climbs out of the manifest (..); refused"]
    assert Benchmark.objects.count() == 0


def test_an_upload_that_is_not_a_zip_is_a_form_error(client, admin_user) -> None:
    client.force_login(admin_user)
    response = client.post(reverse(UPLOAD), {"archive": SimpleUploadedFile("release.yaml", b"format: 1\n")})
    assert response.status_code == 200
    assert response.context["form"].errors == {"archive": ["expected a .zip file of the manifest directory"]}


def test_staff_without_the_release_permission_cannot_upload(client, helper, demo_dir: Path) -> None:
    client.force_login(helper)
    upload = SimpleUploadedFile("demo.zip", zipped(demo_dir))
    response = client.post(reverse(UPLOAD), {"archive": upload})
    assert response.status_code == 403
    assert Benchmark.objects.count() == 0


def test_a_visitor_is_sent_to_the_admin_login(client, visitor) -> None:
    client.force_login(visitor)
    response = client.get(reverse(UPLOAD))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


# ------------------------------------------------------- release admin pages


def test_the_release_page_shows_the_diff_with_the_previous_version(
    client, admin_user, demo_dir: Path, demo_04_dir: Path
) -> None:
    release_sync(manifest=demo_04_dir, user=admin_user)
    new = release_sync(manifest=demo_dir, user=admin_user).release
    client.force_login(admin_user)
    page = client.get(reverse("admin:leaderboard_release_change", args=[new.pk])).content.decode()
    assert "compared with 0.4" in page
    assert "<li>task added: drones_ego_planner</li>" in page
    assert "<li>anchor changed: robomimic_lift_bc_rnn: 0.94 -&gt; 0.96</li>" in page
    assert "anchor sign-off missing for" in page


def test_the_per_task_gate_forms_then_the_publish_action_publish(client, admin_user, demo_04_dir: Path) -> None:
    release = release_sync(manifest=demo_04_dir, user=admin_user).release
    client.force_login(admin_user)
    for row in ReleaseTask.objects.filter(release=release):
        response = client.post(
            reverse("admin:leaderboard_releasetask_sign_off", args=[row.pk]),
            {"cited_source": f"Table for {row.task.slug}", "reproduced_value": row.paper_value, "tolerance": "0.05"},
        )
        assert response.status_code == 302, response.content.decode()[:500]
        if row.genre == "reproduction":
            response = client.post(
                reverse("admin:leaderboard_releasetask_calibrate", args=[row.pk]),
                {"rubric_version": "v2", "dry_run_outcome": "reference faithful, shortcut not", "dry_run_passed": "on"},
            )
            assert response.status_code == 302
    response = client.post(
        reverse("admin:leaderboard_release_changelist"),
        {"action": "publish", "_selected_action": [release.pk]},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    assert "ale-robotics 0.4 is published" in shown
    # No judge key is registered for rubric v2: published, with the fail-closed judge's warning.
    assert shown[-1].startswith("ale-robotics 0.4: no judge key signs for ")
    assert "(rubric v2)" in shown[-1]
    release.refresh_from_db()
    assert release.published is True
    signed = ReleaseTask.objects.filter(release=release, anchor_signed_off_by=admin_user).count()
    assert signed == 9


def test_the_publish_action_reports_the_unsigned_tasks(client, admin_user, demo_04_dir: Path) -> None:
    release = release_sync(manifest=demo_04_dir, user=admin_user).release
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:leaderboard_release_changelist"),
        {"action": "publish", "_selected_action": [release.pk]},
        follow=True,
    )
    (message,) = [str(m) for m in response.context["messages"]]
    assert message.startswith("release ale-robotics 0.4 cannot be published: anchor sign-off missing for ")
    release.refresh_from_db()
    assert release.published is False


@pytest.mark.parametrize(
    "name",
    ["benchmark", "evaluator", "task", "release", "releasetask", "validator", "agent", "agentversion", "race"],
)
def test_every_registry_changelist_renders(client, admin_user, demo_04_dir: Path, name: str) -> None:
    release_sync(manifest=demo_04_dir, user=admin_user)
    client.force_login(admin_user)
    assert client.get(reverse(f"admin:leaderboard_{name}_changelist")).status_code == 200


def test_the_release_changelist_links_to_the_upload_form(client, admin_user) -> None:
    client.force_login(admin_user)
    changelist = client.get(reverse("admin:leaderboard_release_changelist")).content.decode()
    assert f'<a href="{reverse(UPLOAD)}" class="addlink">Upload manifest</a>' in changelist
    form = client.get(reverse(UPLOAD))
    assert form.status_code == 200
    assert '<input type="file" name="archive"' in form.content.decode()


def test_the_sync_message_counts_a_publication_as_such_not_as_a_second_release() -> None:
    from types import SimpleNamespace

    from leaderboard.admin import sync_summary

    release = SimpleNamespace(benchmark=SimpleNamespace(slug="mini"), version="1", published=True)
    result = SimpleNamespace(
        release=release, status="created", notes=[], changes=["benchmark mini", "release 1", "release published"]
    )
    assert sync_summary(result)[1] == "mini 1: created (1 benchmark, 1 release, 1 publication)."
