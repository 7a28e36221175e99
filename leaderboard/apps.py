from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    name = "leaderboard"
    verbose_name = "Leaderboard registry"

    def ready(self) -> None:
        # Load the Celery app so @shared_task binds to it in web processes too.
        from leaderboard import celery  # noqa: F401
