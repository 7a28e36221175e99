"""The admin site guards every changelist's action selections (leaderboard.admin_site)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.messages import get_messages
from django.test import Client, RequestFactory
from django.urls import reverse

from leaderboard.admin_site import SelectionGuardMixin
from leaderboard.models import Validator

pytestmark = pytest.mark.django_db

REGISTERED = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def _changelist(model: Any) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def test_every_registered_admin_carries_the_selection_guard() -> None:
    assert REGISTERED
    assert [m._meta.label for m, a in REGISTERED if not isinstance(a, SelectionGuardMixin)] == []


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=[m._meta.label for m, _ in REGISTERED])
def test_a_forged_selection_is_refused_with_a_message_on_every_changelist(
    client: Client, admin_user: Any, model: Any, model_admin: Any
) -> None:
    request = RequestFactory().get("/")
    request.user = admin_user
    actions = list(model_admin.get_actions(request))
    if not actions:
        pytest.skip(f"{model._meta.label} offers no actions to forge a selection for")
    client.force_login(admin_user)
    before = model._default_manager.count()
    response = client.post(
        _changelist(model), {"action": actions[0], "index": "0", "_selected_action": ["not-a-key\u00e9", "1"]}
    )
    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        f"The selection 'not-a-key\u00e9' is not a {model._meta.verbose_name} id; nothing was done."
    ]
    assert model._default_manager.count() == before


def test_a_real_selection_still_reaches_its_action(client: Client, admin_user: Any) -> None:
    validator = Validator.objects.create(slug="val-one", name="Val One")
    client.force_login(admin_user)
    response = client.post(
        _changelist(Validator), {"action": "delete_selected", "index": "0", "_selected_action": [str(validator.pk)]}
    )
    # Django's delete confirmation page: the action ran on the selected row.
    assert response.status_code == 200
    assert "Are you sure you want to delete the selected" in response.content.decode()
    assert Validator.objects.filter(pk=validator.pk).exists()
