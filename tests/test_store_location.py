"""A store's location picks its backend: a path or sqlite:PATH is a file, a postgresql:// URL a server."""

from __future__ import annotations

import subprocess
import sys
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
    ("location", "says"),
    [
        (Path("postgresql://db/ctx"), "must reach ctx as text"),
        ("postgres+psycopg://ctx:secret@db/x", "libpq's form, no driver name"),
        ("mysql://ctx:secret@db/x", "unknown store scheme mysql"),
    ],
)
def test_a_server_location_ctx_cannot_use_is_one_usage_error(location: str | Path, says: str) -> None:
    with pytest.raises(UsageError, match=says) as refused:
        open_store(location)
    assert "secret" not in str(refused.value)


def test_the_cli_refuses_an_unreachable_server_in_one_line_without_its_password(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("--db", "postgresql://ctx:secret@db.invalid/ctx?connect_timeout=2", "init", db=False)
    assert result.code == 1 and result.out == ""
    assert (
        result.err.strip().count("\n") == 0 and "cannot connect to postgresql://ctx@db.invalid" in result.err
    )
    assert "secret" not in result.err and "Traceback" not in result.err


def test_without_the_driver_a_server_url_says_which_extra_to_install(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None\n"  # as if the postgres extra were not installed
        "from ctx_kernel.kernel.errors import UsageError\n"
        "from ctx_kernel.kernel.store import open_store\n"
        "try:\n"
        "    open_store('postgresql://ctx:secret@db/ctx')\n"
        "except UsageError as exc:\n"
        "    print(exc.message)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "a PostgreSQL store needs the driver: install ctx[postgres]"


def test_the_cli_takes_a_sqlite_location_as_its_file(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    target = tmp_path / "team.db"
    created = cli("--db", f"sqlite:{target}", "init", db=False)
    # Files beside the store (checkpoints/, the lock) are placed from the file's path, not the prefix.
    assert created.code == 0 and created.out.strip() == f"created {target}"
    assert target.is_file()
    logged = cli("--db", f"sqlite:{target}", "log", "kept in the named file", db=False)
    assert logged.code == 0
    found = cli("--db", str(target), "search", "named", "--json", db=False).out
    assert logged.out.split()[0] in found
