"""The one rule for storable text (leaderboard.storable_text)."""

from __future__ import annotations

import pytest

from leaderboard.storable_text import NUL, SURROGATE, field_path, unstorable_kind, unstorable_strings


@pytest.mark.parametrize(
    ("text", "kind"),
    [("plain", None), ("é ✓ \U0001f600", None), ("a\x00b", NUL), ("\ud800", SURROGATE), ("x\udfffy", SURROGATE)],
)
def test_a_string_is_unstorable_only_for_a_nul_or_a_lone_surrogate(text, kind):
    assert unstorable_kind(text) == kind


def test_every_bad_string_is_reported_at_its_path_and_a_bad_key_at_its_objects():
    value = {"ok": "fine", "tasks": [{"name": "a\x00"}, {"\ud800": "never walked\x00"}], "n": 1}
    assert list(unstorable_strings(value)) == [
        (("tasks", 0, "name"), NUL, False),
        (("tasks", 1), SURROGATE, True),
    ]


def test_a_path_reads_as_the_messages_write_it():
    assert field_path(("tasks", 2, "name")) == "tasks[2].name"
    assert field_path((0, "a")) == "[0].a"
    assert field_path(()) == ""
