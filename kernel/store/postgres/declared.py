"""PostgreSQL's tables against the one declaration of the ordinary tables, ``kernel/store/models.py``.

The models declare every ordinary table's columns for both backends: where PostgreSQL's type
differs from SQLite's, the column carries a PostgreSQL variant (``timestamptz``, ``jsonb``,
``boolean``, ``vector``). What PostgreSQL holds beyond them is listed here, each with its reason;
:func:`column_differences` compares a database after every p-revision with the models by column
name, nullability and type family, so a column added to one and not the other fails
tests/postgres/test_pg_models.py. :func:`drafted_statements` drafts the DDL that would bring a
database at head to the models, for a new revision (``python -m
ctx_kernel.kernel.store.postgres.migrate draft MESSAGE URL``).

The shipped revisions (p001..p006) are SQL kept in ``schema.py`` and ``roles.py`` and never change;
this module only reads the models and a database. It imports SQLAlchemy and SQLModel, so no part
of the store's run time imports it.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

from alembic.autogenerate import produce_migrations
from alembic.migration import MigrationContext
from alembic.operations import Operations
from alembic.operations import ops as alembic_ops
from sqlalchemy import Column, MetaData
from sqlalchemy.dialects.postgresql.base import PGDialect

from ctx_kernel.kernel.store import models
from ctx_kernel.kernel.store.postgres import schema

# -- what PostgreSQL holds beyond the models, and why ------------------------------------------

# Columns the models do not declare (schema.POSTGRES_ONLY_COLUMNS): SQLite's implicit rowid made
# an identity column, the sealed text's own column, and the generated tsvector that stands in for
# an FTS5 table.
POSTGRES_ONLY_COLUMNS = schema.POSTGRES_ONLY_COLUMNS
# Tables the models do not declare (schema.POSTGRES_ONLY_TABLES: the change counter, the
# look-alike table, the full-text postings), and Alembic's own.
POSTGRES_ONLY_TABLES = (*schema.POSTGRES_ONLY_TABLES, "alembic_version")
# Columns NULL may fill here and not in SQLite: a sealed row's ciphertext goes to ``sealed`` and
# its ``text`` is NULL (SQLite swaps the text for a BLOB in place); a CHECK sets exactly one.
NULLABLE_HERE = {("evidence", "text")}
# Indexes the models do not declare: the tsvectors' GIN indexes, the trigram index on entity
# names, and the vectors' KNN indexes (created with the vector dimension, schema.vector_statements).
POSTGRES_ONLY_INDEXES = frozenset(
    {
        "ix_evidence_search",
        "ix_decision_search",
        "ix_entity_name_trgm",
        *schema.VECTOR_INDEXES.values(),
    }
)
# Constraints the models do not declare: rowid's UNIQUE (the vectors' foreign keys point at it)
# and those keys, the chain's unique prev_hash (SQLite's audit_linked trigger holds that), the
# deferred key from a ratified proposal to its decision, and the key from a request to re-confirm
# to its decision (SQLite cannot add one to an existing table, and the models keep the two alike).
POSTGRES_ONLY_CONSTRAINTS = frozenset(
    {
        "evidence_rowid_key",
        "decision_rowid_key",
        "decision_vector_owner_rowid_fkey",
        "evidence_vector_owner_rowid_fkey",
        "audit_prev_hash_key",
        "proposal_decision_id_fkey",
        "proposal_reconfirms_fkey",
    }
)

# Type names (as the catalog and the PostgreSQL dialect print them) by family: a column may be
# integer in the models and bigint here, REAL there and double precision here.
_FAMILIES = {
    "text": "text",
    "integer": "integer",
    "bigint": "integer",
    "smallint": "integer",
    "real": "float",
    "double precision": "float",
    "timestamp with time zone": "timestamptz",
    "jsonb": "jsonb",
    "boolean": "boolean",
    "bytea": "bytea",
    "vector": "vector",
    "tsvector": "tsvector",
}
_DIALECT = PGDialect()  # type: ignore[no-untyped-call]  # SQLAlchemy leaves it untyped


def family(type_name: str) -> str:
    """The family of a PostgreSQL type name (``bigint`` -> ``integer``, ``TEXT COLLATE "C"`` ->
    ``text``); an unknown name is its own."""
    name = type_name.lower().split(" collate ")[0]
    return _FAMILIES.get(name, name)


def model_family(column: Column[Any]) -> str:
    """The family of a model column's type in PostgreSQL (its variant, if it declares one)."""
    return family(column.type.compile(dialect=_DIALECT))


def column_differences(conn: Any, metadata: MetaData = models.metadata) -> list[str]:
    """How the tables of the database on ``conn`` (a psycopg connection) differ from ``metadata``'s,
    in names, nullability and type families, beyond the differences declared above; empty when
    they agree."""
    found: dict[str, dict[str, tuple[bool, str]]] = {}
    for table, column, nullable, data_type, udt in conn.execute(
        "SELECT table_name::text, column_name::text, is_nullable = 'YES', data_type::text, udt_name::text "
        "FROM information_schema.columns WHERE table_schema = current_schema() AND table_name IN "
        "(SELECT tablename FROM pg_tables WHERE schemaname = current_schema())"
    ):
        kind = udt if data_type == "USER-DEFINED" else data_type
        found.setdefault(table, {})[column] = (nullable, family(kind))
    problems = [
        f"{name}: a table here the models do not declare"
        for name in sorted(found.keys() - metadata.tables.keys() - set(POSTGRES_ONLY_TABLES))
    ]
    for name, table in metadata.tables.items():
        here = found.get(name)
        if here is None:
            problems.append(f"{name}: a table the models declare, missing here")
            continue
        extra = set(here) - set(table.columns.keys()) - set(POSTGRES_ONLY_COLUMNS.get(name, ()))
        problems += [f"{name}.{column}: a column here the models do not declare" for column in sorted(extra)]
        for column in table.columns:
            if column.name not in here:
                problems.append(f"{name}.{column.name}: a column the models declare, missing here")
                continue
            nullable, kind = here[column.name]
            declared = bool(column.nullable) or (name, column.name) in NULLABLE_HERE
            if nullable != declared:
                say = "nullable" if nullable else "NOT NULL"
                problems.append(f"{name}.{column.name}: {say} here, not in the models")
            if kind != model_family(column):
                problems.append(f"{name}.{column.name}: {kind} here, {model_family(column)} in the models")
    return problems


# -- drafting a revision ------------------------------------------------------------------------


def _included(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Alembic's filter: leave out what PostgreSQL holds beyond the models, as declared above."""
    if type_ == "table":
        return name not in POSTGRES_ONLY_TABLES
    if type_ == "column" and reflected and compare_to is None:
        return name not in POSTGRES_ONLY_COLUMNS.get(obj.table.name, ())
    if type_ == "index":
        return name not in POSTGRES_ONLY_INDEXES
    if type_ in ("unique_constraint", "foreign_key_constraint"):
        return name not in POSTGRES_ONLY_CONSTRAINTS
    return True


def _types_differ(
    context: Any, inspected: Column[Any], metadata_column: Column[Any], inspected_type: Any, _: Any
) -> bool:
    """Alembic's type comparison: by family, as :func:`column_differences` compares."""
    return family(inspected_type.compile(dialect=_DIALECT)) != model_family(metadata_column)


def _declared_nullable(table: str, op: Any) -> bool:
    """True for a step that would only make a column declared nullable here NOT NULL."""
    return (
        isinstance(op, alembic_ops.AlterColumnOp)
        and (table, op.column_name) in NULLABLE_HERE
        and op.modify_nullable is False
        and op.modify_type is None
        and op.modify_server_default is False
        and op.modify_name is None
    )


def drafted_statements(connection: Any, metadata: MetaData = models.metadata) -> list[str]:
    """The DDL that would bring the database on ``connection`` (SQLAlchemy's, at head) to
    ``metadata``: the ordinary-table steps of a new revision, to review. CHECKs, triggers, grants
    and row-level security are written by hand, and a server default is the models' SQLite text."""
    context = MigrationContext.configure(
        connection,
        opts={"include_object": _included, "compare_type": _types_differ},
    )
    with warnings.catch_warnings():
        # The reflection knows neither pgvector's type nor a tsvector's generated expression.
        warnings.filterwarnings("ignore", message="Did not recognize type")
        upgrade = produce_migrations(context, metadata).upgrade_ops
    assert upgrade is not None
    steps: list[Any] = []
    for op in upgrade.ops:
        if isinstance(op, alembic_ops.ModifyTableOps):
            steps += [step for step in op.ops if not _declared_nullable(op.table_name, step)]
        else:
            steps.append(op)
    return _as_sql(steps)


def _as_sql(steps: list[Any]) -> list[str]:
    """Alembic's operations as PostgreSQL DDL, one statement each."""
    buffer = io.StringIO()
    offline = MigrationContext.configure(
        dialect_name="postgresql", opts={"as_sql": True, "output_buffer": buffer, "literal_binds": True}
    )
    operations = Operations(offline)
    for step in steps:
        operations.invoke(step)
    statements = [s.strip() for s in buffer.getvalue().split(";\n") if s.strip()]
    return ["\n".join(line.rstrip() for line in s.splitlines()) for s in statements]
