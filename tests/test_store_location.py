"""A store's location picks its backend: a path or sqlite:PATH is a SQLite file, a URL a server."""

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


def test_a_server_url_is_not_a_sqlite_file() -> None:
    with pytest.raises(UsageError, match="names a database, not a SQLite file") as refused:
        sqlite_path("postgresql://ctx:secret@db/ctx")
    assert "secret" not in str(refused.value)


def test_a_url_folded_by_a_path_is_refused() -> None:
    with pytest.raises(UsageError, match="must reach ctx as text"):
        open_store(Path("postgresql://db/ctx"))


def test_the_cli_refuses_an_unreachable_server_in_one_line_without_its_password(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--db", "postgresql://ctx:secret@127.0.0.1:1/ctx", "init", db=False)
    assert result.code == 1 and result.out == ""
    assert result.err.count("\n") == 1 and "cannot connect to" in result.err and "secret" not in result.err


def test_the_cli_takes_a_sqlite_location_as_its_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "team.db"
    created = cli("--db", f"sqlite:{target}", "init", db=False)
    # Files beside the store (checkpoints/, the lock) are placed from the file's path, not the prefix.
    assert created.code == 0 and created.out.strip() == f"created {target}"
    assert target.is_file()
    logged = cli("--db", f"sqlite:{target}", "log", "kept in the named file", db=False)
    assert logged.code == 0
    assert logged.out.split()[0] in cli("--db", str(target), "search", "named", db=False).out
