"""Pages of race benchmarks (seed 002).

Views only parse the URL and delegate to leaderboard.selectors.race; the
embargo of race failure categories is enforced there, not in templates.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_safe

from leaderboard.selectors import race as race_selectors
from leaderboard.selectors.board_signals import qualifying_signals, race_signals
from leaderboard.selectors.visibility import viewer_is_staff

STATUS_NOTES = {
    "scheduled": "Scheduled: the race has not started.",
    "running": "Running: validator runs land as they are reported; results are under embargo until release.",
    "embargoed": "Reveal embargo: the race has finished; its results and episode feedback are withheld until release.",
    "released": "Released: the results and every episode's failure category are public.",
}


def _race_context(request: HttpRequest, benchmark_slug: str) -> dict:
    benchmark = race_selectors.race_benchmark_get(benchmark_slug=benchmark_slug, user=request.user)
    return {"benchmark": benchmark, "races": race_selectors.races_of(benchmark=benchmark)}


@require_safe
def race_benchmark(request: HttpRequest, benchmark: str) -> HttpResponse:
    return redirect("race_overall", benchmark=benchmark)


EMBARGO_VALUES_NOTE = (
    "Raw scores, ranks, the field baseline and vs Field of this race are under embargo until the race is released."
)


@require_safe
def race_overall(request: HttpRequest, benchmark: str) -> HttpResponse:
    """Leaderboard -> Overall. The view follows the running race (status, who has runs landed)
    while the standings shown are those as of the latest race whose results are public: an
    Overall that folds in a running or embargoed race would give its deltas away (docs/scoring.md)."""
    context = _race_context(request, benchmark)
    live = race_selectors.race_anchor(benchmark=context["benchmark"])
    anchor = race_selectors.race_overall_anchor(benchmark=context["benchmark"], user=request.user)
    rows = race_selectors.overall_board(race=anchor) if anchor is not None else []
    pending = live if live is not None and (anchor is None or live.pk != anchor.pk) else None
    context.update(
        {
            "anchor": anchor,
            "live": live,
            "pending": pending,
            "pending_entries": race_selectors.race_live_entries(race=pending, user=request.user)
            if pending is not None
            else [],
            "rows": rows,
            "status_note": STATUS_NOTES.get(anchor.status, "") if anchor else "",
            "staff_view": viewer_is_staff(request.user),
        }
    )
    context["signals"] = race_signals(race=anchor, user=request.user)
    return render(request, "races/overall.html", context)


@require_safe
def race_leaderboard(request: HttpRequest, benchmark: str, number: int) -> HttpResponse:
    """Leaderboard -> Race: one race's raw results (staff only until the race is released)."""
    context = _race_context(request, benchmark)
    race = race_selectors.race_get(benchmark=context["benchmark"], number=number)
    visible = race_selectors.race_values_visible(race, request.user)
    context.update(
        {
            "race": race,
            "results": race_selectors.race_results(race=race) if visible else [],
            "values_visible": visible,
            "embargo_note": "" if race.status == race.Status.RELEASED else EMBARGO_VALUES_NOTE,
            "status_note": STATUS_NOTES[race.status],
        }
    )
    context["signals"] = race_signals(race=race, user=request.user)
    return render(request, "races/leaderboard_race.html", context)


@require_safe
def race_detail(request: HttpRequest, benchmark: str, number: int) -> HttpResponse:
    """The race page: each qualifier's raw score and vs Field, and every validator run
    (values only once released, or for staff; a run's score also for the account that filed it)."""
    context = _race_context(request, benchmark)
    race = race_selectors.race_get(benchmark=context["benchmark"], number=number)
    visible = race_selectors.race_values_visible(race, request.user)
    runs = race_selectors.race_runs_of(race=race, user=request.user)
    for run in runs:
        run.score_visible = race_selectors.race_run_values_visible(run, request.user)  # type: ignore[attr-defined]
    context.update(
        {
            "race": race,
            "results": race_selectors.race_results(race=race) if visible else [],
            "baseline": race_selectors.race_baseline(race=race) if visible else None,
            "values_visible": visible,
            "embargo_note": "" if race.status == race.Status.RELEASED else EMBARGO_VALUES_NOTE,
            "runs": runs,
            "status_note": STATUS_NOTES[race.status],
            "released": race.status == race.Status.RELEASED,
        }
    )
    context["signals"] = race_signals(race=race, user=request.user)
    return render(request, "races/race.html", context)


@require_safe
def race_qualifying(request: HttpRequest, benchmark: str) -> HttpResponse:
    context = _race_context(request, benchmark)
    release = race_selectors.qualifying_release(benchmark=context["benchmark"])
    context.update(
        {"release": release, "rows": race_selectors.qualifying_board(release=release) if release is not None else []}
    )
    context["signals"] = qualifying_signals(release=release)
    return render(request, "races/qualifying.html", context)


@require_safe
def race_agent_version(request: HttpRequest, benchmark: str, agent: str, version: str) -> HttpResponse:
    context = _race_context(request, benchmark)
    agent_version = race_selectors.agent_version_get(
        benchmark=context["benchmark"], agent_slug=agent, version=version, user=request.user
    )
    context.update(
        {
            "agent_version": agent_version,
            "buildup": race_selectors.agent_version_buildup(
                benchmark=context["benchmark"], agent_version=agent_version, user=request.user
            ),
        }
    )
    return render(request, "races/agent_version.html", context)


@require_safe
def race_run_detail(request: HttpRequest, public_id: str) -> HttpResponse:
    run = race_selectors.race_run_get(public_id=public_id, user=request.user)
    benchmark = run.release.benchmark
    context = {
        "benchmark": benchmark,
        "races": race_selectors.races_of(benchmark=benchmark),
        "run": run,
        "outcomes": race_selectors.race_outcomes_visible(run, request.user),
        "categories_visible": race_selectors.race_categories_visible(run.race),
        "values_visible": race_selectors.race_run_values_visible(run, request.user),
    }
    return render(request, "races/run.html", context)
