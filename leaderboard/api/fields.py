"""The API's string fields: a field documented as a string accepts only a JSON string.

DRF's CharField turns a number into text (``0`` is stored as ``"0"``, ``1e2`` as ``"100.0"``),
so a client's typing mistake was written as if meant. These fields refuse anything whose type is
not ``str`` with ``400 invalid`` naming the field's path ("Expected a string, got number."), like
the API's other type errors. They subclass DRF's own fields, so drf-spectacular still documents
them as ``type: string``. Every string field of the API's serializers is one of these, and
``StrictModelSerializer`` maps model text fields to them (tests/test_architecture.py pins both:
no plain ``serializers.CharField``, ``SlugField``, ``URLField``, ``ChoiceField`` or
``ModelSerializer`` outside this module).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, NoReturn

from django.db import models
from rest_framework import serializers


def json_type(value: Any) -> str:
    """The JSON name of a parsed value's type, for a message a client can act on."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before the numbers: bool is an int
        return "boolean"
    if isinstance(value, int | float | Decimal):
        return "number"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


NOT_A_STRING = "Expected a string, got {type}."


class StrictCharField(serializers.CharField):
    default_error_messages = {"not_a_string": NOT_A_STRING}

    def to_internal_value(self, data: Any) -> str:
        # Before DRF's own check, which str()s numbers (and says only "Not a valid string.").
        if not isinstance(data, str):
            self.fail("not_a_string", type=json_type(data))
        return super().to_internal_value(data)


class StrictSlugField(StrictCharField, serializers.SlugField):
    pass


class StrictURLField(StrictCharField, serializers.URLField):
    pass


class StrictChoiceField(serializers.ChoiceField):
    """A choice among strings is made with a string: DRF looks ``str(value)`` up, so ``1``
    chose ``"1"``. A field whose choices are not all strings keeps DRF's lookup. A value outside
    the choices is refused naming every allowed one (DRF's message names only what was sent)."""

    default_error_messages = {
        "not_a_string": NOT_A_STRING,
        "invalid_choice": '"{input}" is not a valid choice; expected one of: {allowed}.',
    }

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str) and all(isinstance(key, str) for key in self.choices):
            self.fail("not_a_string", type=json_type(data))
        return super().to_internal_value(data)

    def fail(self, key: str, **kwargs: Any) -> NoReturn:
        if key == "invalid_choice":
            kwargs["allowed"] = ", ".join(self.choice_strings_to_values)
        super().fail(key, **kwargs)


# A ModelSerializer whose generated text and choice fields are the strict ones above. No
# docstring: drf-spectacular publishes an undocumented serializer's inherited docstring as the
# description of every component built on it.
class StrictModelSerializer(serializers.ModelSerializer):
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: StrictCharField,
        models.TextField: StrictCharField,
        models.SlugField: StrictSlugField,
        models.URLField: StrictURLField,
    }
    serializer_choice_field = StrictChoiceField
