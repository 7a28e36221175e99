"""Withdraw and hide (issue 13 feature 8): submissions.services.visibility, its API and run page.

Every write is tried by the owner, another account, an anonymous client and staff, with the
exact error code and the database state after (run flags, the visibility log, the board)."""

from __future__ import annotations

import itertools

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard.models import Agent, AgentVersion, Run, Standing
from leaderboard.selectors.standing_ranks import standings_ranked
from leaderboard.services.paper_gap_standings import standings_refresh
from submissions.models import RunVisibilityEvent, Submission
from tests.staff import staff_grant

_counter = itertools.count()


@pytest.fixture
def staff(make_user):
    user = make_user("staffer")
    user.is_staff = True
    user.save()
    return staff_grant(user)  # a maintainer: every staff-write permission


@pytest.fixture
def helper(make_user):
    """Staff without leaderboard.change_run: may read every run, hides none."""
    user = make_user("helper")
    user.is_staff = True
    user.save()
    return user


@pytest.fixture
def release(make_release):
    return make_release(["pick:reproduction", "place:open"])


@pytest.fixture
def run(owner, release):
    n = next(_counter)
    submission = Submission.objects.create(
        submitter=owner, sha256=f"{n:064x}", size=1, file=f"bundles/{n}.age", status="done", verdict="validated"
    )
    agent, _ = Agent.objects.get_or_create(slug="robo", defaults={"name": "Robo", "owner": owner})
    version, _ = AgentVersion.objects.get_or_create(agent=agent, version="1")
    run = Run.objects.create(
        release=release,
        agent_version=version,
        level="validated",
        overall=0.5,
        reproduction=0.5,
        open=0.5,
        pass_rate=0.9,
        covered=2,
        required=2,
        complete=True,
    )
    submission.run = run
    submission.save(update_fields=["run"])
    standings_refresh(release=release)
    return run


def api_as(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def on_board(run) -> bool:
    return Standing.objects.filter(run=run).exists()


def actions(run) -> list[str]:
    return list(RunVisibilityEvent.objects.filter(run=run).values_list("action", flat=True))


@pytest.mark.django_db
class TestWithdrawApi:
    def test_the_owner_withdraws_and_the_run_leaves_every_board(self, run, owner):
        assert on_board(run)
        response = api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/")
        assert response.status_code == 200, response.content
        assert response.json()["withdrawn"] is True and response.json()["on_public_boards"] is False
        run.refresh_from_db()
        assert run.withdrawn_at is not None and run.is_private
        assert not on_board(run)
        assert actions(run) == ["withdrawn"]
        assert api_as().get(f"/api/v1/runs/{run.pk}/").status_code == 404

    def test_withdrawing_twice_logs_once(self, run, owner):
        api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/")
        assert api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/").status_code == 200
        assert actions(run) == ["withdrawn"]

    def test_the_owner_restores_and_the_run_returns_to_the_board(self, run, owner):
        api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/")
        response = api_as(owner).post(f"/api/v1/runs/{run.pk}/restore/")
        assert response.status_code == 200
        run.refresh_from_db()
        assert run.withdrawn_at is None and not run.is_private
        assert on_board(run)
        assert actions(run) == ["withdrawn", "restored"]

    def test_restoring_a_run_that_is_not_withdrawn_is_a_conflict(self, run, owner):
        response = api_as(owner).post(f"/api/v1/runs/{run.pk}/restore/")
        assert response.status_code == 409
        assert response.json()["error"]["code"] == "not_withdrawn"

    def test_another_account_cannot_withdraw(self, run, stranger):
        response = api_as(stranger).post(f"/api/v1/runs/{run.pk}/withdraw/")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "not_your_run"
        run.refresh_from_db()
        assert run.withdrawn_at is None and on_board(run) and actions(run) == []

    @pytest.mark.parametrize("path", ["withdraw", "restore"])
    def test_another_accounts_request_takes_no_row_lock_and_the_owners_does(self, run, stranger, owner, path):
        # A stranger's refused request used to lock the run's and its release's rows first, which
        # every verification of that release waits for. (SQLite has no row locks: nothing to see.)
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        if connection.vendor != "postgresql":
            pytest.skip("row locks (SELECT ... FOR UPDATE) exist on PostgreSQL only")
        with CaptureQueriesContext(connection) as stranger_queries:
            response = api_as(stranger).post(f"/api/v1/runs/{run.pk}/{path}/")
        assert response.status_code == 403 and response.json()["error"]["code"] == "not_your_run"
        assert not [q["sql"] for q in stranger_queries.captured_queries if "FOR UPDATE" in q["sql"]]
        with CaptureQueriesContext(connection) as owner_queries:
            assert api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/").status_code == 200
        assert [q["sql"] for q in owner_queries.captured_queries if "FOR UPDATE" in q["sql"]]

    def test_another_account_gets_404_for_a_private_run(self, run, stranger, owner):
        api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/")
        response = api_as(stranger).post(f"/api/v1/runs/{run.pk}/restore/")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
        run.refresh_from_db()
        assert run.withdrawn_at is not None

    @pytest.mark.parametrize("path", ["withdraw", "restore"])
    def test_another_account_gets_404_for_a_public_run_on_a_draft_release_as_for_a_run_that_does_not_exist(
        self, run, stranger, owner, path
    ):
        # The run page and the API answer a run on an unpublished release with a 404 to anyone but
        # its submitter and staff (leaderboard.selectors.visibility); a 403 here would confirm the id.
        type(run.release).objects.filter(pk=run.release_id).update(published=False)
        response = api_as(stranger).post(f"/api/v1/runs/{run.pk}/{path}/")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"
        assert api_as(stranger).get(f"/api/v1/runs/{run.pk}/").status_code == 404
        run.refresh_from_db()
        assert run.withdrawn_at is None and actions(run) == []
        assert api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/").status_code == 200

    def test_anonymous_cannot_withdraw(self, run):
        response = api_as().post(f"/api/v1/runs/{run.pk}/withdraw/")
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "not_authenticated"
        assert on_board(run) and actions(run) == []

    def test_staff_cannot_withdraw_someone_elses_run_they_hide_it(self, run, staff):
        response = api_as(staff).post(f"/api/v1/runs/{run.pk}/withdraw/")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "not_your_run"
        assert on_board(run)

    def test_an_unknown_run_is_404(self, owner):
        response = api_as(owner).post("/api/v1/runs/999999/withdraw/")
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


@pytest.mark.django_db
class TestHideApi:
    def test_staff_hide_with_a_reason_and_the_run_leaves_the_board(self, run, staff):
        response = api_as(staff).post(f"/api/v1/runs/{run.pk}/hide/", {"reason": "evaluator misconfigured"})
        assert response.status_code == 200, response.content
        run.refresh_from_db()
        assert run.hidden_at is not None and run.hidden_reason == "evaluator misconfigured" and run.is_private
        assert not on_board(run)
        event = RunVisibilityEvent.objects.get(run=run)
        assert (event.action, event.actor_id, event.reason) == ("hidden", staff.pk, "evaluator misconfigured")

    def test_hiding_needs_a_reason(self, run, staff):
        response = api_as(staff).post(f"/api/v1/runs/{run.pk}/hide/", {"reason": "  "})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "reason_missing"
        run.refresh_from_db()
        assert run.hidden_at is None and on_board(run)

    @pytest.mark.parametrize("reason", [None, {}, ["duplicate"], {"text": "duplicate"}, 0, 1.5, True])
    def test_a_reason_that_is_not_text_is_400_invalid_naming_it_and_hides_nothing(self, run, staff, reason):
        # It was str()-ed: null hid the run with the public reason "None", a list with "['duplicate']";
        # then DRF's CharField still turned the number 0 into the reason "0" (leaderboard.api.fields).
        response = api_as(staff).post(f"/api/v1/runs/{run.pk}/hide/", {"reason": reason}, format="json")
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert error["code"] == "invalid" and error["message"].startswith("reason: ")
        run.refresh_from_db()
        assert run.hidden_at is None and run.hidden_reason == "" and on_board(run) and actions(run) == []

    def test_a_reason_over_the_limit_is_refused(self, run, staff):
        response = api_as(staff).post(f"/api/v1/runs/{run.pk}/hide/", {"reason": "x" * 501})
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "reason_too_long"

    @pytest.mark.parametrize("who", ["owner", "stranger", "helper"])
    def test_only_staff_hide(self, run, who, request):
        user = request.getfixturevalue(who)
        response = api_as(user).post(f"/api/v1/runs/{run.pk}/hide/", {"reason": "mine"})
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "staff_only"
        run.refresh_from_db()
        assert run.hidden_at is None and on_board(run) and actions(run) == []

    def test_anonymous_cannot_hide(self, run):
        response = api_as().post(f"/api/v1/runs/{run.pk}/hide/", {"reason": "x"})
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "not_authenticated"

    def test_unhide_returns_the_run_unless_its_owner_withdrew_it(self, run, staff, owner):
        api_as(staff).post(f"/api/v1/runs/{run.pk}/hide/", {"reason": "checking"})
        api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/")
        assert api_as(staff).post(f"/api/v1/runs/{run.pk}/unhide/").status_code == 200
        run.refresh_from_db()
        assert run.hidden_at is None and run.is_private and not on_board(run)  # still withdrawn
        api_as(owner).post(f"/api/v1/runs/{run.pk}/restore/")
        run.refresh_from_db()
        assert not run.is_private and on_board(run)
        assert actions(run) == ["hidden", "withdrawn", "unhidden", "restored"]

    def test_a_private_submission_stays_private_after_unhide(self, run, staff):
        Submission.objects.filter(pk=run.submission.pk).update(is_private=True)
        api_as(staff).post(f"/api/v1/runs/{run.pk}/hide/", {"reason": "x"})
        api_as(staff).post(f"/api/v1/runs/{run.pk}/unhide/")
        run.refresh_from_db()
        assert run.is_private


@pytest.mark.django_db
class TestRunPage:
    def test_visitors_see_a_hidden_run_as_410_with_its_reason_and_no_scores(self, run, staff, client):
        api_as(staff).post(f"/api/v1/runs/{run.pk}/hide/", {"reason": "duplicate of run 7"})
        response = client.get(reverse("run_detail", args=[run.pk]))
        assert response.status_code == 410
        body = response.content.decode()
        assert "duplicate of run 7" in body and "Robo" not in body

    def test_another_account_sees_a_withdrawn_run_as_404(self, run, owner, stranger, client):
        api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/")
        client.force_login(stranger)
        assert client.get(reverse("run_detail", args=[run.pk])).status_code == 404

    def test_the_owner_sees_the_withdrawn_note_and_the_restore_button(self, run, owner, client):
        api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/")
        client.force_login(owner)
        body = client.get(reverse("run_detail", args=[run.pk])).content.decode()
        assert 'data-field="run-withdrawn"' in body and reverse("run_restore", args=[run.pk]) in body

    def test_the_owner_withdraws_through_the_form(self, run, owner, client):
        client.force_login(owner)
        response = client.post(reverse("run_withdraw", args=[run.pk]))
        assert response.status_code == 302
        run.refresh_from_db()
        assert run.withdrawn_at is not None and not on_board(run)

    def test_another_account_gets_403_from_the_form(self, run, stranger, client):
        client.force_login(stranger)
        response = client.post(reverse("run_withdraw", args=[run.pk]))
        assert response.status_code == 403
        run.refresh_from_db()
        assert run.withdrawn_at is None

    def test_the_hide_form_is_shown_to_staff_who_may_hide_only(self, run, staff, helper, client):
        hide = reverse("run_hide", args=[run.pk])
        client.force_login(staff)
        assert hide in client.get(reverse("run_detail", args=[run.pk])).content.decode()
        client.force_login(helper)
        assert hide not in client.get(reverse("run_detail", args=[run.pk])).content.decode()

    def test_staff_without_the_run_permission_get_403_from_the_hide_form_and_nothing_is_hidden(
        self, run, helper, client
    ):
        client.force_login(helper)
        response = client.post(reverse("run_hide", args=[run.pk]), {"reason": "x"})
        assert response.status_code == 403
        run.refresh_from_db()
        assert run.hidden_at is None and actions(run) == []

    def test_anonymous_is_sent_to_sign_in(self, run, client):
        response = client.post(reverse("run_hide", args=[run.pk]), {"reason": "x"})
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
        run.refresh_from_db()
        assert run.hidden_at is None

    def test_staff_hide_through_the_form_and_see_the_log(self, run, staff, client):
        client.force_login(staff)
        assert client.post(reverse("run_hide", args=[run.pk]), {"reason": "bad seeds"}).status_code == 302
        body = client.get(reverse("run_detail", args=[run.pk])).content.decode()
        assert 'data-field="run-hidden"' in body and "bad seeds" in body
        assert reverse("run_unhide", args=[run.pk]) in body


@pytest.mark.django_db
def test_withdrawing_the_leader_moves_the_next_version_up_as_a_full_rebuild_would(run, owner, release):
    n = next(_counter)
    submission = Submission.objects.create(
        submitter=owner, sha256=f"{n:064x}", size=1, file=f"bundles/{n}.age", status="done", verdict="validated"
    )
    agent = Agent.objects.create(slug="second", name="Second", owner=owner)
    second = Run.objects.create(
        release=release, agent_version=AgentVersion.objects.create(agent=agent, version="1"),
        level="validated", overall=0.4, reproduction=0.4, open=0.4, pass_rate=0.5, covered=2, required=2,
        complete=True,
    )  # fmt: skip
    submission.run = second
    submission.save(update_fields=["run"])
    standings_refresh(release=release)
    assert standings_ranked().get(run=run, tab="overall").rank == 1
    api_as(owner).post(f"/api/v1/runs/{run.pk}/withdraw/")
    incremental = list(
        standings_ranked().filter(release=release).order_by("tab", "rank").values_list("tab", "rank", "run")
    )
    assert ("overall", 1, second.pk) in incremental and all(row[2] != run.pk for row in incremental)
    standings_refresh(release=release)
    rebuilt = list(standings_ranked().filter(release=release).order_by("tab", "rank").values_list("tab", "rank", "run"))
    assert incremental == rebuilt
