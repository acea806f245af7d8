"""A project's .ctx/config.toml names its store: found walking up, below --db and CTX_DB, and it
never shows or keeps a password."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctx_kernel.kernel import paths
from tests.conftest import run_ctx_process

SECRET = "s3cret-Pw"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with .ctx/ and a subfolder; commands run from the subfolder."""
    root = tmp_path / "project"
    (root / ".ctx").mkdir(parents=True)
    (root / "src" / "pkg").mkdir(parents=True)
    monkeypatch.chdir(root / "src" / "pkg")
    return root


def write_config(project: Path, text: str) -> Path:
    config = project / ".ctx" / "config.toml"
    config.write_text(text, encoding="utf-8")
    return config


def one_line_error(result, code: int = 2) -> str:  # type: ignore[no-untyped-def]
    assert result.code == code, result
    assert result.out == ""
    assert result.err.count("\n") == 1 and result.err.startswith("ctx: error: "), result.err
    assert "Traceback" not in result.err
    return result.err


def test_a_sqlite_store_named_in_the_config_is_relative_to_the_config_folder(
    cli, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(project, 'db = "sqlite:team.db"\n')
    store = project / ".ctx" / "team.db"
    monkeypatch.chdir(project)  # a teammate's first `ctx init` in the project creates the named store
    assert cli("allow", "--yes", db=False).code == 0
    created = cli("init", db=False)
    assert created.code == 0 and created.out.strip() == f"created {store}", created
    monkeypatch.chdir(project / "src" / "pkg")
    assert store.is_file() and not (project / ".ctx" / "ctx.db").exists()
    assert cli("path", db=False).out.strip() == str(store)
    ev = cli("log", "kept in the team file", db=False).out.strip()
    assert cli("show", ev, "--db", str(store), db=False).code == 0


def test_the_config_outranks_the_folders_ctx_db_and_yields_to_ctx_db_env_and_the_option(
    cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cli("--db", str(project / ".ctx" / "ctx.db"), "init", db=False).code == 0
    write_config(project, 'db = "other.db"\n')
    assert cli("allow", "--yes", db=False).code == 0
    assert cli("path", db=False).out.strip() == str(project / ".ctx" / "other.db")
    monkeypatch.setenv("CTX_DB", str(tmp_path / "env.db"))
    assert cli("path", db=False).out.strip() == str(tmp_path / "env.db")
    assert cli("path", "--db", str(tmp_path / "opt.db"), db=False).out.strip() == str(tmp_path / "opt.db")


def test_a_nearer_projects_store_wins_over_a_config_further_up(cli, project: Path) -> None:
    write_config(project, 'db = "sqlite:team.db"\n')
    inner = project / "src" / ".ctx" / "ctx.db"
    assert cli("--db", str(inner), "init", db=False).code == 0
    assert cli("path", db=False).out.strip() == str(inner)


def test_a_config_without_db_falls_through_to_the_store_file(cli, project: Path) -> None:
    write_config(project, "# settings for later\n[review]\ncolour = true\n")
    assert cli("--db", str(project / ".ctx" / "ctx.db"), "init", db=False).code == 0
    assert cli("path", db=False).out.strip() == str(project / ".ctx" / "ctx.db")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('db = "postgresql://db/team\n', "cannot read"),
        ("db = [1, 2]\n", "db must be a string"),
        ('db = ""\n', "db must be a string"),
        ("db = 5\n", "db must be a string"),
        (f'db = "mysql://ctx:{SECRET}@db/team"\n', "unknown store scheme mysql"),
        (b"db = '\xff'\n", "cannot read"),
    ],
)
def test_a_bad_config_is_one_line_naming_the_file(
    cli, project: Path, text: str | bytes, expected: str
) -> None:
    config = project / ".ctx" / "config.toml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        write_config(project, text)
    for command in (("path",), ("queue",), ("init",), ("status",)):
        err = one_line_error(cli(*command, db=False))
        assert expected in err and str(config) in err and SECRET not in err


def test_a_password_in_the_config_is_refused_and_never_shown(cli, project: Path) -> None:
    config = write_config(project, f'db = "postgresql://ctx:{SECRET}@db.example:5432/team?sslmode=require"\n')
    for command in (
        ("path",),
        ("queue",),
        ("status",),
        ("allow", "--yes"),
        ("admin", "grant-agent", "bob", "--run"),
    ):
        err = one_line_error(cli(*command, db=False))
        assert str(config) in err and "may not choose who connects" in err, (command, err)
        assert "PGPASSWORD" in err and "~/.pgpass" in err and "PGSERVICE" in err and SECRET not in err


def test_the_hook_and_mcp_never_show_a_password_of_the_location(tmp_path: Path) -> None:
    url = f"postgresql://ctx:{SECRET}@127.0.0.1:1/team"
    payload = b'{"hook_event_name": "SessionStart"}'
    hook = run_ctx_process("--db", url, "hook", "session-start", stdin=payload, cwd=tmp_path)
    assert hook.returncode == 0 and SECRET.encode() not in hook.stdout + hook.stderr
    served = run_ctx_process("mcp", "--db", url, stdin=b"", cwd=tmp_path)
    assert SECRET.encode() not in served.stdout + served.stderr and b"Traceback" not in served.stderr
    assert b"cannot connect to postgresql://ctx@127.0.0.1:1/team" in served.stderr


def test_a_password_in_a_location_never_reaches_the_terminal(cli, tmp_path: Path) -> None:
    url = f"postgresql://ctx:{SECRET}@127.0.0.1:1/team"
    for command in ("path", "init", "queue", "status", "doctor"):
        result = cli("--db", url, command, db=False)
        assert SECRET not in result.out + result.err, (command, result)
    other = cli("--db", f"mysql://ctx:{SECRET}@db/team", "queue", db=False)
    assert "unknown store scheme mysql" in one_line_error(other) and SECRET not in other.err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"postgresql://ctx:{SECRET}@db/team", "postgresql://ctx:***@db/team"),
        (
            f"postgres+psycopg://ctx:{SECRET}@db:5432/t?sslmode=require",
            "postgres+psycopg://ctx:***@db:5432/t",
        ),
        (f"postgresql://ctx:p@ss{SECRET}@db/team", "postgresql://ctx:***@db/team"),
        (
            f"postgresql://db/team?sslmode=require&password={SECRET}",
            "postgresql://db/team?sslmode=require&password=***",
        ),
        (f"host=db password={SECRET} dbname=team", "host=db password=*** dbname=team"),
        (f"host=db password = '{SECRET} x' dbname=team", "host=db password = *** dbname=team"),
        (f"host=db sslpassword={SECRET}", "host=db sslpassword=***"),
        (f"failed at postgresql:/ctx:{SECRET}@db/team, giving up", "failed at postgresql:/ctx:***@db/team"),
    ],
)
def test_redact_hides_every_password_form(text: str, expected: str) -> None:
    assert expected in paths.redact(text) and SECRET not in paths.redact(text)


def test_redact_leaves_ordinary_text_alone() -> None:
    for text in ("postgresql://ctx@db/team", "/home/a:b@c/ctx.db", "mailto:a@b", "no password here"):
        assert paths.redact(text) == text


def test_the_shared_form_of_a_url_keeps_host_database_and_options_only() -> None:
    url = f"postgresql://admin:{SECRET}@db.example:6543/team?sslmode=verify-full&password={SECRET}"
    assert paths.shared_url(url) == "postgresql://db.example:6543/team?sslmode=verify-full"
    assert paths.display_location(url) == "postgresql://db.example:6543/team?sslmode=verify-full"
