"""Race lifecycle through the admin: every step goes through leaderboard.services.races."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.urls import reverse

from leaderboard.models import Race
from leaderboard.services.races import race_close, race_schedule, race_start


def staff_client(client):
    admin_user = get_user_model().objects.create_superuser("boss", "boss@example.org", "a-long-test-password-123")
    client.force_login(admin_user)
    return client


def test_an_admin_schedules_a_race_with_its_hidden_task_set(client, race_benchmark, race_release):
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_add"),
        {
            "benchmark": race_benchmark.pk,
            "release": race_release.pk,
            "number": 3,
            "name": "Week 3",
            "challenge_margin": "0.05",
            "task_ids_text": "t-1\nt-2\nt-3\n",
        },
    )
    assert response.status_code == 302
    race = Race.objects.get()
    assert (race.number, race.status, race.task_ids, race.challenge_margin) == (
        3,
        "scheduled",
        ["t-1", "t-2", "t-3"],
        0.05,
    )


def test_a_repeated_hidden_task_is_refused_by_the_schedule_form(client, race_benchmark):
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_add"),
        {"benchmark": race_benchmark.pk, "number": 1, "challenge_margin": "0.02", "task_ids_text": "t-1\nt-1"},
    )
    assert response.status_code == 200
    assert "a task id is listed twice" in response.content.decode()
    assert not Race.objects.exists()


def test_a_task_id_holding_a_nul_escape_is_refused_by_the_schedule_form_not_a_500(client, race_benchmark):
    # A JSON list's "\u0000" escape is no raw NUL (the middleware's rule), but PostgreSQL
    # refuses it in the race's task list all the same.
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_add"),
        {
            "benchmark": race_benchmark.pk,
            "number": 1,
            "challenge_margin": "0.02",
            "task_ids_text": '["t-1", "t\\u0000"]',
        },
    )
    assert response.status_code == 200
    assert "task id 2 holds a NUL character (U+0000), which no text can hold" in response.content.decode()
    assert not Race.objects.exists()


def test_the_release_action_releases_an_embargoed_race(client, race_benchmark):
    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=["t-1"])
    race_start(race=race)
    race_close(race=race)
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_changelist"), {"action": "release_races", "_selected_action": [race.pk]}
    )
    assert response.status_code == 302
    race.refresh_from_db()
    assert race.status == "released"
    assert race.released_at is not None


def test_the_release_action_refuses_a_running_race_and_says_why(client, race_benchmark):
    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=["t-1"])
    race_start(race=race)
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_changelist"),
        {"action": "release_races", "_selected_action": [race.pk]},
        follow=True,
    )
    # The admin capitalizes the first letter of a message.
    assert "Shop-race race 1 is running; only an embargoed race can be released" in response.content.decode()
    race.refresh_from_db()
    assert race.status == "running"


def test_the_start_action_starts_one_race_of_a_benchmark_and_refuses_a_second_saying_why(client, race_benchmark):
    first = race_schedule(benchmark=race_benchmark, number=1, task_ids=["t-1"])
    second = race_schedule(benchmark=race_benchmark, number=2, task_ids=["t-2"])
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_changelist"),
        {"action": "start_races", "_selected_action": [first.pk, second.pk]},
        follow=True,
    )
    page = response.content.decode()
    # The admin capitalizes the first letter of a message.
    assert "Shop-race race 1: started" in page
    assert (
        "Shop-race race 2 cannot start while race 1 of shop-race is running; close race 1 first "
        "(a benchmark runs one race at a time: the one its Overall view anchors to)"
    ) in page
    assert list(Race.objects.order_by("number").values_list("number", "status")) == [(1, "running"), (2, "scheduled")]


def test_a_task_list_nested_past_the_json_parsers_limit_is_a_form_error_not_a_500(client, race_benchmark):
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_add"),
        {"benchmark": race_benchmark.pk, "number": 1, "challenge_margin": "0.02", "task_ids_text": "[" * 100_000},
    )
    assert response.status_code == 200
    assert "not a JSON list of task ids: nested too deeply to read" in response.content.decode()
    assert not Race.objects.exists()


def test_a_race_pinned_to_another_race_benchmarks_release_is_refused_by_form_and_service(
    client, race_benchmark, race_release
):
    import pytest

    from leaderboard.models import Benchmark, Release
    from leaderboard.services.races import RaceTransitionError

    other = Benchmark.objects.create(slug="other-race", name="Other race", scheme=Benchmark.Scheme.RACE)
    foreign = Release.objects.create(
        benchmark=other, version="o1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64, published=True
    )
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_add"),
        {"benchmark": race_benchmark.pk, "release": foreign.pk, "number": 7, "challenge_margin": "0.02",
         "task_ids_text": "t-1"},
    )  # fmt: skip
    assert response.status_code == 200
    assert "release o1 belongs to other-race, not shop-race" in response.content.decode()
    with pytest.raises(RaceTransitionError) as refused:
        race_schedule(benchmark=race_benchmark, number=7, task_ids=["t-1"], release=foreign)
    assert refused.value.code == "race_release_mismatch"
    assert not Race.objects.exists()


def test_a_hidden_set_holding_a_public_qualifying_task_is_refused_by_form_and_service(
    client, race_benchmark, race_release
):
    """Seed 002: a race's hidden set is separate; a qualifying task is public from the start
    (outside review: a race page called a set "hidden" that qualifying run pages listed)."""
    import pytest

    from leaderboard.services.races import RaceTransitionError

    response = staff_client(client).post(
        reverse("admin:leaderboard_race_add"),
        {"benchmark": race_benchmark.pk, "number": 1, "challenge_margin": "0.02", "task_ids_text": "t-1\nq03\nq01"},
    )
    assert response.status_code == 200
    assert "tasks &#x27;q01&#x27;, &#x27;q03&#x27; are in the qualifying set of release q1" in (
        response.content.decode()
    )
    with pytest.raises(RaceTransitionError) as refused:
        race_schedule(benchmark=race_benchmark, number=1, task_ids=["t-1", "q03"])
    assert refused.value.code == "race_task_set_public"
    assert not Race.objects.exists()


def test_a_race_whose_task_became_public_after_its_schedule_does_not_start(race_benchmark, race_release):
    import pytest

    from leaderboard.services.races import RaceTransitionError

    race = race_schedule(benchmark=race_benchmark, number=1, task_ids=["t-1", "t-2"])
    race_release.qualifying_task_ids = [*race_release.qualifying_task_ids, "t-2"]  # a later manifest sync
    race_release.save(update_fields=["qualifying_task_ids"])
    with pytest.raises(RaceTransitionError) as refused:
        race_start(race=race)
    assert refused.value.code == "race_task_set_public"
    race.refresh_from_db()
    assert race.status == "scheduled"


def test_the_admin_schedules_a_race_reusing_another_races_tasks_and_warns(client, race_benchmark, race_release):
    race_schedule(benchmark=race_benchmark, number=1, task_ids=["t-1", "t-2"])
    response = staff_client(client).post(
        reverse("admin:leaderboard_race_add"),
        {"benchmark": race_benchmark.pk, "number": 2, "challenge_margin": "0.02", "task_ids_text": "t-2\nt-9"},
        follow=True,
    )
    assert response.status_code == 200
    assert "task &#x27;t-2&#x27; is in the task set of race 1 too" in response.content.decode()
    assert Race.objects.get(number=2).task_ids == ["t-2", "t-9"]
