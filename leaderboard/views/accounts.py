"""Sign-up, and sign-in with a throttle. Sign-out is Django's own view (leaderboard/account_urls.py)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm, UsernameField
from django.contrib.auth.models import User
from django.contrib.auth.validators import ASCIIUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from leaderboard.services.login_throttle import (
    client_address,
    login_failure_record,
    login_failures_clear,
    login_locked_until,
    login_scope,
)
from leaderboard.users import username_lock

LOGIN_THROTTLED_MESSAGE = (
    "Too many failed sign-in attempts for this account from your address. Signing in is locked for "
    "%(minutes)s more minute(s); the password is not checked until then."
)


class LoginThrottleMixin:
    """leaderboard.services.login_throttle in front of an AuthenticationForm (the site's sign-in
    and the admin's): a locked (username, address) pair is refused before the password is
    checked; every failure is counted; a success clears the count."""

    throttled = False

    def clean(self) -> dict[str, Any]:
        # A mixin over AuthenticationForm, which supplies cleaned_data, request and clean().
        username = self.cleaned_data.get("username") or ""  # type: ignore[attr-defined]
        scope = login_scope(username=username, address=client_address(self.request))  # type: ignore[attr-defined]
        locked_until = login_locked_until(scope=scope)
        if locked_until is not None:
            raise self._throttled(locked_until)
        try:
            cleaned = super().clean()  # type: ignore[misc]
        except ValidationError:
            if username:
                locked_until = login_failure_record(scope=scope)
                if locked_until is not None:
                    raise self._throttled(locked_until) from None
            raise
        login_failures_clear(scope=scope)
        return cleaned

    def _throttled(self, locked_until: Any) -> ValidationError:
        self.throttled = True
        minutes = max(1, math.ceil((locked_until - timezone.now()).total_seconds() / 60))
        return ValidationError(LOGIN_THROTTLED_MESSAGE, code="throttled", params={"minutes": minutes})


class ThrottledAuthenticationForm(LoginThrottleMixin, AuthenticationForm):
    """The site's sign-in form."""


class ThrottledAdminAuthenticationForm(LoginThrottleMixin, AdminAuthenticationForm):
    """The admin's sign-in form: the same throttle, so /admin/login/ is no way around it."""


class ThrottledLoginView(auth_views.LoginView):
    form_class = ThrottledAuthenticationForm
    redirect_authenticated_user = True

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        response = super().form_invalid(form)
        if isinstance(form, ThrottledAuthenticationForm) and form.throttled:
            response.status_code = 429  # Too Many Requests: the page says for how long
        return response


if TYPE_CHECKING:
    _UserCreationForm = UserCreationForm[User]  # generic in django-stubs only, not at runtime
else:
    _UserCreationForm = UserCreationForm


class SignUpForm(_UserCreationForm):
    """Django's sign-up form with ASCII usernames only. A username is public (a run page's
    "Submitted by", the actor in every log) and Django's default validator takes any Unicode
    letter, so "\u0430lice" with a Cyrillic "\u0430" read as another account's "alice" while its
    case-insensitive uniqueness check saw a different name (tests/website/test_accounts.py).
    Django already refuses a case variant of a taken name; an ASCII lookalike ("AIice") stays
    a different, visibly spelled name, as for agent names (docs/security-model.md).

    An email address is optional: it is where verdicts are mailed (never shown publicly)."""

    class Meta:  # Django's UserCreationForm.Meta, plus the email field
        model = User
        fields = ("username", "email")
        field_classes = {"username": UsernameField}
        help_texts = {"email": "Optional. Podium emails you each verdict there; it is never shown publicly."}

    def clean_username(self) -> str:
        username = self.cleaned_data.get("username")
        if username:
            # The signup view validates and saves in one transaction: an admin adding the name
            # meanwhile is serialised with this form (leaderboard.users.username_lock).
            username_lock(username)
        username = super().clean_username()
        ASCIIUsernameValidator()(username)
        return username

    def create_user(self) -> User | None:
        """The new account, or None with the username's "already exists" error on the form when
        another sign-up took the name, in any case, after ``clean_username`` looked (a double
        click on the button; "Bob" and "bob" at once): the unique index on username, or the one
        on lower(username) (leaderboard/migrations/0004), refuses the second INSERT, which was a
        500 (tests/website/test_accounts.py)."""
        try:
            with transaction.atomic():
                return self.save()
        except IntegrityError:
            if not User.objects.filter(username__iexact=self.cleaned_data["username"]).exists():
                raise
            self.add_error("username", self.instance.unique_error_message(User, ("username",)))
            return None


@require_http_methods(["GET", "POST"])
def signup(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return redirect("home")
    form = SignUpForm(request.POST or None)
    user = None
    if request.method == "POST":
        with transaction.atomic():  # the username lock (clean_username) holds until the INSERT commits
            if form.is_valid():
                user = form.create_user()
        if user is not None:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect("my_submissions")
    return render(request, "registration/signup.html", {"form": form}, status=400 if form.errors else 200)
