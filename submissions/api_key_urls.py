"""API key pages, mounted at /accounts/api-keys/ by leaderboard/site/urls.py."""

from django.urls import path

from submissions import views_api_keys, views_webhook

urlpatterns = [
    path("", views_api_keys.api_keys, name="api_keys"),
    path("<int:key_id>/revoke/", views_api_keys.api_key_revoke_view, name="api_key_revoke"),
    path("webhook/", views_webhook.webhook_update, name="webhook_update"),
]
