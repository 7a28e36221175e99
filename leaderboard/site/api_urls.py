"""REST API v1 routes (mounted at /api/v1/ by leaderboard/site/urls.py). See docs/api.md."""

from django.urls import URLPattern, URLResolver, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from leaderboard.api import admin_views as registry_admin
from leaderboard.api import declarations
from leaderboard.api import scheme_views as scheme_boards
from leaderboard.api import views as public
from leaderboard.api_errors import JsonErrorsView, api_not_found
from leaderboard.manifest.episode_parser import LEVEL_ID_PATTERN
from submissions.api import account_views
from submissions.api import admin_views as keys_admin
from submissions.api import schema as _schema  # noqa: F401 - registers the Api-Key scheme
from submissions.api import scorecards as play
from submissions.api import trust_views as trust
from submissions.api import views as submitter

router = SimpleRouter()
router.register("benchmarks", public.BenchmarkViewSet, basename="api-benchmark")
router.register("releases", public.ReleaseViewSet, basename="api-release")
router.register("tasks", public.TaskViewSet, basename="api-task")
router.register("runs", public.RunViewSet, basename="api-run")
router.register("agents", public.AgentViewSet, basename="api-agent")
router.register("submissions", submitter.SubmissionViewSet, basename="api-submission")
router.register("admin/signing-keys", keys_admin.SigningKeyViewSet, basename="api-signing-key")


class DocsView(JsonErrorsView, SpectacularSwaggerSplitView):
    """Swagger UI from drf-spectacular-sidecar's local assets. The split view serves its
    init script from a URL (no inline script) and our template drops the inline style,
    so the site's strict CSP applies unchanged. Its errors are the API's JSON (JsonErrorsView)."""

    template_name = "api/swagger_ui.html"
    # The docs are public and read no account. Authenticating made a signed-in POST a 500: the
    # 405 (or 406) was rendered through this template, whose context processors ask for the user,
    # and the session check then parsed the body for a CSRF token, raising again while
    # rendering (tests/api/test_docs_page.py). Errors are JSON now; the page still needs no one.
    authentication_classes: list[type] = []


# The OpenAPI schema (YAML, or JSON by negotiation); its errors are the API's JSON, not YAML.
# No docstring of its own: drf-spectacular publishes the view's docstring as the description of
# /api/v1/schema/, which stays SpectacularAPIView's (a class does not inherit __doc__).
class SchemaView(JsonErrorsView, SpectacularAPIView):
    __doc__ = SpectacularAPIView.__doc__  # type: ignore[assignment]  # a lazy translation, typed as such

    # Public, and the same for everyone: reading no account, a signed-in POST is the 405 the docs
    # promise, not the session's CSRF refusal (as DocsView).
    authentication_classes: list[type] = []


# A card id in a path: digits, as many as a card id could ever need and some. Longer than a
# bigint holds is a card that does not exist, answered card_not_found like any other (with
# 18 digits at most, a 19-digit id matched no route: the generic not_found); bounded so
# that int() of the segment stays cheap.
CARD_ID = "[0-9]{1,30}"

urlpatterns: list[URLPattern | URLResolver] = [
    # First: the play loop's action is the API's most frequent request, and Django tries
    # patterns in order (no two patterns here match one path, so order decides nothing else).
    re_path(
        rf"^scorecards/(?P<card_id>{CARD_ID})/levels/(?P<level_id>{LEVEL_ID_PATTERN})/actions/?$",
        play.level_action,
        name="api-scorecard-action",
    ),
    path("", public.ApiRootView.as_view(), name="api-root"),
    path("schema/", SchemaView.as_view(), name="api-schema"),
    path("docs/", DocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("site-key/", submitter.SiteKeyView.as_view(), name="api-site-key"),
    path("limits/", submitter.LimitsView.as_view(), name="api-limits"),
    path("challenges/", trust.ChallengeView.as_view(), name="api-challenges"),
    path("race-entries/", trust.RaceEntryView.as_view(), name="api-race-entries"),
    path("owed-runs/", trust.OwedRunsView.as_view(), name="api-owed-runs"),
    path(
        "releases/<int:release_id>/leaderboard/<str:tab>/",
        public.LeaderboardView.as_view(),
        name="api-leaderboard",
    ),
    path(
        "scorecard-boards/<slug:benchmark>/<str:version>/",
        scheme_boards.ScorecardBoardView.as_view(),
        name="api-scorecard-board",
    ),
    path("race-boards/<slug:benchmark>/overall/", scheme_boards.RaceOverallView.as_view(), name="api-race-overall"),
    path(
        "race-boards/<slug:benchmark>/races/<int:number>/",
        scheme_boards.RaceResultsView.as_view(),
        name="api-race-results",
    ),
    path(
        "race-boards/<slug:benchmark>/qualifying/",
        scheme_boards.RaceQualifyingView.as_view(),
        name="api-race-qualifying",
    ),
    path("admin/releases/sync/", registry_admin.ManifestSyncView.as_view(), name="api-manifest-sync"),
    path("admin/races/<int:race_id>/release/", registry_admin.RaceReleaseView.as_view(), name="api-race-release"),
    # Seed 001 scorecards played on the server; the issue fixes these paths (no trailing slash
    # on the level and close calls; one is accepted too).
    path("scorecards/", play.CardOpenView.as_view(), name="api-scorecard-open"),
    re_path(rf"^scorecards/(?P<card_id>{CARD_ID})/?$", play.CardDetailView.as_view(), name="api-scorecard"),
    re_path(rf"^scorecards/(?P<card_id>{CARD_ID})/close/?$", play.CardCloseView.as_view(), name="api-scorecard-close"),
    re_path(
        rf"^scorecards/(?P<card_id>{CARD_ID})/levels/(?P<level_id>{LEVEL_ID_PATTERN})/reset/?$",
        play.LevelResetView.as_view(),
        name="api-scorecard-reset",
    ),
    re_path(
        rf"^scorecards/(?P<card_id>{CARD_ID})/levels/(?P<level_id>{LEVEL_ID_PATTERN})/?$",
        play.LevelView.as_view(),
        name="api-scorecard-level",
    ),
    path("admin/runs/<int:run_id>/reruns/", keys_admin.RunRerunView.as_view(), name="api-run-rerun"),
    path("admin/runs/<int:run_id>/level/", keys_admin.RunLevelView.as_view(), name="api-run-level"),
    # ``path`` for the version: free text that may hold slashes ("2026/05"), each addressable.
    path(
        "agents/<slug:agent>/versions/<path:version>/metadata/",
        declarations.AgentVersionDeclarationView.as_view(),
        name="api-agent-version-metadata",
    ),
    path("releases/<int:release_id>/prices/", declarations.ReleasePricesView.as_view(), name="api-release-prices"),
    path(
        "agents/<slug:agent>/versions/<path:version>/baseline/",
        declarations.AgentVersionBaselineView.as_view(),
        name="api-agent-version-baseline",
    ),
    # The account's webhook; withdraw / hide a run.
    path("account/webhook/", account_views.WebhookView.as_view(), name="api-webhook"),
    path("account/webhook/rotate-secret/", account_views.WebhookRotateView.as_view(), name="api-webhook-rotate"),
    path("runs/<int:run_id>/withdraw/", account_views.RunWithdrawView.as_view(), name="api-run-withdraw"),
    path("runs/<int:run_id>/restore/", account_views.RunRestoreView.as_view(), name="api-run-restore"),
    path("runs/<int:run_id>/hide/", account_views.RunHideView.as_view(), name="api-run-hide"),
    path("runs/<int:run_id>/unhide/", account_views.RunUnhideView.as_view(), name="api-run-unhide"),
    *router.urls,
    # Unknown paths under /api/ answer JSON, never the HTML 404 page. [\s\S], not ".": a path
    # holding a newline (%0A) fell through to Django's HTML 404 (and Django cannot reverse the
    # inline flag (?s) that would make "." match it).
    re_path(r"^[\s\S]*$", api_not_found),
]
