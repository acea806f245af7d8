"""Giving people and agents their group role (``ctx admin grant-*``): the script, and running it.

A login joins exactly one of the groups of :mod:`.roles`. The statements are composed with
:mod:`psycopg.sql`, so a role name is always a quoted identifier and a password a literal; the
password itself never reaches the server in clear text: libpq hashes it (SCRAM-SHA-256) on the
client first, so it shows in no server log.
"""

from __future__ import annotations

import psycopg
from psycopg import errors, sql

from ctx_kernel.kernel import text
from ctx_kernel.kernel.errors import RefusedError, UsageError
from ctx_kernel.kernel.store.postgres import roles

GRANTS = {"agent": roles.grant_agent, "reviewer": roles.grant_reviewer, "auditor": roles.grant_auditor}
GROUP_OF = {"agent": roles.AGENT, "reviewer": roles.REVIEWER, "auditor": roles.AUDITOR}

# PostgreSQL truncates a longer identifier to NAMEDATALEN - 1 bytes: two names would become one.
MAX_ROLE_BYTES = 63
# Names CREATE ROLE refuses, and the groups themselves (a group inside itself is a loop).
RESERVED = {"public", "none", "current_user", "session_user", "current_role", *roles.GROUPS}


def check_login_name(name: str) -> str:
    """``name`` when it can be a login role's name; a UsageError naming what is wrong."""
    text.refuse_hidden(name, "role name")
    if not name or name != name.strip():
        raise UsageError("a role name is not empty and has no leading or trailing spaces")
    if "\n" in name or "\t" in name or "\x00" in name:
        raise UsageError("a role name has no line breaks, tabs or NUL characters")
    if len(name.encode("utf-8")) > MAX_ROLE_BYTES:
        raise UsageError(f"a role name is at most {MAX_ROLE_BYTES} bytes (PostgreSQL would cut it short)")
    if name.lower().startswith("pg_"):
        raise UsageError("role names starting with pg_ are reserved by PostgreSQL")
    if name.lower() in RESERVED:
        raise UsageError(f"{name} is reserved: give the name of a person's or an agent's own login")
    return name


def grant_statements(
    role: str, login: str, *, create_login: bool = False, password_hash: str | None = None
) -> list[sql.Composed]:
    """The statements that make ``login`` a member of ``role``'s group (and of no other ctx group)."""
    if role not in GRANTS:
        raise UsageError(f"unknown role {role}: agent, reviewer or auditor")
    check_login_name(login)
    statements: list[sql.Composed] = []
    if create_login:
        create = sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(login))
        if password_hash is not None:
            create = sql.SQL("{} PASSWORD {}").format(create, sql.Literal(password_hash))
        statements.append(create)
    return [*statements, *GRANTS[role](login)]


def grant_script(role: str, login: str, *, create_login: bool = False) -> str:
    """The grant as a script an administrator can read, then run with psql in the store's database."""
    statements = grant_statements(role, login, create_login=create_login)
    lines = [
        f"-- ctx: make {login!r} a{'n' if role[0] in 'aeiou' else ''} {role} ({GROUP_OF[role]})",
        "-- run it as the store's owner in the store's database: psql \"$URL\" -f FILE",
    ]
    if create_login:
        lines.append(
            "-- the login has no password: use peer or certificate authentication, or set one "
            "with \\password in psql"
        )
    lines.append("BEGIN;")
    lines += [f"{statement.as_string(None)};" for statement in statements]
    lines.append("COMMIT;")
    return "\n".join(lines) + "\n"


def run_grant(
    conn: psycopg.Connection[tuple[object, ...]],
    role: str,
    login: str,
    *,
    create_login: bool = False,
    password: str | None = None,
) -> None:
    """Carry the grant out on ``conn`` (the administrator's), in one transaction."""
    if password is not None and not create_login:
        raise UsageError("a password goes with --create-login")
    password_hash = None
    if password is not None:
        password_hash = conn.pgconn.encrypt_password(password.encode(), login.encode()).decode()
    statements = grant_statements(role, login, create_login=create_login, password_hash=password_hash)
    try:
        with conn.transaction():
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (login,)).fetchone()
            if create_login and exists:
                raise RefusedError(f"role {login!r} exists already: grant it without --create-login")
            if not create_login and not exists:
                raise RefusedError(
                    f"no role {login!r} on the server: create it first, or pass --create-login"
                )
            for statement in statements:
                conn.execute(statement)
    except errors.InsufficientPrivilege as exc:
        raise RefusedError(
            f"the server refused the grant ({_first_line(exc)}): run it as the store's owner, with CREATEROLE"
        ) from exc
    except psycopg.Error as exc:
        raise RefusedError(f"the server refused the grant: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
