"""Demo scorecard benchmark (seed 001): 100 hidden levels and several agents.

One agent's card reproduces the seed's example ("solved 31 of 100 ... about
1.14x the optimal path (1 / 0.874) ... at least 8% of episodes"); another
plays 10 levels and solves all 10 (10%, not 100%: the padding); one submits
twice (only its best card is shown). Every card travels the real path:
sealed to the site key, submission_create, submission_verify.
Idempotent: a card already submitted (same original name by the demo user)
is not submitted again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from leaderboard.models import Release
from scoring import scorecard as scorecard_scoring
from submissions.demo_loaders.scheme_bundles import scorecard_members, seal_members, submit_sealed

BENCHMARK_SLUG = "sokoban-hidden"
BENCHMARK_NAME = "Sokoban hidden set"
RELEASE_VERSION = "2026.1"
EPISODE_SET_SIZE = 100
DEMO_USERNAME = "demo-scorecards"
# The release manifest (docs/manifest.md) with the hidden level set in levels.yaml.
EXAMPLE_DIR = Path(settings.BASE_DIR) / "examples" / "demo-scorecard"

Episode = scorecard_scoring.ScorecardEpisode


def demo_level_set() -> dict[str, int]:
    """The hidden set: level id -> BFS optimal length (server data, never in a bundle);
    examples/demo-scorecard/levels.yaml lists exactly these (a test keeps them equal).

    Levels 0-59 are mid-difficulty (optimal 20-22); 60-99 climb the ramp from short
    levels under the 30-step floor to long ones (up to 40 moves)."""
    levels: dict[str, int] = {}
    for index in range(EPISODE_SET_SIZE):
        optimal = 20 + index % 3 if index < 60 else 6 + (index * 7) % 35
        levels[f"level-{index:03d}"] = optimal
    return levels


def seed_example_episodes(levels: dict[str, int]) -> list[Episode]:
    """100 episodes whose card reads like seed 001's example: 31 solved of 100, move
    efficiency 0.874 (1.14x optimal), 23.4 steps per solve, deadlock rate 8%, 4120 actions."""
    by_optimal: dict[int, list[str]] = {}
    for level_id, optimal in sorted(levels.items()):
        by_optimal.setdefault(optimal, []).append(level_id)
    # 13 solves of 21-move levels in 23 steps, 6 of 20-move levels in 23, 12 of 20-move levels in 24:
    # 725 steps over 31 solves (23.4 each), mean optimal/steps = 0.8738.
    plan = [(21, 23)] * 13 + [(20, 23)] * 6 + [(20, 24)] * 12
    episodes: list[Episode] = []
    used: set[str] = set()
    for optimal, steps in plan:
        level_id = by_optimal[optimal].pop(0)
        used.add(level_id)
        episodes.append(Episode(level_id, steps, True, False, steps))
    rest = [level_id for level_id in sorted(levels) if level_id not in used]
    # 69 unsolved episodes with 3395 actions (4120 in all); the first 8 end in a deadlock.
    for position, level_id in enumerate(rest):
        actions = 63 if position == len(rest) - 1 else 49
        episodes.append(Episode(level_id, actions, False, position < 8, actions))
    return episodes


def ten_of_ten_episodes(levels: dict[str, int]) -> list[Episode]:
    """Plays 10 levels, solves all 10 perfectly, and stops: the card says 10%."""
    return [Episode(level_id, levels[level_id], True, False, levels[level_id]) for level_id in sorted(levels)[:10]]


def strong_planner_episodes(levels: dict[str, int], *, solved: int, slack: float, deadlocks: int) -> list[Episode]:
    """Plays every level; solves the first ``solved`` within budget with ``slack`` extra steps."""
    episodes = []
    for position, level_id in enumerate(sorted(levels)):
        optimal = levels[level_id]
        if position < solved:
            steps = min(scorecard_scoring.step_budget(optimal), round(optimal * slack))
            episodes.append(Episode(level_id, steps, True, False, steps))
        else:
            budget = scorecard_scoring.step_budget(optimal)
            episodes.append(Episode(level_id, budget, False, position - solved < deadlocks, budget))
    return episodes


def demo_cards(levels: dict[str, int]) -> list[tuple[str, str, str, list[Episode]]]:
    """(bundle name, agent, version, episodes) of every demo card, in submission order."""
    return [
        ("sokoban-seed-example.age", "Crate Whisperer", "1.0", seed_example_episodes(levels)),
        ("sokoban-ten-of-ten.age", "Cherry Picker", "0.1", ten_of_ten_episodes(levels)),
        (
            "sokoban-planner-1.age",
            "Deep Planner",
            "1.0",
            strong_planner_episodes(levels, solved=48, slack=1.3, deadlocks=5),
        ),
        (
            "sokoban-planner-2.age",
            "Deep Planner",
            "1.1",
            strong_planner_episodes(levels, solved=57, slack=1.2, deadlocks=3),
        ),
        (
            "sokoban-greedy.age",
            "Greedy Pusher",
            "2.3",
            strong_planner_episodes(levels, solved=31, slack=1.05, deadlocks=22),
        ),
    ]


def scorecard_release_ensure() -> Release:
    """The demo benchmark, its published release and hidden level set, synced from
    examples/demo-scorecard through the registry's release_sync (idempotent)."""
    from leaderboard.services.releases import release_sync

    return release_sync(manifest=EXAMPLE_DIR).release


def demo_user(username: str) -> Any:
    user, created = get_user_model().objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def load_scorecard_demo(*, stdout: Any) -> None:
    """Load the demo scorecard benchmark through the real verification path."""
    from submissions.models import Submission
    from submissions.site_keys import current_public_key

    release = scorecard_release_ensure()
    levels = dict(release.scorecard_levels.values_list("level_id", "optimal_len"))
    user = demo_user(DEMO_USERNAME)
    _, recipient = current_public_key()
    for name, agent, version, episodes in demo_cards(levels):
        if Submission.objects.filter(submitter=user, original_name=name).exists():
            continue
        card = scorecard_scoring.summarize(episodes, EPISODE_SET_SIZE, levels)
        members = scorecard_members(
            benchmark=BENCHMARK_SLUG,
            release=RELEASE_VERSION,
            agent=agent,
            version=version,
            episodes=episodes,
            claimed=card.to_dict(),
        )
        submission = submit_sealed(user=user, sealed=seal_members(members, recipient), name=name)
        stdout.write(f"scorecard {name}: {submission.verdict or submission.status} {submission.error_code}\n")
    stdout.write(f"scorecard demo: {release} with {release.scorecard_levels.count()} hidden levels\n")
