"""Model instances from written-out SQL, for the few hot paths where the ORM's query
compilation costs more than the request around it (bench/play_bench.py: compiling a
three-table ``select_for_update`` took longer than the whole ``/healthz`` view).

A statement selects :func:`columns` of each model in order; :func:`instance` turns each
model's slice of the row into the instance the ORM would have built (the same column
converters: JSON text to lists, SQLite's text to datetimes, ...). Only identifiers from
the models are written into SQL; every value travels as a parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, models

Columns = list[tuple["models.Field[Any, Any]", Any, list[Any]]]


def columns(model: type[models.Model], alias: str) -> Columns:
    """Each concrete field of ``model`` read under table ``alias``, with its converters."""
    out: Columns = []
    for field in model._meta.concrete_fields:
        col = field.get_col(alias)
        out.append((field, col, connection.ops.get_db_converters(col) + col.get_db_converters(connection)))
    return out


def select_list(*groups: Columns) -> str:
    """``alias.column, ...`` for every field of ``groups``, in order."""
    quote = connection.ops.quote_name
    return ", ".join(f"{col.alias}.{quote(field.column)}" for group in groups for field, col, _ in group)


def field(model: type[models.Model], name: str) -> models.Field[Any, Any]:
    """``model``'s concrete field ``name`` (a column, not a reverse relation)."""
    found = model._meta.get_field(name)
    if not isinstance(found, models.Field):
        raise TypeError(f"{model.__name__}.{name} is not a column")
    return found


def column(alias: str, model: type[models.Model], name: str) -> str:
    """``alias."column"`` of ``model``'s field ``name``."""
    return f"{alias}.{connection.ops.quote_name(field(model, name).column)}"


def table(model: type[models.Model], alias: str) -> str:
    return f"{connection.ops.quote_name(model._meta.db_table)} {alias}"


def instances(row: Sequence[Any], *groups: tuple[type[models.Model], Columns]) -> list[Any]:
    """One instance per (model, columns) group, each from its slice of ``row``."""
    out = []
    start = 0
    for model, cols in groups:
        values = []
        for (_, col, converters), value in zip(cols, row[start : start + len(cols)], strict=True):
            converted = value
            for converter in converters:
                converted = converter(converted, col, connection)
            values.append(converted)
        out.append(model.from_db(connection.alias, [field.attname for field, _, _ in cols], values))
        start += len(cols)
    return out
