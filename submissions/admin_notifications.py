"""Admin for verdict notifications and the run visibility log: both read-only (the rows are
state machines and an append-only log); staff can send a failed notification once more."""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from leaderboard.permissions import CHANGE_NOTIFICATION, staff_may
from submissions.models import NotificationDelivery, RunVisibilityEvent
from submissions.services import notifications
from submissions.services.enqueue import enqueue_on_commit


class _ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(NotificationDelivery)
class NotificationDeliveryAdmin(_ReadOnly):
    list_display = ["id", "submission", "channel", "target", "state", "attempts", "last_error", "updated_at"]
    list_filter = ["channel", "state"]
    search_fields = ["submission__id", "target"]
    actions = ["send_again"]

    def has_send_again_permission(self, request: HttpRequest) -> bool:
        # The rows are read-only (no change permission here), so the action names its own.
        return staff_may(request.user, CHANGE_NOTIFICATION)

    @admin.action(description="Send the selected failed notifications once more", permissions=["send_again"])
    def send_again(self, request: HttpRequest, queryset: QuerySet[NotificationDelivery]) -> None:
        ids = list(queryset.filter(state=NotificationDelivery.State.FAILED).values_list("pk", flat=True))
        NotificationDelivery.objects.filter(pk__in=ids).update(state=NotificationDelivery.State.PENDING, attempts=0)
        for delivery_id in ids:
            enqueue_on_commit(partial(notifications._enqueue, delivery_id), what=f"notification {delivery_id}")
        self.message_user(request, f"{len(ids)} notification(s) queued again; others were not failed")


@admin.register(RunVisibilityEvent)
class RunVisibilityEventAdmin(_ReadOnly):
    list_display = ["created_at", "run", "action", "actor", "reason"]
    list_filter = ["action"]
    search_fields = ["run__id", "reason"]
