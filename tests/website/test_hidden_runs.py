"""The run page of a hidden run (leaderboard.views.run_page.run_hidden_response): 410 with
staff's reason only where the run would be public but for the hide."""

from __future__ import annotations

import pytest
from django.urls import reverse

from leaderboard.models import Release
from tests.staff import staff_with
from tests.website.conftest import make_benchmark, make_release, make_run, make_user

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("how", ["private submission", "withdrawn by its submitter", "draft release"])
def test_a_hidden_run_that_is_not_public_otherwise_is_a_404_to_another_account_not_a_410(client, how):
    """A 410 with the reason tells a stranger that the id is a run, and the reason staff wrote
    about it, for a run the visibility rule gives them as a 404 (private, withdrawn, draft)."""
    from submissions.services.visibility import run_hide, run_withdraw

    owner = make_user("owner")
    release = make_release(make_benchmark())
    if how == "draft release":
        Release.objects.filter(pk=release.pk).update(published=False)
    run = make_run(release, agent_name="Secret Agent", submitter=owner, is_private=how == "private submission")
    if how == "withdrawn by its submitter":
        run_withdraw(run_id=run.pk, user=owner)
    staffer = staff_with("staffer", "leaderboard.change_run")
    run_hide(run_id=run.pk, user=staffer, reason="Secret Agent cheated")
    missing = client.get(reverse("run_detail", args=[run.pk + 1000]))
    for viewer in (None, make_user("stranger")):
        if viewer is not None:
            client.force_login(viewer)
        response = client.get(reverse("run_detail", args=[run.pk]))
        assert response.status_code == 404 == missing.status_code
        assert b"Secret Agent" not in response.content
    client.force_login(owner)
    assert client.get(reverse("run_detail", args=[run.pk])).status_code == 200
