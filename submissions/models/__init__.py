"""Intake and trust: submissions (the uploaded bundle and its state machine), challenges, API
keys, quotas, notifications, rescoring, visibility events and the scorecard game server
(cards). The runs they produce are leaderboard's (leaderboard.models.runs)."""

from submissions.models.keys import ApiKey
from submissions.models.notifications import NotificationDelivery, WebhookEndpoint
from submissions.models.quotas import DailyCount
from submissions.models.rescoring import Rescore, RescoreItem
from submissions.models.scorecards import Card, CardEpisode, CardMove
from submissions.models.submission import SignedResultDigest, Submission, SubmissionChallenge
from submissions.models.visibility import RunVisibilityEvent

__all__ = [
    "ApiKey",
    "Card",
    "CardEpisode",
    "CardMove",
    "DailyCount",
    "NotificationDelivery",
    "Rescore",
    "RescoreItem",
    "RunVisibilityEvent",
    "SignedResultDigest",
    "Submission",
    "SubmissionChallenge",
    "WebhookEndpoint",
]
