"""The registry (benchmarks, evaluators, tasks, releases, races, signing keys), agents, the
results the boards read (runs, task results, scorecard and race runs, the verification log)
and the precomputed standings visitors read."""

from leaderboard.models.accounts import LoginFailureCounter
from leaderboard.models.agents import Agent, AgentVersion
from leaderboard.models.declarations import AgentVersionMeta, Baseline, ReleasePrice, RunCost
from leaderboard.models.races import QualifyingEntry, Race, RaceEntry, ScorecardLevel, Validator
from leaderboard.models.registry import Benchmark, Evaluator, Release, ReleaseTask, Task
from leaderboard.models.runs import (
    OfficialRerun,
    RaceRun,
    RaceTaskOutcome,
    Run,
    RunEpisodes,
    ScorecardRun,
    TaskResult,
    VerificationEvent,
)
from leaderboard.models.signing_keys import SigningKey, SigningKeyEvent, SigningKeyTask
from leaderboard.models.standings import Standing

__all__ = [
    "Agent",
    "AgentVersion",
    "AgentVersionMeta",
    "Baseline",
    "Benchmark",
    "Evaluator",
    "LoginFailureCounter",
    "OfficialRerun",
    "QualifyingEntry",
    "Race",
    "RaceEntry",
    "RaceRun",
    "RaceTaskOutcome",
    "Release",
    "ReleasePrice",
    "ReleaseTask",
    "Run",
    "RunCost",
    "RunEpisodes",
    "ScorecardLevel",
    "ScorecardRun",
    "SigningKey",
    "SigningKeyEvent",
    "SigningKeyTask",
    "Standing",
    "Task",
    "TaskResult",
    "Validator",
    "VerificationEvent",
]
