"""The race embargo walk (issue 11 item 7): until a race is released, none of its raw values
(raw score, field baseline, vs Field delta, the Overall that folds them in, a validator
run's score, a per-episode paid reward) appears on any page or API response, for an
anonymous visitor, an unrelated account, the entrant who owns the agent, or a validator's
account (who sees only the runs it filed itself). Staff see everything.

The walk follows every link and every URL in every HTML page and JSON response it reaches,
starting from the home page, the race pages and the API root, and searches each body for
every raw value in each form the site prints numbers (3 decimals, signed 3 decimals, repr).
"""

from __future__ import annotations

import json
import re
from collections import deque
from urllib.parse import urlsplit

import pytest
from django.urls import reverse
from schemes_race_helpers import RACE_TASKS, accepted, challenge_for, enter, members, scoring_outcomes

from leaderboard.models import Agent, RaceRun, RaceTaskOutcome
from leaderboard.models.races import OverallStanding, RaceResult
from leaderboard.services import races as lifecycle
from tests.staff import staff_grant

MAX_PAGES = 400
SKIP_PREFIXES = ("/admin/", "/static/", "/media/", "/accounts/logout", "/api/v1/schema", "/api/v1/docs")
HREF = re.compile(r"""(?:href|src|action)="([^"#]+)""")


def distinctive_outcomes(seed: int) -> list:
    """Accepted orders with rewards unlike any other number on the site (e.g. 0.4137, 0.4508 …)."""
    return [accepted(task, round(0.3011 + 0.0391 * index + 0.0173 * seed, 4)) for index, task in enumerate(RACE_TASKS)]


@pytest.fixture
def world(race_benchmark, race_release, make_user, submit, make_validator):
    """Race 1 released; race 2 running with two agents, each run by two validators whose
    runs are filed by two different accounts, so a raw race score (the mean) differs from
    every single run's score."""
    filer_a, filer_b = make_user("filer-a"), make_user("filer-b")
    entrant, stranger = make_user("entrant"), make_user("stranger")
    (validator_a, key_a), (validator_b, key_b) = make_validator("validator-a"), make_validator("validator-b")
    # Each filer acts for its validator: only a validator's account may ask for a race run's challenge.
    validator_a.accounts.add(filer_a)
    validator_b.accounts.add(filer_b)
    first = lifecycle.race_schedule(
        benchmark=race_benchmark, number=1, task_ids=RACE_TASKS, is_launch=True, release=race_release
    )
    lifecycle.race_start(race=first)
    for agent, score in (("Alpha", 0.6), ("Beta", 0.3)):
        submission = submit(
            filer_a,
            members(
                validator=validator_a,
                key=key_a,
                agent=agent,
                version="1",
                outcomes=scoring_outcomes(score),
                race=1,
                # Entered by its owner before the filer asks for the run's challenge.
                challenge=enter(agent, "1", 1) and challenge_for(agent, "1", 1, user=filer_a),
            ),
            name=f"r1-{agent}",
        )
        assert submission.verdict == "attested", submission.error_message
    lifecycle.race_close(race=first)
    lifecycle.race_release(race=first)
    second = lifecycle.race_start(
        race=lifecycle.race_schedule(benchmark=race_benchmark, number=2, task_ids=RACE_TASKS, release=race_release)
    )
    for seed, (agent, filer, validator, key) in enumerate(
        [
            ("Alpha", filer_a, validator_a, key_a),
            ("Alpha", filer_b, validator_b, key_b),
            ("Beta", filer_a, validator_a, key_a),
            ("Beta", filer_b, validator_b, key_b),
        ]
    ):
        outcomes = distinctive_outcomes(seed * 3 + (5 if agent == "Beta" else 0))
        submission = submit(
            filer,
            members(
                validator=validator,
                key=key,
                agent=agent,
                version="1",
                outcomes=outcomes,
                race=2,
                challenge=enter(agent, "1", 2) and challenge_for(agent, "1", 2, user=filer),
            ),
            name=f"r2-{agent}-{seed}",
        )
        assert submission.verdict == "attested", submission.error_message
    Agent.objects.filter(slug__in=["alpha", "beta"]).update(owner=entrant)
    return {"race": second, "filers": (filer_a, filer_b), "entrant": entrant, "stranger": stranger}


def forms(value: float) -> set[str]:
    # Pages print 3 decimals, signed values with "+" or U+2212: the magnitude is in every form.
    out = {f"{abs(value):.3f}"}
    if len(repr(value)) >= 6:
        out.add(repr(value))
    return out


def raw_values(race, *, except_filed_by=None) -> dict[str, str]:
    """Every raw value of ``race`` in every printed form -> what it is. Values of runs filed by
    ``except_filed_by`` are left out (that account may see its own runs)."""
    values: dict[str, str] = {}
    for result in RaceResult.objects.filter(race=race):
        for name in ("raw_score", "baseline", "delta"):
            for text in forms(getattr(result, name)):
                values[text] = f"{name} of {result.agent_version}"
    for standing in OverallStanding.objects.filter(race=race):
        for text in forms(standing.overall):
            values[text] = f"Overall of {standing.agent_version} as of race {race.number}"
    for run in RaceRun.objects.filter(race=race).select_related("submission"):
        if except_filed_by is None or run.submission.submitter_id != except_filed_by.pk:
            values.update(_run_values(run))
    return values


def _run_values(run) -> dict[str, str]:
    """One race run's raw values (its score and paid rewards) in every printed form -> what it is."""
    values: dict[str, str] = {}
    if run.score is not None:
        for text in forms(run.score):
            values[text] = f"score of race run {run.pk}"
    for outcome in RaceTaskOutcome.objects.filter(run=run):
        for text in forms(outcome.paid_reward):
            values[text] = f"paid reward of {outcome.task_id} in race run {run.pk}"
    return values


def shows_number(body: str, text: str) -> bool:
    """``text`` appears in ``body`` as a number of its own, not inside a longer one: a timestamp's
    seconds "…:50.437Z" must not count as the value 0.437."""
    return re.search(rf"(?<![\d.]){re.escape(text)}(?!\d)", body) is not None


def public_values() -> set[str]:
    """Values a released race legitimately shows (subtracted so a coincidence is no false alarm)."""
    shown: set[str] = set()
    for result in RaceResult.objects.filter(race__status="released"):
        for name in ("raw_score", "baseline", "delta"):
            shown |= forms(getattr(result, name))
    for standing in OverallStanding.objects.filter(race__status="released"):
        shown |= forms(standing.overall)
    for outcome in RaceTaskOutcome.objects.filter(run__race__status="released"):
        shown |= forms(outcome.paid_reward)
    return shown


def links(body: str, content_type: str) -> list[str]:
    if "json" in content_type:
        found: list[str] = []

        def walk(value) -> None:
            if isinstance(value, dict):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)
            elif isinstance(value, str) and value.startswith(("http://testserver/", "/")):
                found.append(value)

        try:
            walk(json.loads(body))
        except ValueError:
            return []
        return found
    return HREF.findall(body)


def walk(client, starts: list[str]) -> dict[str, str]:
    """Every page and API response reachable from ``starts``: {path: body}."""
    seen: dict[str, str] = {}
    queue = deque(starts)
    while queue and len(seen) < MAX_PAGES:
        url = queue.popleft()
        parts = urlsplit(url.replace("&amp;", "&"))
        if parts.netloc not in ("", "testserver"):
            continue
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        if path in seen or not parts.path.startswith("/") or parts.path.startswith(SKIP_PREFIXES):
            continue
        response = client.get(path)
        if response.status_code != 200 or response.get("Content-Type", "").startswith(("image/", "text/css")):
            seen[path] = ""
            continue
        # CSV downloads stream; the walk reads them too.
        content = b"".join(response.streaming_content) if response.streaming else response.content
        body = content.decode(errors="replace")
        seen[path] = body
        queue.extend(links(body, response.get("Content-Type", "")))
    return seen


def starts(world) -> list[str]:
    pages = [
        reverse("home"),
        reverse("race_overall", args=["shop-race"]),
        reverse("race_qualifying", args=["shop-race"]),
        reverse("my_submissions"),
        reverse("api_keys"),
        "/api/v1/",
        "/api/v1/submissions/",
    ]
    for number in (1, 2):
        pages += [
            reverse("race_detail", args=["shop-race", number]),
            reverse("race_leaderboard", args=["shop-race", number]),
        ]
    pages += [reverse("race_agent_version", args=["shop-race", slug, "1"]) for slug in ("alpha", "beta")]
    addresses = RaceRun.objects.values_list("public_id", flat=True)
    pages += [reverse("race_run_detail", args=[address]) for address in addresses]
    return pages


def assert_nothing_raw_leaks(client, world, *, viewer=None) -> int:
    forbidden = raw_values(world["race"], except_filed_by=viewer)
    forbidden = {text: what for text, what in forbidden.items() if text not in public_values()}
    assert any("raw_score" in what for what in forbidden.values())
    assert any("paid reward" in what for what in forbidden.values())
    pages = walk(client, starts(world))
    leaks = [
        f"{path} shows {text} ({what})"
        for path, body in pages.items()
        for text, what in forbidden.items()
        if shows_number(body, text)
    ]
    assert leaks == []
    return len([body for body in pages.values() if body])


@pytest.fixture
def urls_exist(world):
    """Every start URL is a real page for an anonymous visitor or redirects to sign in (a typo
    would make the walk vacuous)."""
    from django.test import Client

    for url in starts(world):
        assert Client().get(url).status_code in (200, 302, 401, 403), url


@pytest.fixture
def staff_user(make_user):
    user = make_user("race-staff")
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return staff_grant(user)  # a maintainer: every staff-write permission


def test_an_anonymous_visitor_sees_no_raw_value_of_a_running_race(client, world, urls_exist) -> None:
    assert assert_nothing_raw_leaks(client, world) > 10


def test_an_unrelated_account_sees_no_raw_value_of_a_running_race(client, world, urls_exist) -> None:
    client.force_login(world["stranger"])
    assert_nothing_raw_leaks(client, world)


def test_the_entrant_sees_no_raw_value_of_its_own_agents_running_race(client, world, urls_exist) -> None:
    client.force_login(world["entrant"])
    assert_nothing_raw_leaks(client, world)


@pytest.mark.parametrize("which", [0, 1])
def test_a_validators_account_sees_its_own_runs_but_no_other_raw_value(client, world, urls_exist, which) -> None:
    filer = world["filers"][which]
    client.force_login(filer)
    assert_nothing_raw_leaks(client, world, viewer=filer)
    own = RaceRun.objects.filter(race=world["race"], submission__submitter=filer).first()
    body = client.get(reverse("race_run_detail", args=[own.public_id])).content.decode()
    assert f"{own.score:.3f}" in body


def test_nothing_raw_leaks_during_the_reveal_embargo_either(client, world, urls_exist) -> None:
    lifecycle.race_close(race=world["race"])
    client.force_login(world["stranger"])
    assert_nothing_raw_leaks(client, world)


def test_staff_see_the_running_races_values(client, world, staff_user) -> None:
    client.force_login(staff_user)
    result = RaceResult.objects.filter(race=world["race"]).order_by("rank").first()
    leaderboard = client.get(reverse("race_leaderboard", args=["shop-race", 2])).content.decode()
    assert f"{result.raw_score:.3f}" in leaderboard
    body = client.get(reverse("race_detail", args=["shop-race", 2])).content.decode()
    assert f"{result.baseline:.3f}" in body and "Staff view" in body


def test_once_released_the_walk_finds_the_values(client, world) -> None:
    """The walk is not blind: after the release the same pages show the raw values."""
    lifecycle.race_close(race=world["race"])
    lifecycle.race_release(race=world["race"])
    result = RaceResult.objects.filter(race=world["race"]).order_by("rank").last()
    assert result.delta < 0
    pages = walk(client, starts(world))
    assert any(f"{result.raw_score:.3f}" in body for body in pages.values())
    assert any(f"\u2212{abs(result.delta):.3f}" in body for body in pages.values())
    outcome = RaceTaskOutcome.objects.filter(run__race=world["race"]).first()
    assert any(f"{outcome.paid_reward:.3f}" in body for body in pages.values())
