from typing import Any

from django.apps import AppConfig
from django.db.backends.signals import connection_created


def _register_sqlite_functions(sender: Any, connection: Any, **kwargs: Any) -> None:
    """SQLite has no numeric type to round as PostgreSQL does; the boards' published-score
    ordering calls this Python function there instead (leaderboard.services.paper_gap_standings)."""
    if connection.vendor != "sqlite":
        return
    # Imported here: the app registry is not ready when this module loads (models import).
    from leaderboard.disclosure import published_score
    from leaderboard.services.paper_gap_standings import SQLITE_PUBLISHED_SCORE  # see above

    connection.connection.create_function(SQLITE_PUBLISHED_SCORE, 1, published_score, deterministic=True)


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard registry"

    def ready(self) -> None:
        connection_created.connect(_register_sqlite_functions, dispatch_uid="podium-sqlite-functions")
