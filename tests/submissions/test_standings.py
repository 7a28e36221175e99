"""leaderboard.services.paper_gap_standings (owned by the worker: it is called when a run is verified)."""

import itertools

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.models import Agent, AgentVersion, Release, Run, Standing
from leaderboard.selectors.standing_ranks import with_rank
from leaderboard.services.paper_gap_standings import standings_refresh
from submissions.models import Submission

_counter = itertools.count()


@pytest.fixture
def release(make_release):
    return make_release(["pick:reproduction", "place:open"])


@pytest.fixture
def make_run(owner, release):
    def make(agent: str, version: str = "1", *, overall=0.5, reproduction=0.5, open=0.5, pass_rate=0.9, **extra):
        n = next(_counter)
        submission = Submission.objects.create(
            submitter=owner, sha256=f"{n:064x}", size=1, file=f"bundles/{n}.age", status="done", verdict="validated"
        )
        agent_row, _ = Agent.objects.get_or_create(slug=agent, defaults={"name": agent.title()})
        agent_version, _ = AgentVersion.objects.get_or_create(agent=agent_row, version=version)
        fields = {
            "level": "validated",
            "covered": 2,
            "required": 2,
            "complete": True,
            "confidence": {"overall": [0.4, 0.6]},
            **extra,
        }
        linked = Run.objects.create(
            release=release,
            agent_version=agent_version,
            overall=overall,
            reproduction=reproduction,
            open=open,
            pass_rate=pass_rate,
            **fields,
        )
        submission.run = linked
        submission.save(update_fields=["run"])
        return linked

    return make


def ranked(release, **filters):
    """The release's Standing rows with their rank, as every reader computes it."""
    return with_rank(Standing.objects.filter(release=release, **filters), whole_tab=True)


def rows(release, tab="overall"):
    return list(ranked(release, tab=tab).order_by("rank").values_list("rank", "agent_slug", "version", "score"))


@pytest.mark.django_db
def test_it_ranks_by_score_then_pass_rate_then_who_was_verified_first(release, make_run):
    make_run("early", overall=0.8, pass_rate=0.9)
    make_run("late", overall=0.8, pass_rate=0.9)
    make_run("best", overall=1.2, pass_rate=0.1)
    make_run("steady", overall=0.8, pass_rate=1.0)
    standings_refresh(release=release)
    assert rows(release) == [
        (1, "best", "1", 1.2),
        (2, "steady", "1", 0.8),
        (3, "early", "1", 0.8),
        (4, "late", "1", 0.8),
    ]


@pytest.mark.django_db
def test_each_agent_version_shows_once_with_its_best_run(release, make_run):
    make_run("alpha", "1", overall=0.4)
    best = make_run("alpha", "1", overall=0.9)
    make_run("alpha", "2", overall=0.6)
    standings_refresh(release=release)
    assert rows(release) == [(1, "alpha", "1", 0.9), (2, "alpha", "2", 0.6)]
    assert ranked(release, tab="overall").get(rank=1).run_id == best.pk


@pytest.mark.django_db
def test_a_complete_run_ranks_above_a_higher_scoring_partial_one(release, make_run):
    make_run("partial", overall=1.5, covered=1, complete=False)
    make_run("complete", overall=0.7)
    standings_refresh(release=release)
    assert rows(release) == [(1, "complete", "1", 0.7), (2, "partial", "1", 1.5)]


@pytest.mark.django_db
def test_private_runs_and_runs_below_validated_never_enter_the_board(release, make_run):
    make_run("public")
    make_run("secret", is_private=True)
    hidden = make_run("hidden-submission")
    Submission.objects.filter(pk=hidden.submission.pk).update(is_private=True)
    standings_refresh(release=release)
    assert [row[1] for row in rows(release)] == ["public"]


@pytest.mark.django_db
def test_tabs_take_their_genre_score_and_skip_runs_without_that_genre(release, make_run):
    make_run("both", overall=0.6, reproduction=0.9, open=0.3)
    make_run("open-only", overall=0.5, reproduction=None, open=0.5)
    standings_refresh(release=release)
    assert rows(release, "reproduction") == [(1, "both", "1", 0.9)]
    assert rows(release, "open") == [(1, "open-only", "1", 0.5), (2, "both", "1", 0.3)]


@pytest.mark.django_db
def test_it_copies_intervals_verification_and_tokens(release, make_run):
    make_run("alpha", level="attested", tokens_in=100, tokens_out=20, runtime_seconds=5.0, effort_tier="high")
    standings_refresh(release=release)
    row = Standing.objects.get(release=release, tab="overall")
    assert (row.ci_low, row.ci_high, row.verification, row.tokens, row.runtime_seconds, row.effort_tier) == (
        0.4,
        0.6,
        "attested",
        120,
        5.0,
        "high",
    )
    assert Standing.objects.get(release=release, tab="open").ci_low is None


@pytest.mark.django_db
def test_a_refresh_rewrites_rows_and_bumps_the_generation(release, make_run):
    make_run("alpha")
    standings_refresh(release=release)
    standings_refresh(release=release)
    assert Standing.objects.filter(release=release).count() == 3
    assert Release.objects.get(pk=release.pk).generation == 2
    assert release.generation == 2


@pytest.mark.django_db
def test_the_number_of_queries_does_not_grow_with_the_number_of_runs(release, make_run):
    make_run("a")
    with CaptureQueriesContext(connection) as few:
        standings_refresh(release=release)
    for index in range(10):
        make_run(f"agent-{index}")
    with CaptureQueriesContext(connection) as many:
        standings_refresh(release=release)
    assert len(many) == len(few)
    assert Standing.objects.filter(release=release, tab="overall").count() == 11


@pytest.mark.django_db
def test_each_tab_takes_the_versions_best_run_in_that_tab_even_when_another_run_leads_elsewhere(release, make_run):
    leads_overall = make_run("alpha", overall=0.9, reproduction=None, open=0.2)
    leads_reproduction = make_run("alpha", overall=0.5, reproduction=0.8, open=0.1)
    leads_open = make_run("alpha", overall=0.4, reproduction=0.3, open=0.7)
    standings_refresh(release=release)
    assert {
        tab: list(Standing.objects.filter(release=release, tab=tab).values_list("run_id", "score"))
        for tab in ("overall", "reproduction", "open")
    } == {
        "overall": [(leads_overall.pk, 0.9)],
        "reproduction": [(leads_reproduction.pk, 0.8)],
        "open": [(leads_open.pk, 0.7)],
    }


@pytest.mark.django_db
def test_a_refresh_costs_five_queries(release, make_run):
    make_run("alpha")
    make_run("beta", reproduction=None)
    with CaptureQueriesContext(connection) as queries:
        standings_refresh(release=release)
    # lock the release and read which tabs have a withheld anchor (published at display
    # precision), bump the generation, the three tabs' best runs at once, delete, insert
    assert [query["sql"].split()[0] for query in queries.captured_queries] == [
        "SELECT", "UPDATE", "SELECT", "DELETE", "INSERT"
    ]  # fmt: skip


def board(release) -> list[tuple]:
    """Every row of every tab, as a page would show it (rank, run and every displayed column)."""
    return list(
        ranked(release)
        .order_by("tab", "rank")
        .values_list(
            "tab", "rank", "run_id", "agent_version_id", "score", "ci_low", "ci_high", "pass_rate", "complete",
            "verification", "agent_name", "version", "tokens",
        )
    )  # fmt: skip


def rebuilt(release) -> list[tuple]:
    """The board the full rebuild writes from the same runs (the repair path); leaves it rebuilt."""
    standings_refresh(release=release)
    return board(release)


@pytest.mark.django_db
def test_updating_one_version_at_a_time_lands_on_the_board_the_full_rebuild_writes(release, make_run):
    import random

    from leaderboard.services.paper_gap_standings import standings_update_version

    rng = random.Random(5)
    for step in range(60):
        agent = f"agent-{rng.randrange(12)}"
        choice = rng.random()
        run = make_run(
            agent,
            str(rng.randrange(2)),
            overall=rng.choice([0.5, 0.8, 1.1, rng.random()]),
            reproduction=None if choice < 0.15 else rng.random(),
            open=rng.random(),
            pass_rate=None if choice > 0.9 else rng.choice([0.5, 0.9, rng.random()]),
            complete=rng.random() > 0.2,
            level=rng.choice(["validated", "attested", "mismatch"]),
            is_private=rng.random() < 0.1,
        )
        if step % 7 == 3:  # an interval arrives, or an attestation, for an earlier run
            earlier = Run.objects.order_by("?").first()
            Run.objects.filter(pk=earlier.pk).update(
                confidence={"overall": [0.1, 0.9]}, level="verified" if step % 2 else earlier.level
            )
            standings_update_version(release=release, agent_version_id=earlier.agent_version_id)
        standings_update_version(release=release, agent_version_id=run.agent_version_id)
        incremental = board(release)
        assert incremental == rebuilt(release), f"step {step}"


@pytest.mark.django_db
def test_a_run_that_changes_nothing_shown_writes_nothing_and_keeps_cached_pages(release, make_run):
    from leaderboard.services.paper_gap_standings import standings_update_version

    best = make_run("alpha", overall=0.9)
    standings_update_version(release=release, agent_version_id=best.agent_version_id)
    generation = Release.objects.get(pk=release.pk).generation
    worse = make_run("alpha", overall=0.3, reproduction=0.3, open=0.3)
    assert standings_update_version(release=release, agent_version_id=worse.agent_version_id) == 0
    assert Release.objects.get(pk=release.pk).generation == generation


@pytest.mark.django_db
def test_a_new_best_writes_only_its_own_row_and_the_ranks_below_it_move(release, make_run):
    from leaderboard.services.paper_gap_standings import standings_update_version

    runs = [make_run(f"a{i}", overall=1.0 - i / 10) for i in range(6)]  # ranks 1..6 in order
    standings_refresh(release=release)
    stored_before = {row.pk: row for row in Standing.objects.filter(release=release)}
    better = make_run("a4", overall=0.95)  # a4 moves from 5th to 2nd
    with CaptureQueriesContext(connection) as queries:
        standings_update_version(release=release, agent_version_id=better.agent_version_id)
    after = dict(ranked(release, tab="overall").values_list("run_id", "rank"))
    assert after[better.pk] == 2
    assert [after[run.pk] for run in runs if run.pk != runs[4].pk] == [1, 3, 4, 5, 6]
    # No rank is stored: the rows whose rank moved are not written; only a4's own rows are.
    changed = {
        row.pk
        for row in Standing.objects.filter(release=release)
        if row.pk not in stored_before
        or any(
            getattr(row, f.attname) != getattr(stored_before[row.pk], f.attname) for f in Standing._meta.concrete_fields
        )
    }
    assert changed == set(Standing.objects.filter(run=better).values_list("pk", flat=True))
    writes = [
        q["sql"] for q in queries if q["sql"].startswith(("UPDATE", "INSERT", "DELETE")) and "standing" in q["sql"]
    ]
    assert len(writes) <= 3  # at most one statement per tab
    # A constant number of statements: lock, the version's runs, its rows, then per tab at most
    # one write, and the generation bump.
    assert len(queries) <= 3 + 3 + 1


@pytest.mark.django_db
def test_the_rebuild_command_repairs_a_damaged_board(release, make_run):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    from leaderboard.services.paper_gap_standings import standings_update_version

    for i, score in enumerate([0.9, 0.7, 0.8]):
        run = make_run(f"agent-{i}", overall=score)
        standings_update_version(release=release, agent_version_id=run.agent_version_id)
    good = board(release)
    ranked(release, tab="overall").get(rank=1).delete()  # a damaged board
    Standing.objects.filter(release=release, tab="open").update(score=7)
    out = StringIO()
    call_command("rebuild_standings", "--benchmark", release.benchmark.slug, stdout=out)
    assert board(release) == good
    assert out.getvalue() == f"{release.benchmark.slug} {release.version}: {len(good)} standing rows\n"
    with pytest.raises(CommandError, match="no benchmark has this slug"):
        call_command("rebuild_standings", "--benchmark", "no-such-benchmark")


@pytest.mark.django_db
def test_a_rank_counted_for_a_filtered_view_is_the_rank_the_whole_tab_gives(release, make_run):
    import random

    from leaderboard.selectors.standing_ranks import rank_by_count

    rng = random.Random(3)
    for i in range(24):  # ties on score and pass rate, missing pass rates, partial runs
        make_run(
            f"agent-{i}",
            overall=rng.choice([0.5, 0.7, 0.9]),
            pass_rate=rng.choice([None, 0.5, 0.8]),
            complete=rng.random() < 0.7,
        )
    standings_refresh(release=release)
    for tab in ("overall", "reproduction", "open"):
        by_window = dict(ranked(release, tab=tab).values_list("run_id", "rank"))
        by_count = dict(
            Standing.objects.filter(release=release, tab=tab)
            .annotate(rank=rank_by_count())
            .values_list("run_id", "rank")
        )
        assert sorted(by_window.values()) == list(range(1, 25))
        assert by_count == by_window
    # Filtered: each kept row still shows its rank in the whole tab.
    kept = with_rank(Standing.objects.filter(release=release, tab="overall", agent_slug__endswith="3"), whole_tab=False)
    assert dict(kept.values_list("run_id", "rank")) == {
        run_id: rank
        for run_id, rank in ranked(release, tab="overall").values_list("run_id", "rank")
        if Standing.objects.get(release=release, tab="overall", run_id=run_id).agent_slug.endswith("3")
    }


@pytest.mark.django_db
def test_an_interval_lands_on_its_rows_rounded_where_the_tab_withholds_an_anchor_in_three_statements(
    make_release, owner
):
    """standings_set_interval: the release lock and the withheld tabs in one statement, then one
    UPDATE of the run's rows, then the generation bump. The reproduction tab withholds an
    anchor, so its bounds (and the Overall tab's) are stored at display precision, as a full
    rebuild stores them; the Open tab's are stored whole."""
    from leaderboard.services.paper_gap_standings import standings_set_interval, standings_update_version

    release = make_release(["pick:reproduction", "place:open"], withheld=frozenset({"pick"}))
    run = Run.objects.create(
        release=release,
        agent_version=AgentVersion.objects.create(agent=Agent.objects.create(slug="alpha", name="Alpha"), version="1"),
        overall=0.5,
        reproduction=0.5,
        open=0.5,
        pass_rate=0.9,
        level="validated",
        covered=2,
        required=2,
        complete=True,
    )
    Submission.objects.create(
        submitter=owner, sha256="f" * 64, size=1, file="bundles/f.age", status="done", verdict="validated", run=run
    )
    standings_update_version(release=release, agent_version_id=run.agent_version_id)
    bounds = [0.123456, 0.654321]
    Run.objects.filter(pk=run.pk).update(confidence=dict.fromkeys(("overall", "reproduction", "open"), bounds))
    run.refresh_from_db()
    with CaptureQueriesContext(connection) as queries:
        assert standings_set_interval(release=release, run=run) == 3
    statements = [query["sql"] for query in queries.captured_queries]
    assert [sql.split()[0] for sql in statements] == ["SELECT", "UPDATE", "UPDATE"]
    assert "leaderboard_releasetask" in statements[0]
    if connection.features.has_select_for_update:
        assert "FOR UPDATE" in statements[0]
    stored = dict(Standing.objects.filter(release=release).values_list("tab", "ci_low"))
    assert stored == {"overall": 0.12, "reproduction": 0.12, "open": 0.123456}
    standings_refresh(release=release)  # the repair path stores the same bounds
    assert dict(Standing.objects.filter(release=release).values_list("tab", "ci_low")) == stored
