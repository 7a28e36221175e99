"""Visitor-facing pages of paper-gap benchmarks, their exports and badges."""

from django.urls import path

from leaderboard.views import declarations, exports, favicon, health, paper_gap, run_page

urlpatterns = [
    path("", paper_gap.home, name="home"),
    path("healthz", paper_gap.healthz, name="healthz"),
    path("favicon.ico", favicon.favicon, name="favicon"),
    path("readyz", health.readyz, name="readyz"),
    path("benchmarks/<slug:benchmark>/", paper_gap.benchmark_detail, name="benchmark_detail"),
    path("benchmarks/<slug:benchmark>/<str:version>/", paper_gap.release_board, name="release_board"),
    path("benchmarks/<slug:benchmark>/<str:version>/board.csv", exports.board_csv, name="board_csv"),
    path("benchmarks/<slug:benchmark>/<str:version>/board.json", exports.board_json, name="board_json"),
    path("benchmarks/<slug:benchmark>/<str:version>/chart.json", exports.chart_data, name="chart_data"),
    path(
        "benchmarks/<slug:benchmark>/<str:version>/cost-chart.json",
        declarations.cost_chart_data,
        name="cost_chart_data",
    ),
    path("benchmarks/<slug:benchmark>/<str:version>/release/", paper_gap.release_detail, name="release_detail"),
    path("benchmarks/<slug:benchmark>/<str:version>/tasks/<slug:task>/", paper_gap.task_detail, name="task_detail"),
    path("runs/<int:run_id>/", run_page.run_detail, name="run_detail"),
    path("agents/<slug:agent>/", paper_gap.agent_detail, name="agent_detail"),
    # ``path``: an agent version may hold slashes (see scheme_urls.race_agent_version).
    path(
        "agents/<slug:agent>/versions/<path:version>/declare/",
        declarations.agent_version_declare,
        name="agent_version_declare",
    ),
    path("badges/<slug:benchmark>/<str:version>/<slug:agent>.svg", exports.agent_badge, name="agent_badge"),
]
