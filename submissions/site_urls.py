"""Website upload, live status and "my submissions"."""

from django.urls import path

from submissions import views, views_visibility

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
]
