"""Sign-in (throttled), sign-out (POST only, Django 5) and sign-up, mounted under /accounts/."""

from django.contrib.auth import views as auth_views
from django.urls import path

from leaderboard.views import accounts

urlpatterns = [
    path("login/", accounts.ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("signup/", accounts.signup, name="signup"),
]
