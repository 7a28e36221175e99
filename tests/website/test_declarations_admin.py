"""Issue 13's admin writes: the per-release price table and baselines, staff only, each
through leaderboard.services.declarations (costs re-priced, ranks rewritten)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboard.models import Baseline, Release, ReleasePrice, RunCost
from leaderboard.selectors.standing_ranks import standings_ranked
from leaderboard.services.paper_gap_standings import standings_refresh
from tests.staff import staff_with
from tests.website.conftest import make_benchmark, make_release, make_run, make_user
from tests.website.declarations_factories import own

pytestmark = pytest.mark.django_db

PRICE = {"model": "*", "input_usd_per_mtok": "1", "output_usd_per_mtok": "1"}


def price_form(release: Release) -> dict[str, str]:
    return {**PRICE, "release": str(release.pk)}


@pytest.mark.parametrize("who", ["anonymous", "owner", "other"])
def test_only_staff_edit_the_price_table(client, release, who):
    owner = make_user("owner")
    run = make_run(release, agent_name="Alpha", submitter=owner)
    own(run, owner)
    if who != "anonymous":
        client.force_login(owner if who == "owner" else make_user("other"))
    response = client.post(reverse("admin:leaderboard_releaseprice_add"), price_form(release))
    assert response.status_code == 302
    assert reverse("admin:login") in response["Location"]
    assert not ReleasePrice.objects.exists() and not RunCost.objects.exists()


def test_staff_set_a_price_and_the_runs_are_re_priced(client, release):
    run = make_run(release, agent_name="Alpha")
    before = Release.objects.get(pk=release.pk).generation
    client.force_login(make_user("staffer", is_staff=True, is_superuser=True))
    response = client.post(reverse("admin:leaderboard_releaseprice_add"), price_form(release))
    assert response.status_code == 302, response.content[:500]
    assert RunCost.objects.get(run=run).usd == pytest.approx(1.234)
    assert Release.objects.get(pk=release.pk).generation == before + 1
    price = ReleasePrice.objects.get()
    client.post(reverse("admin:leaderboard_releaseprice_delete", args=[price.pk]), {"post": "yes"})
    assert not RunCost.objects.exists()


def test_a_negative_price_is_refused_and_nothing_is_priced(client, release):
    make_run(release, agent_name="Alpha")
    client.force_login(make_user("staffer", is_staff=True, is_superuser=True))
    response = client.post(
        reverse("admin:leaderboard_releaseprice_add"), {**price_form(release), "input_usd_per_mtok": "-50"}
    )
    assert response.status_code == 200
    assert "Ensure this value is greater than or equal to 0." in response.content.decode()
    assert not ReleasePrice.objects.exists() and not RunCost.objects.exists()


def test_a_price_row_moved_to_another_release_re_prices_both(client, release):
    old_run = make_run(release, agent_name="Alpha")
    other = make_release(release.benchmark, "v0.6")
    new_run = make_run(other, agent_name="Alpha")
    client.force_login(make_user("staffer", is_staff=True, is_superuser=True))
    client.post(reverse("admin:leaderboard_releaseprice_add"), price_form(release))
    assert RunCost.objects.filter(run=old_run).exists()
    price = ReleasePrice.objects.get()
    response = client.post(reverse("admin:leaderboard_releaseprice_change", args=[price.pk]), price_form(other))
    assert response.status_code == 302
    assert not RunCost.objects.filter(run=old_run).exists()
    assert RunCost.objects.get(run=new_run).usd == pytest.approx(1.234)


def test_staff_mark_a_baseline_in_the_admin_and_it_leaves_the_ranks(client, release):
    staff = make_user("staffer", is_staff=True, is_superuser=True)
    make_run(release, agent_name="Alpha", score=0.9, with_standings=False)
    paper = make_run(release, agent_name="Paper", score=0.95, with_standings=False)
    standings_refresh(release=release)
    client.force_login(staff)
    response = client.post(
        reverse("admin:leaderboard_baseline_add"),
        {"agent_version": str(paper.agent_version.pk), "kind": "paper", "note": "Table 2"},
    )
    assert response.status_code == 302, response.content[:500]
    assert Baseline.objects.get().marked_by == staff
    assert list(standings_ranked().filter(tab="overall").values_list("agent_name", "rank")) == [("Alpha", 1)]
    client.post(reverse("admin:leaderboard_baseline_delete", args=[Baseline.objects.get().pk]), {"post": "yes"})
    assert dict(standings_ranked().filter(tab="overall").values_list("agent_name", "rank")) == {"Paper": 1, "Alpha": 2}


def test_a_non_staff_account_cannot_mark_a_baseline_in_the_admin(client, release):
    run = make_run(release, agent_name="Alpha")
    client.force_login(make_user("other"))
    response = client.post(reverse("admin:leaderboard_baseline_add"), {"agent_version": str(run.agent_version.pk)})
    assert response.status_code == 302 and reverse("admin:login") in response["Location"]
    assert not Baseline.objects.exists()


def test_the_baseline_change_form_cannot_mark_another_version_without_the_add_permission(client):
    """Staff holding only leaderboard.change_baseline must not be able to mark a new version as a
    baseline, which takes it off every ranked board: that is leaderboard.add_baseline's write
    (leaderboard.permissions). The admin's change form let them, by changing the version."""
    release = make_release(make_benchmark())
    paper = make_run(release, agent_name="Paper", score=0.95, with_standings=False)
    victim = make_run(release, agent_name="Victim", score=0.9, with_standings=False)
    baseline = Baseline.objects.create(agent_version=paper.agent_version, kind="paper", note="Table 2")
    standings_refresh(release=release)
    helper = staff_with("helper", "leaderboard.change_baseline", "leaderboard.view_baseline")
    client.force_login(helper)
    response = client.post(
        reverse("admin:leaderboard_baseline_change", args=[baseline.pk]),
        {"agent_version": str(victim.agent_version.pk), "kind": "random", "note": "moved"},
    )
    assert response.status_code == 403
    assert list(Baseline.objects.values_list("agent_version_id", "kind", "note")) == [
        (paper.agent_version_id, "paper", "Table 2")
    ]
    assert dict(standings_ranked().filter(tab="overall").values_list("agent_name", "rank")) == {"Victim": 1}


def test_a_maintainer_editing_a_baseline_changes_its_note_not_its_version(client):
    """With every permission, the change form re-describes the baseline; the version is fixed
    (it used to save a second baseline for the posted version and keep the first)."""
    release = make_release(make_benchmark())
    paper = make_run(release, agent_name="Paper", score=0.95, with_standings=False)
    other = make_run(release, agent_name="Other", score=0.9, with_standings=False)
    standings_refresh(release=release)
    baseline = Baseline.objects.create(agent_version=paper.agent_version, kind="paper", note="Table 2")
    client.force_login(make_user("maintainer", is_staff=True, is_superuser=True))
    response = client.post(
        reverse("admin:leaderboard_baseline_change", args=[baseline.pk]),
        {"agent_version": str(other.agent_version.pk), "kind": "paper", "note": "Table 3"},
    )
    assert response.status_code == 302, response.content[:500]
    assert list(Baseline.objects.values_list("agent_version_id", "kind", "note")) == [
        (paper.agent_version_id, "paper", "Table 3")
    ]


def test_the_baseline_services_refuse_staff_without_the_permission():
    from django.core.exceptions import PermissionDenied

    from leaderboard.services.declarations import baseline_mark, baseline_unmark

    release = make_release(make_benchmark())
    run = make_run(release, agent_name="Plain")
    viewer = staff_with("viewer", "leaderboard.view_baseline")
    with pytest.raises(PermissionDenied):
        baseline_mark(actor=viewer, agent_version=run.agent_version, kind="random")
    assert not Baseline.objects.exists()
    Baseline.objects.create(agent_version=run.agent_version, kind="random")
    adder = staff_with("adder", "leaderboard.add_baseline")
    with pytest.raises(PermissionDenied):
        baseline_unmark(actor=adder, agent_version=run.agent_version)
    assert Baseline.objects.filter(agent_version=run.agent_version).exists()
