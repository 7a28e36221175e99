"""Root URLs. Each area keeps its own routes; this file only mounts them."""

from django.contrib import admin
from django.urls import include, path, re_path

from leaderboard.api_errors import api_not_found
from leaderboard.views.accounts import ThrottledAdminAuthenticationForm

# The admin's sign-in goes through the same throttle as the site's (leaderboard.services.login_throttle).
admin.site.login_form = ThrottledAdminAuthenticationForm

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("leaderboard.site.api_urls")),
    # /api/, /api/v2/...: the API's JSON 404, as under /api/v1/ (not the site's page).
    re_path(r"^api(?:/|$)", api_not_found),
    path("accounts/api-keys/", include("submissions.api_key_urls")),
    path("accounts/", include("leaderboard.account_urls")),
    path("", include("submissions.site_urls")),
    path("", include("leaderboard.insight_urls")),
    path("", include("leaderboard.scheme_urls")),
    path("", include("leaderboard.site_urls")),
]

handler400 = "leaderboard.error_pages.bad_request"
handler403 = "leaderboard.error_pages.permission_denied"
handler404 = "leaderboard.error_pages.page_not_found"
handler500 = "leaderboard.error_pages.server_error"
