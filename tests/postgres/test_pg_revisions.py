"""Shipped PostgreSQL revisions never change: a schema change is a new revision.

p001 and p002 run statement lists kept in :mod:`ctx_kernel.kernel.store.postgres.schema` and
:mod:`~ctx_kernel.kernel.store.postgres.roles`. A server created by an earlier ctx has run them
as they were then; editing them in place would give new servers a schema that existing ones never
get. These digests hold the lists as they shipped.
"""

from __future__ import annotations

import hashlib

from ctx_kernel.kernel.store.postgres import roles, schema

SHIPPED = {
    "p001_initial": "de87edb5ea07828f2022f7566cdfb35945af1e1f78d74b3a88bc471895056f1b",
    "p002_role_grants": "d555cf36c7c0c6d0e2a4a371cd8cba923fc5573298481a6bc9222afb939ca90c",
}
HOW = (
    "{name} has shipped and its statements changed: restore them (copy the old list into the "
    "revision if schema.py must move on) and put the change in a new revision after the head"
)


def _digest(statements: list[str]) -> str:
    return hashlib.sha256("\n;\n".join(statements).encode()).hexdigest()


def test_shipped_revisions_run_the_statements_they_shipped_with() -> None:
    runs = {
        "p001_initial": [*schema.STATEMENTS, *roles.STATEMENTS],
        "p002_role_grants": roles.P002_STATEMENTS,
    }
    for name, statements in runs.items():
        assert _digest(statements) == SHIPPED[name], HOW.format(name=name)


def test_a_changed_statement_is_caught() -> None:
    changed = [*schema.STATEMENTS, *roles.STATEMENTS]
    changed[-1] += " "
    assert _digest(changed) != SHIPPED["p001_initial"]
