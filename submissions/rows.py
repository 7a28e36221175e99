"""Model instances from written-out SQL, for the few hot paths where the ORM's query
compilation costs more than the request around it (bench/play_bench.py: compiling a
three-table ``select_for_update`` took longer than the whole ``/healthz`` view).

A statement selects :func:`columns` of each model in order; :func:`instance` turns each
model's slice of the row into the instance the ORM would have built (the same column
converters: JSON text to lists, SQLite's text to datetimes, ...). Only identifiers from
the models are written into SQL; every value travels as a parameter.

:func:`cursor` runs those statements as server-side prepared statements on PostgreSQL:
planning the play path's three-table locked join cost more (about 1-2.5 ms) than
executing it (0.2 ms), and a prepared statement is planned once per connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.utils import CursorWrapper

Columns = list[tuple["models.Field[Any, Any]", Any, list[Any]]]


class _PlannedOnce(psycopg.Cursor[Any]):
    """A server-binding psycopg cursor whose every statement is prepared: PostgreSQL parses
    and plans it once per connection (psycopg keeps up to ``prepared_max`` of them, least
    recently used dropped), later executions send only the parameters.

    Django turns psycopg's automatic preparation off (``prepare_threshold=None``) so that
    transaction-mode poolers work; these statements opt in one by one, so a deployment
    behind PgBouncer needs ``max_prepared_statements`` > 0 (PgBouncer 1.21+; docs/deploy.md)."""

    def execute(
        self, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool | None = None
    ) -> Any:
        return super().execute(query, params, prepare=True, binary=binary)

    def _convert_query(self, query: Any, vars: Any = None) -> Any:
        # psycopg leaves ``_query`` unset for a prepared execution; Django's query log (and the
        # tests' query counts) read the statement's text from it.
        converted = super()._convert_query(query, vars)
        self._query = converted
        return converted


def cursor() -> CursorWrapper:
    """A cursor for the hot paths' written-out statements: prepared on PostgreSQL, Django's
    plain cursor elsewhere. Either way it is Django's wrapper, so database errors, query
    logging and execute wrappers (the tests' query counts) behave as for any other query."""
    # The default connection looked up once: each use of the ``connection`` proxy resolves it
    # again through asgiref's Local (a tenth of the play path's Python time).
    db = connections[DEFAULT_DB_ALIAS]
    if db.vendor != "postgresql":
        return db.cursor()
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    with db.wrap_database_errors:
        raw = _PlannedOnce(db.connection)
    # What Django's own cursor() wraps a new cursor in: the debug wrapper when queries are logged.
    # (django-stubs types their argument as the wrapper; Django passes the DB-API cursor, as here.)
    if db.queries_logged:
        return db.make_debug_cursor(raw)  # type: ignore[arg-type]
    return db.make_cursor(raw)  # type: ignore[arg-type]


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
