"""Display filters: scores are ratios, never percentages; pass rates may be."""

from __future__ import annotations

import pytest

from leaderboard.badges import badge_svg
from leaderboard.markdown import render_markdown
from leaderboard.templatetags.podium import duration, percent, ratio, sentence, tokens


@pytest.mark.parametrize(
    ("value", "text"), [(0.83, "0.83"), (1.125, "1.12"), (1.5, "1.50"), (None, "—"), (float("nan"), "—")]
)
def test_a_score_is_a_ratio_with_two_decimals(value, text):
    assert ratio(value) == text


@pytest.mark.parametrize(("value", "text"), [(0.97, "97%"), (0.975, "97.5%"), (1.0, "100%"), (None, "—")])
def test_a_pass_rate_is_a_percentage(value, text):
    assert percent(value) == text


@pytest.mark.parametrize(("value", "text"), [(42, "42s"), (125, "2m 05s"), (3725, "1h 02m"), (None, "—")])
def test_runtime_is_compact(value, text):
    assert duration(value) == text


@pytest.mark.parametrize(("value", "text"), [(950, "950"), (45_200, "45.2k"), (1_234_000, "1.23M")])
def test_token_counts_are_compact(value, text):
    assert tokens(value) == text


def test_markdown_escapes_raw_html():
    assert render_markdown("<b>x</b> *y*") == "<p>&lt;b&gt;x&lt;/b&gt; <em>y</em></p>\n"


def test_a_badge_escapes_its_text():
    svg = badge_svg(label="a<b", value="#1 · 0.83")
    assert "a&lt;b" in svg and "a<b" not in svg


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ("the bundle is larger than the limit", "The bundle is larger than the limit."),
        ("run 7 was submitted by another account", "Run 7 was submitted by another account."),
        ("Choose a bundle file (.age) to upload.", "Choose a bundle file (.age) to upload."),
        ("", ""),
    ],
)
def test_a_refusal_reads_as_a_sentence_capitalised_with_its_full_stop(message, text):
    assert sentence(message) == text


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ("release: no release '9.9'", "release: no release '9.9'."),
        ("manifest.json: required_task_set_hash differs", "manifest.json: required_task_set_hash differs."),
        ("required_task_set_hash differs", "required_task_set_hash differs."),
    ],
)
def test_a_refusal_keeps_a_leading_field_or_file_name_as_written(message, text):
    assert sentence(message) == text


def test_a_refusal_beside_its_field_does_not_repeat_the_fields_name():
    assert sentence("url: expected an http:// or https:// URL", "url") == "Expected an http:// or https:// URL."


def test_markdown_headings_sit_below_the_page_heading_they_are_rendered_under():
    # A paper's own "# Title" made a second <h1> on its task page.
    assert render_markdown("# Paper\n## Method", below=2) == "<h3>Paper</h3>\n<h4>Method</h4>\n"
    assert render_markdown("##### Deep", below=2) == "<h6>Deep</h6>\n"
    assert render_markdown("# Notes") == "<h2>Notes</h2>\n"


def test_race_figures_round_half_away_from_zero_as_the_boards_do():
    # A baseline of exactly 0.7875 is stored a hair below it: Python's format printed 0.787.
    from leaderboard.templatetags.schemes import score3, signed

    assert (score3(0.7875), score3(0.825), score3(None)) == ("0.788", "0.825", "—")
    assert (signed(0.0375), signed(-0.0375), signed(-0.0004)) == ("+0.038", "\u22120.038", "0.000")
