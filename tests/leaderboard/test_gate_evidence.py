"""Gates record their evidence (issue 11 item 9, seed 003): an anchor sign-off records the
cited table or figure, the reproduced value and the tolerance; a faithfulness calibration
records the rubric version and its dry-run outcome; one task at a time, shown to staff
beside the anchor's provenance."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from leaderboard.models import ReleaseTask
from leaderboard.services.release_gates import (
    ReleaseGateError,
    anchor_within_tolerance,
    release_judge_warnings,
    release_task_calibrate_faithfulness,
    release_task_sign_off_anchor,
)
from leaderboard.services.release_sync import release_sync

SLUG = "drones_hover_ppo"  # reproduction genre, anchor 0.1 in demo 0.4


@pytest.fixture
def row(demo_04_dir: Path, staff) -> ReleaseTask:
    release = release_sync(manifest=demo_04_dir, user=staff).release
    return ReleaseTask.objects.get(release=release, task__slug=SLUG)


def test_the_tolerance_is_relative_to_the_anchor() -> None:
    assert anchor_within_tolerance(anchor=0.5, reproduced=0.52, tolerance=0.05)
    assert not anchor_within_tolerance(anchor=0.5, reproduced=0.53, tolerance=0.05)
    assert anchor_within_tolerance(anchor=-2.0, reproduced=-2.1, tolerance=0.05)


def test_an_anchor_sign_off_records_its_evidence(row, staff) -> None:
    signed = release_task_sign_off_anchor(
        release_task=row,
        user=staff,
        cited_source="Fig. 6, HoverAviary PPO curve",
        reproduced_value=row.paper_value * 1.02,
        tolerance=0.05,
        note="three seeds",
    )
    signed.refresh_from_db()
    assert (signed.anchor_cited_source, signed.anchor_tolerance, signed.anchor_sign_off_note) == (
        "Fig. 6, HoverAviary PPO curve",
        0.05,
        "three seeds",
    )
    assert signed.anchor_reproduced_value == pytest.approx(row.paper_value * 1.02)
    assert signed.anchor_signed_off_by == staff and signed.anchor_signed_off_at is not None


@pytest.mark.parametrize(
    ("evidence", "message"),
    [
        ({"cited_source": " ", "factor": 1.0, "tolerance": 0.05}, "cited source: name the table or figure"),
        (
            {"cited_source": "Table 2", "factor": 1.2, "tolerance": 0.05},
            "the reproduced value is outside the tolerance",
        ),
        ({"cited_source": "Table 2", "factor": 1.0, "tolerance": 1.5}, "tolerance: expected a relative tolerance"),
        ({"cited_source": "Table 2", "factor": float("nan"), "tolerance": 0.05}, "reproduced value: expected"),
    ],
)
def test_a_sign_off_without_good_evidence_is_refused_and_nothing_is_written(row, staff, evidence, message) -> None:
    with pytest.raises(ReleaseGateError) as caught:
        release_task_sign_off_anchor(
            release_task=row,
            user=staff,
            cited_source=evidence["cited_source"],
            reproduced_value=row.paper_value * evidence["factor"],
            tolerance=evidence["tolerance"],
        )
    assert message in str(caught.value)
    assert str(row.paper_value) not in str(caught.value)
    row.refresh_from_db()
    assert (row.anchor_signed_off_at, row.anchor_cited_source, row.anchor_reproduced_value) == (None, "", None)


def test_a_faithfulness_calibration_records_rubric_version_and_dry_run_outcome(row, staff) -> None:
    release_task_calibrate_faithfulness(
        release_task=row, user=staff, rubric_version="v3", dry_run_outcome="ref faithful; shortcut unfaithful",
        dry_run_passed=True,
    )  # fmt: skip
    row.refresh_from_db()
    assert (row.faithfulness_rubric_version, row.faithfulness_dry_run_outcome) == (
        "v3",
        "ref faithful; shortcut unfaithful",
    )
    assert row.faithfulness_calibrated_by == staff


def test_a_dry_run_that_misbehaved_cannot_calibrate(row, staff) -> None:
    with pytest.raises(ReleaseGateError) as caught:
        release_task_calibrate_faithfulness(
            release_task=row, user=staff, rubric_version="v3", dry_run_outcome="shortcut judged faithful",
            dry_run_passed=False,
        )  # fmt: skip
    assert "did not behave as intended" in str(caught.value)
    row.refresh_from_db()
    assert (row.faithfulness_calibrated_at, row.faithfulness_rubric_version) == (None, "")


def test_a_visitor_cannot_pass_a_gate(row, visitor) -> None:
    with pytest.raises(PermissionDenied):
        release_task_sign_off_anchor(
            release_task=row, user=visitor, cited_source="T", reproduced_value=row.paper_value, tolerance=0.05
        )


def test_a_resync_that_moves_the_anchor_clears_the_evidence_too(row, staff, demo_04_dir: Path, edit) -> None:
    release_task_sign_off_anchor(
        release_task=row, user=staff, cited_source="Fig. 6", reproduced_value=row.paper_value, tolerance=0.05
    )
    text = (demo_04_dir / "release.yaml").read_text()
    anchor_line = f"  - slug: {SLUG}\n    paper_value: {row.paper_value:g}\n"
    assert anchor_line in text
    edit(demo_04_dir, "release.yaml", anchor_line, f"  - slug: {SLUG}\n    paper_value: {row.paper_value * 2:g}\n")
    release_sync(manifest=demo_04_dir, user=staff)
    row.refresh_from_db()
    assert (row.anchor_signed_off_at, row.anchor_cited_source, row.anchor_reproduced_value, row.anchor_tolerance) == (
        None,
        "",
        None,
        None,
    )


# ------------------------------------------------------------------ admin


def test_the_admin_offers_no_bulk_sign_off(client, admin_user, row) -> None:
    client.force_login(admin_user)
    page = client.get(reverse("admin:leaderboard_releasetask_changelist")).content.decode()
    assert "sign_off_anchor" not in page and "calibrate_faithfulness" not in page
    response = client.post(
        reverse("admin:leaderboard_releasetask_changelist"),
        {"action": "sign_off_anchor", "_selected_action": [row.pk]},
    )
    assert response.status_code in (200, 302)
    row.refresh_from_db()
    assert row.anchor_signed_off_at is None


def test_the_sign_off_form_shows_the_provenance_and_records_one_tasks_evidence(client, admin_user, row) -> None:
    client.force_login(admin_user)
    url = reverse("admin:leaderboard_releasetask_sign_off", args=[row.pk])
    form = client.get(url).content.decode()
    assert "Panerati et al. 2021" in form  # the anchor's provenance, beside the form
    response = client.post(url, {"cited_source": "Fig. 6", "reproduced_value": row.paper_value, "tolerance": "0.02"})
    assert response.status_code == 302
    assert ReleaseTask.objects.filter(anchor_signed_off_at__isnull=False).count() == 1
    change = client.get(reverse("admin:leaderboard_releasetask_change", args=[row.pk])).content.decode()
    assert "Fig. 6" in change and "Panerati et al. 2021" in change and "0.02" in change


def test_the_sign_off_form_refuses_a_reproduction_outside_the_tolerance(client, admin_user, row) -> None:
    client.force_login(admin_user)
    url = reverse("admin:leaderboard_releasetask_sign_off", args=[row.pk])
    response = client.post(
        url, {"cited_source": "Fig. 6", "reproduced_value": row.paper_value * 3, "tolerance": "0.05"}
    )
    assert response.status_code == 400
    assert "outside the tolerance" in response.content.decode()
    row.refresh_from_db()
    assert row.anchor_signed_off_at is None


def test_the_calibration_form_records_rubric_and_outcome(client, admin_user, row) -> None:
    client.force_login(admin_user)
    url = reverse("admin:leaderboard_releasetask_calibrate", args=[row.pk])
    response = client.post(url, {"rubric_version": "v4", "dry_run_outcome": "ok", "dry_run_passed": "on"})
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.faithfulness_rubric_version, row.faithfulness_dry_run_outcome) == ("v4", "ok")


def test_a_gate_passed_once_says_so_on_a_second_submission_and_keeps_its_evidence(client, admin_user, row) -> None:
    client.force_login(admin_user)
    url = reverse("admin:leaderboard_releasetask_calibrate", args=[row.pk])
    assert (
        client.post(url, {"rubric_version": "r1", "dry_run_outcome": "ok", "dry_run_passed": "on"}).status_code == 302
    )
    again = client.post(url, {"rubric_version": "r9", "dry_run_outcome": "redo", "dry_run_passed": "on"})
    assert again.status_code == 409
    assert "was already recorded by " in again.content.decode() and "nothing was changed" in again.content.decode()
    row.refresh_from_db()
    assert (row.faithfulness_rubric_version, row.faithfulness_dry_run_outcome) == ("r1", "ok")


def test_a_non_staff_account_cannot_open_the_gate_forms(client, visitor, row) -> None:
    client.force_login(visitor)
    response = client.post(
        reverse("admin:leaderboard_releasetask_sign_off", args=[row.pk]),
        {"cited_source": "Fig. 6", "reproduced_value": row.paper_value, "tolerance": "0.05"},
    )
    assert response.status_code == 302 and "/login/" in response["Location"]
    row.refresh_from_db()
    assert row.anchor_signed_off_at is None


def _calibrate(row: ReleaseTask, staff, rubric: str = "v3") -> None:
    release_task_calibrate_faithfulness(
        release_task=row, user=staff, rubric_version=rubric, dry_run_outcome="ref faithful; shortcut unfaithful",
        dry_run_passed=True,
    )  # fmt: skip


def _judge_key(row: ReleaseTask, rubric: str):
    from submissions.bundle.signatures import generate_signing_key, public_key_b64
    from submissions.services.signing_keys import signing_key_register

    return signing_key_register(
        judge_name="judge/test", tasks={row.task: rubric}, public_key_b64=public_key_b64(generate_signing_key()),
        user=None,
    )  # fmt: skip


def test_a_calibrated_task_no_judge_key_signs_for_is_a_publish_warning(row, staff) -> None:
    _calibrate(row, staff)
    warnings = release_judge_warnings(row.release)
    assert len(warnings) == 1
    assert f"{SLUG} (rubric v3)" in warnings[0]
    assert "scores 0" in warnings[0]


def test_a_judge_key_for_another_rubric_does_not_silence_the_warning(row, staff) -> None:
    _calibrate(row, staff)
    _judge_key(row, "v2")
    assert f"{SLUG} (rubric v3)" in release_judge_warnings(row.release)[0]


def test_a_judge_key_for_the_calibrated_rubric_silences_the_warning_until_revoked(row, staff) -> None:
    from submissions.services.signing_keys import signing_key_revoke

    _calibrate(row, staff)
    key = _judge_key(row, "v3")
    assert release_judge_warnings(row.release) == []
    signing_key_revoke(signing_key=key, user=None)
    assert f"{SLUG} (rubric v3)" in release_judge_warnings(row.release)[0]


def test_an_uncalibrated_task_is_a_gate_not_a_warning(row) -> None:
    assert release_judge_warnings(row.release) == []


def test_the_release_admin_page_shows_the_judge_warning(client, admin_user, row, staff) -> None:
    _calibrate(row, staff)
    client.force_login(admin_user)
    page = client.get(reverse("admin:leaderboard_release_change", args=[row.release_id]))
    assert page.status_code == 200
    assert f"Warning: no judge key signs for {SLUG} (rubric v3)" in page.content.decode()
