"""Website upload, live status and "my submissions"."""

from django.urls import path

from submissions import views

urlpatterns = [
    path("submit/", views.upload, name="submission_upload"),
    path("submit/challenge/", views.challenge_new, name="submission_challenge"),
    path("validators/owed-runs/", views.owed_runs, name="owed_runs"),
    path("submit/race-entries/", views.race_entries, name="race_entries"),
    path("submissions/", views.my_submissions, name="my_submissions"),
    path("submissions/<uuid:submission_id>/", views.submission_detail, name="submission_detail"),
    path("submissions/<uuid:submission_id>/status.json", views.submission_status, name="submission_status"),
]
