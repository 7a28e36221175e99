# Written by hand: Django's auth.User has no case-insensitive constraint to declare on a model.

from django.core.management.base import CommandError
from django.db import migrations
from django.db.models import Count
from django.db.models.functions import Lower

# Sign-up refuses a case variant of a taken username (leaderboard.views.accounts.SignUpForm),
# but two sign-ups at once ("Bob" and "bob") both pass that check and both insert: only the
# database can refuse the second. lower() is ASCII case on SQLite and the database collation's
# case on PostgreSQL; sign-up takes ASCII usernames only, so both refuse the same pairs there.
#
# Django's SQLite backend rebuilds a table to alter one of its columns and keeps only the
# indexes the model state knows, not this one: a later auth migration altering auth_user would
# drop it there (tests/leaderboard/test_migrations.py builds a database with migrate and
# checks the index is there).
INDEX = "auth_user_username_lower_uniq"
CREATE_INDEX_SQL = f"CREATE UNIQUE INDEX {INDEX} ON auth_user (lower(username))"
DROP_INDEX_SQL = f"DROP INDEX {INDEX}"


class UsernameCaseClash(CommandError):
    """Existing accounts whose usernames differ only in case: the index cannot be built until a
    maintainer renames or removes all but one of each. A CommandError, so ``manage.py migrate``
    prints the message alone rather than a traceback ending in an IntegrityError."""


def refuse_case_clashes(apps, schema_editor):
    users = apps.get_model("auth", "User")
    clashing = (
        users.objects.annotate(folded=Lower("username"))
        .values("folded")
        .annotate(accounts=Count("id"))
        .filter(accounts__gt=1)
        .values_list("folded", flat=True)
    )
    groups = []
    for folded in sorted(clashing):
        names = users.objects.annotate(folded=Lower("username")).filter(folded=folded)
        groups.append(", ".join(repr(name) for name in names.order_by("username").values_list("username", flat=True)))
    if groups:
        raise UsernameCaseClash(
            "auth_user holds usernames that differ only in case, which the unique index on lower(username) "
            f"refuses: {'; '.join(groups)}. Rename or remove all but one of each (the admin's user pages), "
            "then run migrate again."
        )


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0003_qualifying_entry"),
        # The last auth migration that shapes auth_user (username became 150 characters in 0008).
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.RunPython(refuse_case_clashes, migrations.RunPython.noop),
        # The test database is built from the models (--no-migrations): tests/conftest.py runs this SQL there.
        migrations.RunSQL(CREATE_INDEX_SQL, DROP_INDEX_SQL),
    ]
