"""The registry (benchmarks, evaluators, tasks, releases, races) and the
precomputed standings visitors read."""

from leaderboard.models.accounts import LoginFailureCounter
from leaderboard.models.agents import Agent, AgentVersion
from leaderboard.models.declarations import AgentVersionMeta, Baseline, ReleasePrice, RunCost
from leaderboard.models.races import Race, RaceEntry, ScorecardLevel, Validator
from leaderboard.models.registry import Benchmark, Evaluator, Release, ReleaseTask, Task
from leaderboard.models.standings import Standing

__all__ = [
    "Agent",
    "AgentVersion",
    "AgentVersionMeta",
    "Baseline",
    "Benchmark",
    "Evaluator",
    "LoginFailureCounter",
    "Race",
    "RaceEntry",
    "Release",
    "ReleasePrice",
    "ReleaseTask",
    "RunCost",
    "ScorecardLevel",
    "Standing",
    "Task",
    "Validator",
]
