"""The API's strict string fields (leaderboard.api.fields): a string field takes only a string."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework import serializers

from leaderboard.api.fields import (
    StrictCharField,
    StrictChoiceField,
    StrictModelSerializer,
    StrictSlugField,
    StrictURLField,
)
from leaderboard.models import Baseline


def _errors(field: serializers.Field, value: Any) -> list[str]:
    with pytest.raises(serializers.ValidationError) as raised:
        field.run_validation(value)
    return [str(message) for message in raised.value.detail]


@pytest.mark.parametrize(
    ("value", "kind"), [(0, "number"), (1.5, "number"), (True, "boolean"), ([], "array"), ({}, "object")]
)
@pytest.mark.parametrize("field", [StrictCharField, StrictSlugField, StrictURLField])
def test_a_string_field_refuses_a_value_that_is_not_a_string_naming_its_json_type(
    field: type[serializers.Field], value: Any, kind: str
) -> None:
    assert _errors(field(), value) == [f"Expected a string, got {kind}."]


def test_a_string_field_still_takes_a_string_and_its_own_rules() -> None:
    assert StrictCharField().run_validation(" text ") == "text"
    assert StrictSlugField().run_validation("a-slug") == "a-slug"
    assert _errors(StrictSlugField(), "not a slug") == [
        'Enter a valid "slug" consisting of letters, numbers, underscores or hyphens.'
    ]


def test_a_string_field_lets_null_through_only_where_it_allows_null() -> None:
    assert StrictCharField(allow_null=True).run_validation(None) is None
    assert _errors(StrictCharField(), None) == ["This field may not be null."]


def test_a_choice_among_strings_refuses_the_number_whose_text_is_a_choice() -> None:
    # DRF looks up str(value): 1 chose "1".
    field = StrictChoiceField(choices=["1", "2"])
    assert field.run_validation("1") == "1"
    assert _errors(field, 1) == ["Expected a string, got number."]


def test_a_value_outside_the_choices_is_refused_naming_every_allowed_one() -> None:
    field = StrictChoiceField(choices=["scheduled", "running", "released"])
    assert _errors(field, "done") == ['"done" is not a valid choice; expected one of: scheduled, running, released.']


def test_a_choice_among_numbers_keeps_drfs_lookup() -> None:
    assert StrictChoiceField(choices=[1, 2]).run_validation(1) == 1


def test_the_model_serializer_generates_strict_text_and_choice_fields() -> None:
    class BaselineIn(StrictModelSerializer):
        class Meta:
            model = Baseline
            fields = ["kind", "note"]

    generated = BaselineIn().fields
    assert type(generated["note"]) is StrictCharField
    assert type(generated["kind"]) is StrictChoiceField
