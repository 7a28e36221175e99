"""Visitor pages of a paper-gap release: what each page shows."""

from __future__ import annotations

import re

import pytest
from django.templatetags.static import static
from django.urls import reverse

from leaderboard.models import Standing
from tests.website.conftest import make_release, make_run, make_task, make_user

BOARD = reverse("release_board", args=["ale-robotics", "v0.5"])


def rows_of(html: str) -> list[str]:
    body = html.split('<table class="data board"', 1)[1].split("</tbody>", 1)[0]
    return re.findall(r'<th scope="row" class="agent"><a href="[^"]+">([^<]+)</a>', body)


def test_home_lists_each_benchmark_with_its_current_release_leader_and_run_count(client, board):
    html = client.get(reverse("home")).content.decode()
    assert "ALE Robotics" in html
    assert f'href="{BOARD}"' in html
    assert "Alpha 1.0" in html
    assert "<dt>Ranked entries</dt><dd>3</dd>" in html


def test_the_benchmark_address_redirects_to_its_newest_release(client, benchmark):
    make_release(benchmark, "v0.4", tasks=[("grasp", "reproduction", 0.5, True)])
    make_release(benchmark, "v0.5")
    response = client.get(reverse("benchmark_detail", args=["ale-robotics"]))
    assert response.status_code == 302
    assert response["Location"] == BOARD


def test_the_overall_tab_lists_rows_by_rank_with_scores_as_ratios(client, board):
    html = client.get(BOARD).content.decode()
    assert rows_of(html) == ["Alpha", "Bravo", "Charlie"]
    assert "<strong>1.12</strong>" in html
    assert "<strong>0.83</strong>" in html
    assert "112%" not in html and "83%" not in html
    assert "99%" in html  # pass rates may be percentages


def test_the_board_labels_runtime_and_tokens_submitter_reported_and_effort_submitter_declared(client, board):
    html = client.get(BOARD).content.decode()
    assert html.count('<span class="th-note">submitter-reported</span>') == 2
    assert "harness-recorded" not in html
    assert '<span class="th-note">submitter-declared</span>' in html
    assert "a consistency check, not proof that the runner was unmodified" in html


def test_an_incomplete_run_is_marked_not_comparable_to_a_full_run(client, board):
    html = client.get(BOARD).content.decode()
    assert '2/4<span class="tag tag--warn">not comparable to a full run: ranked after complete runs</span>' in html
    assert html.count("ranked after complete runs</span>") == 1


def test_a_row_whose_interval_overlaps_the_row_above_is_flagged(client, board):
    # Alpha 1.07-1.17, Bravo 0.53-1.13 (overlaps Alpha), Charlie 0.49-0.59 (overlaps Bravo).
    html = client.get(BOARD).content.decode()
    flags = re.findall(r'<td class="num rank">(\d+)( <abbr class="tie")?', html)
    assert flags == [("1", ""), ("2", ' <abbr class="tie"'), ("3", ' <abbr class="tie"')]


def test_a_genre_tab_shows_only_runs_with_rows_on_that_tab(client, release):
    make_run(release, agent_name="Both Genres")
    make_run(release, agent_name="Open Only", tabs=("overall", "open"))
    assert rows_of(client.get(BOARD, {"tab": "reproduction"}).content.decode()) == ["Both Genres"]
    assert rows_of(client.get(BOARD, {"tab": "open"}).content.decode()) == ["Both Genres", "Open Only"]


def test_tabs_are_links_that_keep_the_sort_and_filter_and_mark_the_current_one(client, board):
    html = client.get(BOARD, {"tab": "open", "sort": "pass_rate", "complete": "1"}).content.decode()
    assert '<a class="tabs__tab" href="?tab=open&amp;sort=pass_rate&amp;complete=1" aria-current="page">' in html
    assert '<a class="tabs__tab" href="?sort=pass_rate&amp;complete=1">Overall</a>' in html


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"sort": "score", "dir": "asc"}, ["Charlie", "Bravo", "Alpha"]),
        ({"sort": "pass_rate"}, ["Alpha", "Bravo", "Charlie"]),
        ({"sort": "coverage", "dir": "asc"}, ["Charlie", "Alpha", "Bravo"]),
        ({"sort": "agent", "dir": "desc"}, ["Charlie", "Bravo", "Alpha"]),
        ({"sort": "rank", "dir": "desc"}, ["Charlie", "Bravo", "Alpha"]),
    ],
)
def test_the_board_sorts_by_the_column_in_the_querystring(client, board, params, expected):
    assert rows_of(client.get(BOARD, params).content.decode()) == expected


def test_the_verification_column_sorts_by_strength_strongest_first_not_by_the_levels_names(client, release):
    # As text, "attested" < "validated" < "verified": an ascending sort put attested first.
    make_run(release, agent_name="Alpha", level="attested")
    make_run(release, agent_name="Bravo", level="verified")
    make_run(release, agent_name="Charlie", level="validated")
    assert rows_of(client.get(BOARD, {"sort": "verification"}).content.decode()) == ["Bravo", "Alpha", "Charlie"]
    assert rows_of(client.get(BOARD, {"sort": "verification", "dir": "asc"}).content.decode()) == [
        "Charlie",
        "Alpha",
        "Bravo",
    ]


def test_the_sorted_column_header_says_so_to_screen_readers(client, board):
    html = client.get(BOARD, {"sort": "score"}).content.decode()
    assert '<th scope="col" aria-sort="descending" class="col-score">' in html
    assert html.count("aria-sort=") == 1


def test_complete_coverage_only_hides_partial_runs(client, board):
    assert rows_of(client.get(BOARD, {"complete": "1"}).content.decode()) == ["Alpha", "Bravo"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (
            {"tab": "closed"},
            "tab=&#x27;closed&#x27; is not a leaderboard tab: expected one of overall, reproduction, open",
        ),
        ({"sort": "secret"}, "sort=&#x27;secret&#x27; is not a sortable column"),
        ({"dir": "up"}, "dir=&#x27;up&#x27;: expected &#x27;asc&#x27; or &#x27;desc&#x27;"),
        ({"page": "0"}, "page=&#x27;0&#x27;: expected a positive whole number"),
    ],
)
def test_a_bad_querystring_value_gets_a_400_naming_it(client, board, params, message):
    response = client.get(BOARD, params)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_the_board_paginates_fifty_rows_a_page(client, release):
    for i in range(55):
        make_run(release, agent_name=f"Agent {i:02d}", score=1.0 - i / 100, tabs=("overall",))
    first = client.get(BOARD).content.decode()
    second = client.get(BOARD, {"page": "2"}).content.decode()
    assert len(rows_of(first)) == 50
    assert rows_of(second) == [f"Agent {i:02d}" for i in range(50, 55)]
    assert "rows 51\u201355 of 55" in second
    assert '<a rel="prev" href="?">' in second


def test_an_unpublished_release_is_hidden_from_visitors_but_shown_to_staff(client, release):
    release.published = False
    release.save()
    assert client.get(BOARD).status_code == 404
    client.force_login(make_user(is_staff=True))
    assert client.get(BOARD).status_code == 200


def test_the_run_page_shows_each_task_anchor_or_not_published_and_provenance(client, board):
    run = board.runs.get(agent_version__agent__name="Bravo")
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert html.count('<span class="withheld">Not published</span>') == 3
    assert '<td class="num">0.62</td>' in html
    assert "<code>collision_rate</code> 1.00" in html
    assert "faithful" in html and "not gated" in html
    assert run.submission.sha256 in html
    assert run.submission.submitter.username in html
    assert "All 2 claimed fields match" in html


def test_the_run_page_lists_a_mismatching_field_as_a_diff(client, release):
    run = make_run(release, agent_name="Alpha")
    run.submission.diff = [{"path": "tasks.grasp.final", "claimed": 0.9, "recomputed": 0.85, "status": "diff"}]
    run.submission.save()
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "<strong>1</strong> of 1 fields differ." in html
    assert '<span class="result result--diff">diff</span>' in html


def test_a_private_run_is_a_404_for_a_stranger_and_visible_to_its_submitter(client, release):
    owner = make_user()
    run = make_run(release, agent_name="Secret", submitter=owner, is_private=True)
    url = reverse("run_detail", args=[run.pk])
    assert client.get(url).status_code == 404
    client.force_login(make_user())
    assert client.get(url).status_code == 404
    client.force_login(owner)
    assert client.get(url).status_code == 200


def test_the_task_page_shows_the_contract_without_a_withheld_anchor(client, release):
    html = client.get(reverse("task_detail", args=["ale-robotics", "v0.5", "grasp"])).content.decode()
    assert "success_rate" in html
    assert "paper_value" in html  # only in the sentence saying it is left out
    assert "paper_value:" not in html
    assert "Not published" in html


def test_the_task_page_shows_a_published_anchor_in_the_contract(client, release):
    html = client.get(reverse("task_detail", args=["ale-robotics", "v0.5", "walk"])).content.decode()
    assert "paper_value: 0.62" in html


def test_task_markdown_escapes_raw_html(client, benchmark):
    make_task(benchmark, "xss", paper_md="# Title\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))")
    make_release(benchmark, tasks=[("xss", "open", None, False)])
    html = client.get(reverse("task_detail", args=["ale-robotics", "v0.5", "xss"])).content.decode()
    assert "<h3>Title</h3>" in html and html.count("<h1") == 1  # the paper's heading sits under "Paper"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert" not in html
    assert 'href="javascript:' not in html


def test_the_release_page_lists_changes_since_the_previous_release_without_withheld_values(client, benchmark):
    old = make_release(
        benchmark,
        "v0.4",
        tasks=[("grasp", "reproduction", 0.5, False), ("gone", "open", 1.0, True), ("walk", "open", 0.6, True)],
    )
    old.published_at = old.published_at.replace(year=2025)
    old.save()
    make_release(benchmark, "v0.5")
    html = client.get(reverse("release_detail", args=["ale-robotics", "v0.5"])).content.decode()
    assert "<code>gone</code> Task gone" in html and "change--removed" in html
    assert "<code>plan</code> Task plan" in html and "change--added" in html
    assert (
        '<span class="change change--withheld">withheld</span> <code>grasp</code> Task grasp: '
        "anchor withheld in v0.4 and v0.5; not compared</li>"
    ) in html
    assert "Task walk: anchor changed from 0.6 to 0.62" in html
    assert "0.7331" not in html and "0.5 to" not in html


def test_the_agent_page_lists_its_runs_across_releases_with_their_rank(client, benchmark):
    first = make_release(benchmark, "v0.4", tasks=[("grasp", "reproduction", 0.5, True)])
    second = make_release(benchmark, "v0.5")
    make_run(first, agent_name="Alpha")
    make_run(second, agent_name="Other", score=2.0)
    make_run(second, agent_name="Alpha", version="2.0")
    html = client.get(reverse("agent_detail", args=["alpha"])).content.decode()
    assert html.count('<th scope="row"><a href="/runs/') == 2
    assert ">v0.4</a>" in html and ">v0.5</a>" in html
    assert Standing.objects.filter(agent_slug="alpha").count() == 6


def test_healthz_answers_ok(client, db):
    response = client.get(reverse("healthz"))
    assert response.content == b"ok"


def test_favicon_ico_redirects_to_the_sites_icon(client, db):
    # Browsers ask for it on the admin's pages, which name no icon: it was a full 404 page.
    response = client.get("/favicon.ico")
    assert response.status_code == 302
    assert response["Location"] == static("favicon.svg")
    assert client.get(response["Location"]).status_code == 200


def test_the_run_page_compares_every_field_of_the_recomputed_breakdown(client, release):
    run = make_run(release, agent_name="Alpha")
    # "walk" has a published anchor: every value of the comparison is shown to a visitor.
    run.breakdown = {"tasks": {"walk": {"final": 0.85, "gap": 0.85}}, "aggregates": {"overall": 0.85}}
    run.save()
    run.submission.diff = [{"path": "tasks.walk.final", "claimed": 0.9, "recomputed": 0.85, "status": "diff"}]
    run.submission.save()
    html = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "<strong>1</strong> of 3 fields differ." in html
    assert html.count('<span class="muted">matches</span>') == 2
    assert "<code>tasks.walk.gap</code>" in html and "<code>aggregates.overall</code>" in html


def test_a_race_benchmarks_address_redirects_to_its_scheme_page(client, db):
    from leaderboard.models import Benchmark, Release

    benchmark = Benchmark.objects.create(slug="shop", name="Shopping race", scheme=Benchmark.Scheme.RACE)
    # Public once a release is (a draft-only benchmark is a 404: tests/schemes/test_scheme_navigation.py).
    Release.objects.create(
        benchmark=benchmark, version="q1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64, published=True
    )
    response = client.get(reverse("benchmark_detail", args=["shop"]))
    assert response.status_code == 302
    assert response["Location"] == reverse("race_benchmark", kwargs={"benchmark": "shop"})


def test_the_agent_page_offers_a_badge_snippet_per_release(client, board):
    html = client.get(reverse("agent_detail", args=["alpha"])).content.decode()
    assert '<img src="http://testserver/badges/ale-robotics/v0.5/alpha.svg"' in html
    assert "[![ALE Robotics v0.5](http://testserver/badges/ale-robotics/v0.5/alpha.svg)]" in html


def test_a_head_request_gets_the_pages_headers_as_uptime_monitors_send_it_and_a_post_is_still_405(client, board):
    # require_GET answered HEAD with 405 on every public page and export.
    release = board
    urls = [
        reverse("healthz"),
        reverse("home"),
        reverse("release_board", args=[release.benchmark.slug, release.version]),
        reverse("board_csv", args=[release.benchmark.slug, release.version]),
    ]
    for url in urls:
        got, head = client.get(url), client.head(url)
        body = b"".join(head.streaming_content) if head.streaming else head.content
        assert (head.status_code, body) == (got.status_code, b""), url
        assert head["Content-Type"] == got["Content-Type"]
    assert client.post(urls[2]).status_code == 405
