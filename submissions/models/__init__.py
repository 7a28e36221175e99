"""Submissions (the uploaded bundle and its state machine), the runs they
produce, signing keys and API keys."""

from submissions.models.keys import ApiKey, SigningKey
from submissions.models.quotas import DailyCount
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
from submissions.models.submission import Submission

__all__ = [
    "ApiKey",
    "Card",
    "CardEpisode",
    "CardMove",
    "DailyCount",
    "OfficialRerun",
    "RaceRun",
    "RaceTaskOutcome",
    "Run",
    "RunEpisodes",
    "ScorecardRun",
    "SigningKey",
    "Submission",
    "TaskResult",
    "VerificationEvent",
]
