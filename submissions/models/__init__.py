"""Submissions (the uploaded bundle and its state machine), the runs they
produce, signing keys and API keys."""

from submissions.models.keys import ApiKey, SigningKey, SigningKeyTask
from submissions.models.notifications import NotificationDelivery, WebhookEndpoint
from submissions.models.quotas import DailyCount
from submissions.models.rescoring import Rescore, RescoreItem
from submissions.models.runs import (
    OfficialRerun,
    RaceRun,
    RaceTaskOutcome,
    Run,
    RunEpisodes,
    ScorecardRun,
    TaskResult,
    VerificationEvent,
)
from submissions.models.scorecards import Card, CardEpisode, CardMove
from submissions.models.submission import Submission, SubmissionChallenge
from submissions.models.visibility import RunVisibilityEvent

__all__ = [
    "ApiKey",
    "Card",
    "CardEpisode",
    "CardMove",
    "DailyCount",
    "NotificationDelivery",
    "OfficialRerun",
    "RaceRun",
    "RaceTaskOutcome",
    "Rescore",
    "RescoreItem",
    "Run",
    "RunEpisodes",
    "RunVisibilityEvent",
    "ScorecardRun",
    "SigningKey",
    "SigningKeyTask",
    "Submission",
    "SubmissionChallenge",
    "TaskResult",
    "VerificationEvent",
    "WebhookEndpoint",
]
