"""Issue 13's rough edges on the server side: the default board across releases, the chart's
metric and permalink, ranking and tab coverage explained, the last-updated stamp, and the
submitter's views of refused and repeated uploads. (The browser side: test_browser_rough_edges.py.)"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from submissions.models import Submission
from tests.website.conftest import make_release, make_run, make_user

pytestmark = pytest.mark.django_db

BOARD = reverse("release_board", args=["ale-robotics", "v0.5"])
CHART = reverse("chart_data", args=["ale-robotics", "v0.5"])


def two_releases(benchmark):
    """v0.5 with two ranked runs, and v0.6 published an hour later with none."""
    old = make_release(benchmark, "v0.5", published_at=timezone.now() - dt.timedelta(hours=1))
    make_run(old, agent_name="Alpha", score=1.1)
    make_run(old, agent_name="Bravo", score=0.7)
    new = make_release(benchmark, "v0.6", published_at=timezone.now())
    return old, new


def test_publishing_an_empty_release_keeps_the_default_board_on_the_ranked_one(client, benchmark):
    two_releases(benchmark)
    response = client.get(reverse("benchmark_detail", args=["ale-robotics"]))
    assert response["Location"] == BOARD
    html = client.get(BOARD).content.decode()
    assert "data-newer-release" in html
    assert 'href="/benchmarks/ale-robotics/v0.6/"' in html
    assert "has no verified runs yet; this board (v0.5) stays the default" in html


def test_the_home_page_leader_comes_from_the_ranked_release_and_the_new_one_is_announced(client, benchmark):
    two_releases(benchmark)
    html = client.get(reverse("home")).content.decode()
    assert "no runs yet" not in html
    assert "Alpha 1.0" in html
    assert 'href="/benchmarks/ale-robotics/v0.5/">v0.5</a>' in html
    assert "Newer release" in html and "published, no verified runs yet" in html


def test_the_new_release_becomes_the_default_once_it_has_a_ranked_run(client, benchmark):
    _, new = two_releases(benchmark)
    make_run(new, agent_name="Charlie", score=0.5)
    response = client.get(reverse("benchmark_detail", args=["ale-robotics"]))
    assert response["Location"] == reverse("release_board", args=["ale-robotics", "v0.6"])
    html = client.get(BOARD).content.decode()
    assert "This is an older release. The current board is" in html
    assert "Charlie 1.0" in client.get(reverse("home")).content.decode()


def test_with_no_ranked_run_anywhere_the_newest_release_is_the_default(client, benchmark):
    make_release(benchmark, "v0.5", published_at=timezone.now() - dt.timedelta(hours=1))
    make_release(benchmark, "v0.6")
    response = client.get(reverse("benchmark_detail", args=["ale-robotics"]))
    assert response["Location"] == reverse("release_board", args=["ale-robotics", "v0.6"])


def test_the_pass_rate_chart_picks_its_top_n_by_pass_rate(client, benchmark):
    release = make_release(benchmark)
    make_run(release, agent_name="High Score", score=1.2, pass_rate=0.5)
    make_run(release, agent_name="Steady", score=0.6, pass_rate=0.99)
    make_run(release, agent_name="Middle", score=0.9, pass_rate=0.8)
    by_score = client.get(CHART, {"n": "2"}).json()
    by_pass = client.get(CHART, {"n": "2", "by": "pass_rate"}).json()
    assert [r["label"] for r in by_score["rows"]] == ["High Score 1.0", "Middle 1.0"]  # ranked by score
    assert [r["label"] for r in by_pass["rows"]] == ["Steady 1.0", "Middle 1.0"]
    assert by_pass["by"] == "pass_rate"


def test_the_chart_rows_carry_the_interval_and_the_coverage(client, benchmark):
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha", score=0.8, ci=0.05, covered=2)
    row = client.get(CHART).json()["rows"][0]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.75, 0.85))
    assert (row["covered"], row["required"], row["complete"]) == (2, 4, False)


def test_an_unknown_chart_order_is_a_400_naming_it(client, benchmark):
    make_release(benchmark)
    response = client.get(CHART, {"by": "tokens"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_query"
    assert "by='tokens'" in response.json()["error"]["message"]


def test_the_chart_mode_is_read_from_the_address(client, benchmark):
    release = make_release(benchmark)
    make_run(release, agent_name="Alpha")
    html = client.get(BOARD, {"metric": "pass_rate"}).content.decode()
    assert 'value="pass_rate" checked' in html
    assert 'data-initial-metric="pass_rate"' in html
    assert "Top agent by pass rate" in html
    # Links to other views of the board keep the mode.
    assert re.search(r'class="tabs__tab" href="\?tab=reproduction&amp;metric=pass_rate"', html)
    assert client.get(BOARD, {"metric": "pie"}).status_code == 400


def test_partial_runs_are_explained_where_they_rank_after_complete_ones(client, benchmark):
    release = make_release(benchmark)
    make_run(release, agent_name="Complete", score=0.26)
    make_run(release, agent_name="Partial", score=0.69, covered=2)
    html = client.get(BOARD).content.decode()
    assert "data-rank-note" in html
    assert "Partial runs rank after every complete run, whatever their score" in html
    assert html.count('class="partial-mark" title="Partial coverage: ranked after every complete run"') == 1


def test_a_board_without_partial_runs_has_no_ranking_note(client, benchmark):
    release = make_release(benchmark)
    make_run(release, agent_name="Complete")
    assert "data-rank-note" not in client.get(BOARD).content.decode()


def test_a_genre_tab_counts_coverage_over_its_own_tasks(client, benchmark):
    release = make_release(benchmark)  # two reproduction tasks, two open ones
    make_run(release, agent_name="Full")
    make_run(release, agent_name="Partial", covered=1)  # grasp only: a reproduction task
    html = client.get(BOARD, {"tab": "reproduction"}).content.decode()
    assert '<td class="num coverage">2/2</td>' in html
    assert "1/2<span" in html and "partial run (1/4 tasks overall)" in html
    overall = client.get(BOARD).content.decode()
    assert '<td class="num coverage">4/4</td>' in overall


def test_the_chart_table_counts_coverage_over_the_tabs_tasks_as_the_chart_data_does(client, benchmark):
    release = make_release(benchmark)  # two reproduction tasks, two open ones
    make_run(release, agent_name="Partial", covered=1)  # grasp only: a reproduction task
    html = client.get(BOARD, {"tab": "reproduction"}).content.decode()
    table = html[html.index("data-chart-rows") :]
    table = table[: table.index("</tbody>")]
    assert '<td class="num">1/2</td>' in table and "/4</td>" not in table
    chart = client.get(CHART, {"tab": "reproduction"}).json()
    assert (chart["rows"][0]["covered"], chart["rows"][0]["required"]) == (1, 2)


def test_every_board_says_when_it_was_last_updated(client, benchmark):
    from django.db.models import Max

    from leaderboard.models import Standing

    release = make_release(benchmark)
    make_run(release, agent_name="Alpha")
    make_run(release, agent_name="Bravo")
    newest = Standing.objects.filter(release=release, tab="overall").aggregate(m=Max("verified_at"))["m"]
    html = client.get(BOARD).content.decode()
    match = re.search(r'Updated <time datetime="([^"]+)" data-updated>', html)
    assert match and match.group(1) == newest.isoformat()


def test_an_empty_board_says_it_has_no_verified_runs_yet(client, benchmark):
    make_release(benchmark)
    assert "No verified runs yet" in client.get(BOARD).content.decode()


def test_my_submissions_never_lists_a_refused_bundle_as_public(client, release):
    owner = make_user()
    refused = make_run(release, agent_name="Refused", submitter=owner)
    Submission.objects.filter(pk=refused.submission.pk).update(
        verdict="rejected", error_code="bad_signature", release=None, declared_benchmark=release.benchmark
    )
    client.force_login(owner)
    html = client.get(reverse("my_submissions")).content.decode()
    row = html[html.index(refused.submission.original_name) :]
    row = row[: row.index("</tr>")]
    assert "not listed (refused)" in row and ">public<" not in row
    assert "ALE Robotics" in row


def test_re_uploading_the_same_file_says_it_is_the_earlier_submission(client, release, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    client.force_login(make_user())

    def post(**extra):
        data = {"benchmark": "ale-robotics", "bundle": SimpleUploadedFile("run.age", b"same sealed bytes")}
        return client.post(reverse("submission_upload"), data, **extra)

    first = post(HTTP_ACCEPT="application/json").json()
    again = post(HTTP_ACCEPT="application/json")
    assert again.status_code == 200
    assert (again.json()["created"], again.json()["id"]) == (False, first["id"])
    assert again.json()["uploaded_at"].endswith("UTC")
    page = post(follow=True).content.decode()
    assert "You uploaded this exact file before: nothing new was submitted" in page
    assert Submission.objects.count() == 1


def test_a_refused_verdict_step_is_red_not_a_green_tick(client, release):
    owner = make_user()
    run = make_run(release, submitter=owner)
    Submission.objects.filter(pk=run.submission.pk).update(verdict="mismatch", error_code="score_mismatch")
    client.force_login(owner)
    html = client.get(reverse("submission_detail", args=[run.submission.pk])).content.decode()
    assert 'class="steps__item is-failed" data-step="done"' in html
    assert 'class="steps__item is-done" data-step="verifying"' in html


def test_a_draft_release_is_never_announced_even_to_staff(client, benchmark):
    _, new = two_releases(benchmark)
    new.published = False
    new.save()
    client.force_login(make_user("staffer", is_staff=True))
    html = client.get(BOARD).content.decode()
    assert "data-newer-release" not in html
    assert "Newer release" not in client.get(reverse("home")).content.decode()
