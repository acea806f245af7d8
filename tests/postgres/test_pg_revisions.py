"""Shipped PostgreSQL revisions never change: a schema change is a new revision.

p001 to p007 run statement lists kept in :mod:`ctx_kernel.kernel.store.postgres.schema` and
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
    "p003_window_rule": "fa65e8acf922f42371ddae86db2bc708f6e3d936a81f1610844821e178dec5a3",
    "p004_login_binding": "cf5dc1c2737ff8a77c42588b2cbb8c8191c708efded85abf3be3f49908f7e819",
    "p005_input_rules": "367f4de971f45471af6197f33dc25aa4459613197dfb0dea610e20840639cb05",
    "p006_lookalikes_and_vectors": "b60d8a17b6c46c134471f6f7d822c7a9ec5e336f613c46e11d452212ca76d110",
    "p007_handles": "f9b38c4a8c88ce9ab80638f356649e615af4ea0f651274599e1cf1da695641b1",
    "p008_staleness": "7ff055582fac57f8afecf3c11c7b5034fa2a74fb9eede559e3f4d187dbbff8fb",
    "p009_served": "8b5e0b9301de44089c0e26941ae5c30264f2a27731bee89851db36fe57db3e92",
    "p010_links_logged": "6d0bfa9a91ca77f1e88054a200ba697b01403b062d7127f620c94325d6c11638",
    "p011_reconfirm_requests": "653e41659c07fde7d71d43b15b1a1f33f8e94d90bf6eead20aa62d1d3ea9f6e3",
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
        "p003_window_rule": schema.P003_STATEMENTS,
        "p004_login_binding": schema.P004_STATEMENTS,
        "p005_input_rules": schema.P005_STATEMENTS,
        "p006_lookalikes_and_vectors": list(schema.p006_statements()),
        "p007_handles": schema.P007_STATEMENTS,
        "p008_staleness": schema.P008_STATEMENTS,
        "p009_served": schema.P009_STATEMENTS,
        "p010_links_logged": schema.P010_STATEMENTS,
        "p011_reconfirm_requests": schema.P011_STATEMENTS,
    }
    for name, statements in runs.items():
        assert _digest(statements) == SHIPPED[name], HOW.format(name=name)


def test_a_changed_statement_is_caught() -> None:
    changed = [*schema.STATEMENTS, *roles.STATEMENTS]
    changed[-1] += " "
    assert _digest(changed) != SHIPPED["p001_initial"]


def test_every_revision_is_pinned() -> None:
    from ctx_kernel.kernel.store.postgres import migrate

    assert migrate.revisions() == list(SHIPPED), "pin each new revision's statements here once it ships"
