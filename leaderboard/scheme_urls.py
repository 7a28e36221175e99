"""Routes of scorecard (seed 001) and race (seed 002) benchmarks.

``scorecard_benchmark`` and ``race_benchmark`` take the benchmark slug: the
paper-gap pages redirect a scheme benchmark's address to them.
"""

from django.urls import URLPattern, URLResolver, path

from leaderboard.views import race as race_views
from leaderboard.views import race_exclusions as race_exclusion_views
from leaderboard.views import scorecard as scorecard_views

urlpatterns: list[URLPattern | URLResolver] = [
    path("scorecards/<slug:benchmark>/", scorecard_views.scorecard_benchmark, name="scorecard_benchmark"),
    path("scorecards/<slug:benchmark>/<str:version>/", scorecard_views.scorecard_board, name="scorecard_board"),
    # A race run is addressed by its opaque public id, not its row number (RaceRun.public_id).
    path("races/runs/<slug:public_id>/", race_views.race_run_detail, name="race_run_detail"),
    path("races/runs/<slug:public_id>/exclude/", race_exclusion_views.race_run_exclude_view, name="race_run_exclude"),
    path(
        "races/runs/<slug:public_id>/reinstate/",
        race_exclusion_views.race_run_reinstate_view,
        name="race_run_reinstate",
    ),
    path("races/<slug:benchmark>/", race_views.race_benchmark, name="race_benchmark"),
    path("races/<slug:benchmark>/overall/", race_views.race_overall, name="race_overall"),
    path("races/<slug:benchmark>/qualifying/", race_views.race_qualifying, name="race_qualifying"),
    path(
        "races/<slug:benchmark>/leaderboard/<int:number>/",
        race_views.race_leaderboard,
        name="race_leaderboard",
    ),
    path("races/<slug:benchmark>/race/<int:number>/", race_views.race_detail, name="race_detail"),
    # An agent version is free text ("2026/05" is one): ``path`` takes its slashes, so every
    # version a run was filed under has an address (``str`` would make its links a 500).
    path(
        "races/<slug:benchmark>/agents/<slug:agent>/<path:version>/",
        race_views.race_agent_version,
        name="race_agent_version",
    ),
]
