"""Routes of the per-task, history and comparison views and of the run and scheme-board
downloads. Mounted by leaderboard/site/urls.py before the scheme and site routes; every path here
is new, none shadows an older one."""

from django.urls import URLPattern, URLResolver, path

from leaderboard.views import insights, scheme_exports

urlpatterns: list[URLPattern | URLResolver] = [
    # paper-gap: per task, history
    path(
        "benchmarks/<slug:benchmark>/<str:version>/tasks/<slug:task>/results.csv",
        insights.task_results_csv,
        name="task_results_csv",
    ),
    path(
        "benchmarks/<slug:benchmark>/<str:version>/tasks/<slug:task>/results.json",
        insights.task_results_json,
        name="task_results_json",
    ),
    path("benchmarks/<slug:benchmark>/<str:version>/history/", insights.release_history_page, name="release_history"),
    path(
        "benchmarks/<slug:benchmark>/<str:version>/history.json",
        insights.release_history_json,
        name="release_history_json",
    ),
    # runs: downloads, artifacts, comparison
    path("runs/<int:run_id>/results.csv", insights.run_results_csv, name="run_results_csv"),
    path("runs/<int:run_id>/results.json", insights.run_results_json, name="run_results_json"),
    # scorecard boards
    path(
        "scorecards/<slug:benchmark>/<str:version>/board.csv",
        scheme_exports.scorecard_board_csv,
        name="scorecard_board_csv",
    ),
    path(
        "scorecards/<slug:benchmark>/<str:version>/board.json",
        scheme_exports.scorecard_board_json,
        name="scorecard_board_json",
    ),
    # race boards
    path("races/<slug:benchmark>/overall.csv", scheme_exports.race_overall_csv, name="race_overall_csv"),
    path("races/<slug:benchmark>/overall.json", scheme_exports.race_overall_json, name="race_overall_json"),
    path(
        "races/<slug:benchmark>/race/<int:number>/results.csv",
        scheme_exports.race_results_csv,
        name="race_results_csv",
    ),
    path(
        "races/<slug:benchmark>/race/<int:number>/results.json",
        scheme_exports.race_results_json,
        name="race_results_json",
    ),
    path("races/<slug:benchmark>/qualifying.csv", scheme_exports.race_qualifying_csv, name="race_qualifying_csv"),
    path("races/<slug:benchmark>/qualifying.json", scheme_exports.race_qualifying_json, name="race_qualifying_json"),
    path("races/<slug:benchmark>/history/", insights.race_history_page, name="race_history"),
    path("races/<slug:benchmark>/history.json", insights.race_history_json, name="race_history_json"),
]
