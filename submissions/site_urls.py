"""Website upload, live status and "my submissions"."""

from django.urls import path

from submissions import views, views_run_bundles, views_scorecards, views_visibility

urlpatterns = [
    path("submit/", views.upload, name="submission_upload"),
    path("submit/challenge/", views.challenge_new, name="submission_challenge"),
    path("validators/owed-runs/", views.owed_runs, name="owed_runs"),
    path("submit/race-entries/", views.race_entries, name="race_entries"),
    path("submissions/", views.my_submissions, name="my_submissions"),
    path("submissions/<uuid:submission_id>/", views.submission_detail, name="submission_detail"),
    path("submissions/<uuid:submission_id>/status.json", views.submission_status, name="submission_status"),
    # Withdraw / hide: POST forms on the run page.
    path("runs/<int:run_id>/withdraw/", views_visibility.run_withdraw_view, name="run_withdraw"),
    path("runs/<int:run_id>/restore/", views_visibility.run_restore_view, name="run_restore"),
    path("runs/<int:run_id>/hide/", views_visibility.run_hide_view, name="run_hide"),
    path("runs/<int:run_id>/unhide/", views_visibility.run_unhide_view, name="run_unhide"),
    # A run's stored bundle read back: episodes, artifacts, comparison (submissions.selectors).
    path("runs/compare/", views_run_bundles.run_compare_page, name="run_compare"),
    path("runs/compare.json", views_run_bundles.run_compare_json, name="run_compare_json"),
    path("runs/<int:run_id>/episodes.csv", views_run_bundles.run_episodes_csv, name="run_episodes_csv"),
    path("runs/<int:run_id>/episodes.json", views_run_bundles.run_episodes_json, name="run_episodes_json"),
    path("runs/<int:run_id>/artifacts/", views_run_bundles.run_artifacts, name="run_artifacts"),
    path(
        "runs/<int:run_id>/artifacts/<path:name>", views_run_bundles.run_artifact_download, name="run_artifact_download"
    ),
    # A closed scorecard card and the replay of its episodes (the card rows are the game server's).
    path("scorecards/cards/<int:pk>/", views_scorecards.scorecard_detail, name="scorecard_detail"),
    path(
        "scorecards/cards/<int:pk>/episodes/<str:level>/", views_scorecards.scorecard_episode, name="scorecard_episode"
    ),
]
