"""The store's schema as its migrations define it, and a check that nobody changed it.

The invariants that keep the truth store honest live in the database (triggers that make evidence,
decisions, links and the audit log append-only, the partial unique index that allows one current
decision per subject, CHECK constraints). One ``DROP TRIGGER`` turns them off without changing a
row, so verifying compares every table, index and trigger with the definition its migration wrote.

The definitions are recorded in ``migrations/schema.json`` by running the migrations one at a time
(``python -m ctx_kernel.kernel.audit.schema``); a test fails while the file is stale.
"""

from __future__ import annotations

import json
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from ctx_kernel.kernel.store.base import Store

SNAPSHOT = Path(__file__).resolve().parent.parent / "store" / "sqlite" / "migrations" / "schema.json"


@cache
def expected_objects() -> dict[tuple[str, str], dict[str, Any]]:
    """``(type, name)`` of every migrated table, index and trigger, with its SQL and its migration."""
    document = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return {(o["type"], o["name"]): o for o in document["objects"]}


def schema_problems(store: Store) -> list[str]:
    """Every migrated object missing or changed, and every trigger no migration made (first first).

    The snapshot is of the SQLite migrations. A PostgreSQL store is checked by its own
    ``integrity_check`` instead: its catalog prints definitions in the server's own normal form,
    which varies between server versions, so it checks what the invariants rest on (each ctx
    trigger present and enabled, each ctx function as this ctx defines it, every constraint
    validated) rather than comparing text.
    """
    if store.dialect != "sqlite":
        checked = store.integrity_check()
        return [] if checked == "ok" else [f"schema: {problem}" for problem in checked.split("; ")]
    expected = expected_objects()
    found = {(kind, name): sql for kind, name, _table, sql in store.schema_objects()}
    problems = []
    for (kind, name), wanted in expected.items():
        if wanted["sql"] is None:
            continue  # an automatic index: it goes only with its table
        if (kind, name) not in found:
            problems.append(f"schema: {kind} {name} is missing (migration {wanted['migration']} creates it)")
        elif found[(kind, name)] != wanted["sql"]:
            problems.append(
                f"schema: {kind} {name} differs from its definition in migration {wanted['migration']}"
            )
    for kind, name in sorted(found.keys() - expected.keys()):
        if kind == "trigger":
            # Tables and indexes made outside migrations (the vector tables) hold derived data; a
            # trigger can rewrite what every later write stores, and no part of ctx makes one.
            problems.append(f"schema: trigger {name} is not one ctx's migrations create")
    return problems


def _objects(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    from ctx_kernel.kernel.store.sqlite import driver  # noqa: PLC0415

    conn = driver.connect(path, load_vec=False)
    try:
        rows = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE type IN ('table', 'index', 'trigger')"
        ).fetchall()
    finally:
        conn.close()
    return {(r[0], r[1]): {"type": r[0], "name": r[1], "table": r[2], "sql": r[3]} for r in rows}


def build_snapshot() -> dict[str, Any]:
    """Run every migration in turn on an empty store and record which one last defined each object."""
    from ctx_kernel.kernel.store.sqlite import migrate  # noqa: PLC0415 - Alembic loads only to build the snapshot

    objects: dict[tuple[str, str], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "schema.db"
        for revision in migrate.revisions():
            migrate.upgrade(path, revision)
            now = _objects(path)
            for key, value in now.items():
                if key not in objects or objects[key]["sql"] != value["sql"]:
                    objects[key] = {**value, "migration": revision}
            objects = {k: v for k, v in objects.items() if k in now}
    # FTS5 writes its shadow tables' SQL itself (it may differ between SQLite versions); the text
    # index is derived data that `ctx reindex` does not need to trust, so only its definition counts.
    virtual = [o["name"] for o in objects.values() if (o["sql"] or "").startswith("CREATE VIRTUAL TABLE")]
    kept = [
        o
        for o in objects.values()
        if o["name"] != "alembic_version"
        and not (o["type"] == "table" and any(o["name"].startswith(f"{v}_") for v in virtual))
    ]
    kept.sort(key=lambda o: (o["type"], o["name"]))
    return {"schema_version": migrate.HEAD_VERSION, "objects": kept}


def render(document: dict[str, Any]) -> str:
    """The exact text of ``migrations/schema.json``."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else SNAPSHOT
    target.write_text(render(build_snapshot()), encoding="utf-8")
    print(target)
