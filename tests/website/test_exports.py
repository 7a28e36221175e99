"""CSV/JSON exports follow the leaderboard view; SVG badges show rank and score."""

from __future__ import annotations

import csv
import io

from django.urls import reverse

from tests.website.conftest import make_run

BOARD = ["ale-robotics", "v0.5"]


def csv_rows(response) -> list[dict[str, str]]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def test_the_csv_export_has_every_row_of_the_view_in_its_order(client, board):
    response = client.get(reverse("board_csv", args=BOARD), {"sort": "score", "dir": "asc"})
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="ale-robotics-v0.5-overall.csv"'
    rows = csv_rows(response)
    assert [row["agent"] for row in rows] == ["Charlie", "Bravo", "Alpha"]
    assert rows[2]["score"] == "1.12"
    assert rows[0]["complete"] == "false"
    assert "tokens_submitter_reported" in rows[0] and "effort_tier_submitter_declared" in rows[0]


def test_the_csv_export_applies_the_complete_coverage_filter_and_tab(client, board):
    rows = csv_rows(client.get(reverse("board_csv", args=BOARD), {"complete": "1", "tab": "open"}))
    assert [row["agent"] for row in rows] == ["Alpha", "Bravo"]


def test_the_csv_export_defuses_spreadsheet_formulas_in_agent_names(client, release):
    make_run(release, agent_name="=HYPERLINK(1)")
    rows = csv_rows(client.get(reverse("board_csv", args=BOARD)))
    assert rows[0]["agent"] == "'=HYPERLINK(1)"


def test_the_json_export_has_the_view_and_its_rows(client, board):
    data = client.get(reverse("board_json", args=BOARD), {"tab": "reproduction", "sort": "pass_rate"}).json()
    assert (data["tab"], data["sort"], data["direction"], data["complete_only"]) == (
        "reproduction",
        "pass_rate",
        "desc",
        False,
    )
    assert [(row["rank"], row["agent"], row["score"]) for row in data["rows"]] == [
        (1, "Alpha", 1.12),
        (2, "Bravo", 0.83),
        (3, "Charlie", 0.54),
    ]
    assert "not proof that the runner was unmodified" in data["notes"]["verification"]
    # The rows' coverage is the run's, not the tab's as on the page: the notes say which.
    assert data["notes"]["covered"].startswith("tasks the run covers over the release's required tasks")


def test_an_export_with_a_bad_view_is_a_400_naming_the_value(client, board):
    response = client.get(reverse("board_json", args=BOARD), {"sort": "nope"})
    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("sort='nope' is not a sortable column")


def test_the_chart_data_has_the_top_n_of_the_tab(client, board):
    data = client.get(reverse("chart_data", args=BOARD), {"n": "2"}).json()
    assert [(row["rank"], row["label"], row["score"], row["pass_rate"]) for row in data["rows"]] == [
        (1, "Alpha 1.0", 1.12, 0.99),
        (2, "Bravo 1.0", 0.83, 0.9),
    ]


def test_the_chart_data_refuses_an_n_out_of_range(client, board):
    response = client.get(reverse("chart_data", args=BOARD), {"n": "500"})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "n='500': expected a whole number from 1 to 50"


def test_the_badge_shows_the_agents_rank_and_score(client, board):
    response = client.get(reverse("agent_badge", args=[*BOARD, "bravo"]))
    assert response["Content-Type"] == "image/svg+xml; charset=utf-8"
    svg = response.content.decode()
    assert "<title>ale-robotics v0.5: #2 · 0.83</title>" in svg


def test_the_badge_of_an_unranked_agent_says_so(client, board):
    svg = client.get(reverse("agent_badge", args=[*BOARD, "nobody"])).content.decode()
    assert "not ranked" in svg
