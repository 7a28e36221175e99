"""Root URLs. Each app keeps its own routes; this file only mounts them."""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("leaderboard.site_urls")),
]
