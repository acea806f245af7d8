"""A store's location picks its backend: a path or sqlite:PATH today, a server URL later."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.store import create_store, open_store, sqlite_path


def test_a_path_and_sqlite_prefix_name_the_same_file(tmp_path: Path) -> None:
    target = tmp_path / "s.db"
    assert sqlite_path(target) == target
    assert sqlite_path(f"sqlite:{target}") == target
    create_store(f"sqlite:{target}").close()
    store = open_store(target)
    assert store.location == str(target)
    store.close()


@pytest.mark.parametrize(
    "location", ["postgresql://ctx:secret@db/ctx", Path("postgresql://db/ctx"), "postgres+psycopg://db/x"]
)
def test_postgresql_is_not_supported_yet(location: str | Path) -> None:
    with pytest.raises(UsageError, match=r"^PostgreSQL stores are not supported yet") as refused:
        open_store(location)
    assert "secret" not in str(refused.value)


def test_the_cli_refuses_a_server_url_in_one_line(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--db", "postgresql://ctx:secret@db/ctx", "init", db=False)
    assert result.code == 2 and result.out == ""
    assert result.err.strip().count("\n") == 0 and "not supported yet" in result.err


def test_the_cli_takes_a_sqlite_location_as_its_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "team.db"
    created = cli("--db", f"sqlite:{target}", "init", db=False)
    # Files beside the store (checkpoints/, the lock) are placed from the file's path, not the prefix.
    assert created.code == 0 and created.out.strip() == f"created {target}"
    assert target.is_file()
    logged = cli("--db", f"sqlite:{target}", "log", "kept in the named file", db=False)
    assert logged.code == 0
    assert logged.out.split()[0] in cli("--db", str(target), "search", "named", db=False).out
