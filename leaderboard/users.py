"""The account types that views, services and selectors share.

The site uses Django's own ``auth.User``. A visitor may be anonymous, so code that filters
what a *viewer* may see takes a ``Viewer``; code that acts *for* an account takes a ``User``,
obtained from the request with ``signed_in_user`` once an authentication gate has passed.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import Value
from django.db.models.functions import Lower
from django.http import HttpRequest
from rest_framework.request import Request

Viewer = User | AnonymousUser


def signed_in_user(request: HttpRequest | Request) -> User:
    """The request's account, behind ``login_required`` or DRF's ``IsAuthenticated``.

    Those gates already turn anonymous visitors away; the check here makes that invariant
    explicit (an anonymous request reaching an account-only path is refused, never served
    as someone else).
    """
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied("this page needs a signed-in account")
    return user


def username_lock(username: str) -> None:
    """Hold, until the current transaction ends, the lock on ``username`` (whatever its case)
    that every Podium path creating or renaming an account takes before it looks the name up:
    sign-up (``leaderboard.views.accounts``), the admin's add and change forms
    (``leaderboard.admin_users``), ``ensure_admin`` and ``load_demo``'s demo account.

    Usernames are unique whatever their case (leaderboard/migrations/0004). A form checks that
    with a SELECT, then INSERTs: two admins adding "bob" and "Bob" at once (or two ensure_admin
    runs) both passed the check and the second INSERT failed on the unique index, a 500 or a
    traceback. Taken first, the lock makes check and write one step: the second waits for the
    first to commit, then its check sees the name and refuses it with the form's own message.
    Django's own ``createsuperuser`` does not take it (an operator's command, which reports the
    database's refusal itself).

    PostgreSQL: a transaction-scoped advisory lock keyed by the database's own ``lower()``, the
    function of the unique index (Python's ``str.lower`` folds some letters otherwise: "İ"); a
    hash collision only serialises two unrelated names. SQLite: nothing to take, its
    transactions begin IMMEDIATE (settings), so writers already run one at a time."""
    if not connection.in_atomic_block:
        # Outside a transaction the lock would be released at once and guard nothing.
        raise RuntimeError("username_lock() needs a transaction (transaction.atomic)")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended('username:' || lower(%s), 0))", [username])


def username_holder(username: str, *, exclude_pk: int | None = None) -> str | None:
    """The username of the account holding ``username`` in any case, as the unique index on
    ``lower(username)`` compares them, or None. Django's checks use ``iexact`` (``UPPER()`` on
    PostgreSQL), which folds some letters differently from ``lower()`` ("İa" and "ia" differ in
    upper case, not in lower): such a name passed the form and failed on the index, a 500."""
    holders = User.objects.annotate(folded=Lower("username")).filter(folded=Lower(Value(username)))
    if exclude_pk is not None:
        holders = holders.exclude(pk=exclude_pk)
    holder: str | None = holders.values_list("username", flat=True).first()
    return holder
