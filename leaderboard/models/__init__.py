"""The registry (benchmarks, evaluators, tasks, releases, races) and the
precomputed standings visitors read."""

from leaderboard.models.accounts import LoginFailureCounter
from leaderboard.models.agents import Agent, AgentVersion
from leaderboard.models.races import Race, RaceEntry, ScorecardLevel, Validator
from leaderboard.models.registry import Benchmark, Evaluator, Release, ReleaseTask, Task
from leaderboard.models.standings import Standing

__all__ = [
    "Agent",
    "AgentVersion",
    "Benchmark",
    "Evaluator",
    "LoginFailureCounter",
    "Race",
    "RaceEntry",
    "Release",
    "ReleaseTask",
    "ScorecardLevel",
    "Standing",
    "Task",
    "Validator",
]
