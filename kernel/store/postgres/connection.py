"""Connecting to a PostgreSQL store, naming it without its password, and checking its schema.

A store's URL may hold a password, so nothing here ever prints it: a store is named by
:func:`describe` (user, host, port and database), and a driver message that happens to quote the
password has it masked. Credentials come from the URL or from libpq's own sources (PGPASSWORD,
~/.pgpass, PGSERVICE), which libpq reads whenever the URL leaves them out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from ctx_kernel.kernel.errors import StoreError, UsageError
from ctx_kernel.kernel.store.postgres import lookalikes, roles, schema

# The Alembic revision at head (kernel/store/postgres/migrations/versions) and its number.
HEAD_REVISION = "p011_reconfirm_requests"
HEAD_VERSION = int(HEAD_REVISION[1:4])
_REVISION = re.compile(r"^p(\d{3})_\w+$")
# How long connecting may take before ctx gives up (libpq waits forever by default).
CONNECT_TIMEOUT = 10


def _parts(url: str) -> dict[str, Any]:
    try:
        return conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise UsageError("the PostgreSQL URL is malformed: postgresql://[user@]host[:port]/dbname") from exc


def describe(url: str) -> str:
    """The store as people see it: ``postgresql://user@host:port/dbname``, never with a password.

    A socket folder and a service name (pg_service.conf) go in the query, as libpq reads them.
    """
    parts = _parts(url)
    user = str(parts.get("user") or "")
    host = str(parts.get("host") or "")
    port = str(parts.get("port") or "")
    query: list[str] = []
    if host.startswith("/"):  # a socket folder: no place in a URL's authority
        query.append(f"host={host}")
        host = ""
        if port:
            query.append(f"port={port}")
            port = ""
    if parts.get("service"):
        query.append(f"service={parts['service']}")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    authority = f"{user}@" if user else ""
    authority += host + (f":{port}" if port else "")
    return f"postgresql://{authority}/{parts.get('dbname') or ''}" + (f"?{'&'.join(query)}" if query else "")


def first_line(exc: BaseException) -> str:
    """The first line of a driver message (PostgreSQL adds DETAIL and HINT lines)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _masked(url: str, text: str) -> str:
    try:
        password = conninfo_to_dict(url).get("password")
    except psycopg.ProgrammingError:
        return "(the driver's message is withheld: it may quote the URL)"
    return text.replace(str(password), "***") if password else text


def store_error(location: str, exc: BaseException) -> StoreError:
    """A driver error as one line naming the store (by :func:`describe`, never its URL)."""
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StoreError(f"store {location}: this login may not do that ({first_line(exc)})")
    return StoreError(f"store {location}: {first_line(exc)}")


def connect(url: str) -> psycopg.Connection[Any]:
    """An autocommit connection (transactions are explicit) in UTC, or a one-line StoreError."""
    where = describe(url)
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to {where}: {_masked(url, first_line(exc))}") from exc
    conn.execute("SET TIME ZONE 'UTC'")
    return conn


def revision(conn: psycopg.Connection[Any]) -> str | None:
    """The Alembic revision the database is at, or None when it has no ctx schema."""
    if conn.execute("SELECT to_regclass('alembic_version')").fetchone() == (None,):
        return None
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return str(row[0]) if row else None


def has_tables(conn: psycopg.Connection[Any]) -> bool:
    """True when the current schema holds any table (ctx's or another application's)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relkind IN ('r', 'p', 'v', 'm'))"
    ).fetchone()
    return bool(row and row[0])


def schema_state(conn: psycopg.Connection[Any], location: str) -> str | None:
    """The revision of a ctx database, None for an empty one; StoreError for another application's."""
    found = revision(conn)
    if found is None:
        if has_tables(conn):
            raise StoreError(f"{location} holds other tables but no ctx store: ctx will not touch it")
        return None
    if not _REVISION.match(found):
        raise StoreError(
            f"{location} holds a schema of another application (revision {found}): ctx will not touch it"
        )
    return found


def check_current(conn: psycopg.Connection[Any], location: str) -> None:
    """Refuse, in one line, a database without a ctx store or with a schema of another version.

    Opening never migrates: the role that opens a shared store is seldom the tables' owner, and an
    upgrade is the administrator's to run.
    """
    try:
        found = schema_state(conn, location)
    except psycopg.errors.InsufficientPrivilege as exc:
        # Every ctx group reads the revision: a login that may not is in none of them.
        raise StoreError(
            f"store {location}: this login is in no ctx group ({', '.join(roles.GROUPS)}) and may "
            f"read nothing: the administrator grants it one ({first_line(exc)})"
        ) from exc
    except psycopg.Error as exc:
        raise store_error(location, exc) from exc
    if found is None:
        raise StoreError(f"no ctx store in {location}: the administrator runs `ctx init --db <url>` first")
    number = int(found[1:4])
    if number < HEAD_VERSION:
        raise StoreError(
            f"store {location} has schema {found}, older than this ctx ({HEAD_REVISION}): "
            "the administrator must run `ctx init --db <url>` to upgrade it"
        )
    if number > HEAD_VERSION:
        raise StoreError(
            f"store {location} has schema {found}, newer than this ctx ({HEAD_REVISION}): upgrade ctx"
        )


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The number of the revision the database is at (0 without a ctx schema)."""
    found = revision(conn)
    return int(found[1:4]) if found and _REVISION.match(found) else 0


@cache
def _defined(kind: str) -> dict[str, str]:
    """Name -> statement of every function or trigger the schema defines, at head."""
    pattern = re.compile(rf"CREATE (?:OR REPLACE )?{kind} (\w+)")
    found: dict[str, str] = {}
    for statement in _shipped():
        for name in pattern.findall(statement):
            found[name] = statement
    return found


def _body(statement: str) -> str:
    return statement.split("$$")[1]


def invariant_problems(
    conn: psycopg.Connection[Any], expressions: Mapping[tuple[str, str], _Expressions] | None = None
) -> list[str]:
    """What a sound store must have that this one lacks: ctx's triggers present and enabled, its
    functions as this ctx defines them, every constraint validated, and no two windows of a subject
    overlapping (first problem first).

    A DISABLE TRIGGER, a CREATE OR REPLACE FUNCTION or a constraint added NOT VALID turns an
    invariant off without changing a row; the server's page checksums are its own affair.
    """
    problems: list[str] = []
    triggers = dict(
        conn.execute(
            "SELECT t.tgname, t.tgenabled FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal"
        ).fetchall()
    )
    defined_triggers = _defined("TRIGGER")
    for name in sorted(defined_triggers):
        if name not in triggers:
            problems.append(f"trigger {name} is missing")
        elif triggers[name] not in ("O", "A"):
            problems.append(f"trigger {name} is disabled")
    for name in sorted(set(triggers) - set(defined_triggers)):
        problems.append(f"trigger {name} is not one of ctx's")
    bodies = dict(
        conn.execute(
            "SELECT proname, prosrc FROM pg_proc WHERE pronamespace = current_schema()::regnamespace "
            "AND proname LIKE 'ctx\\_%'"
        ).fetchall()
    )
    for name, statement in sorted(_defined("FUNCTION").items()):
        if name not in bodies:
            problems.append(f"function {name} is missing")
        elif bodies[name] != _body(statement):
            problems.append(f"function {name} differs from its definition")
    for (name,) in conn.execute(
        "SELECT conname FROM pg_constraint WHERE connamespace = current_schema()::regnamespace "
        "AND NOT convalidated ORDER BY conname"
    ).fetchall():
        problems.append(f"constraint {name} is not validated")
    problems += security_problems(conn, expressions)
    problems += _lookalike_problems(conn)
    # p003's trigger checks new rows only: a store written before it may hold an empty window that
    # overlaps another by SQLite's rule, which a copy to SQLite would refuse.
    for subject, first, second in conn.execute(_OVERLAPPING_WINDOWS).fetchall():
        problems.append(f"decisions {first} and {second} on {subject} have overlapping windows")
    return problems


def _lookalike_problems(conn: psycopg.Connection[Any]) -> list[str]:
    """The server's look-alike table must be the shipped one: a row changed lets a subject in that
    looks like another."""
    if conn.execute("SELECT to_regclass('ctx_lookalike_char') IS NULL").fetchone() == (True,):
        return []  # a store before p006: its functions are named above
    found = conn.execute(
        "SELECT md5(coalesce(string_agg(source || E'\\t' || target, E'\\n' "
        "ORDER BY convert_to(source, 'UTF8')), '')) FROM ctx_lookalike_char"
    ).fetchone()
    if found is None or found[0] != lookalikes.digest(lookalikes.shipped()[1]):
        return ["the look-alike table ctx_lookalike_char differs from the one ctx ships"]
    return []


def _shipped() -> list[str]:
    """Every statement of the schema at head, in order (the grants and policies of roles.py too)."""
    return [
        *schema.STATEMENTS,
        *roles.STATEMENTS,
        *roles.P002_STATEMENTS,
        *schema.P003_STATEMENTS,
        *schema.P004_STATEMENTS,
        *schema.P005_STATEMENTS,
        *schema.p006_statements(),
        *schema.P007_STATEMENTS,
        *schema.P008_STATEMENTS,
        *schema.P009_STATEMENTS,
        *schema.P010_STATEMENTS,
        *schema.P011_STATEMENTS,
    ]


_POLICY = re.compile(r"CREATE POLICY (\w+) ON (\w+) FOR (\w+) TO ([\w, ]+?)\s+(?:USING|WITH)")
_GRANT = re.compile(r"^GRANT ([A-Z, ]+?) (\([^)]*\) )?ON ([\w, ]+) TO ([\w, ]+)$")
_REVOKE = re.compile(r"^REVOKE ([A-Z, ]+?) ON ([\w, ]+) FROM ([\w, ]+)$")
_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
_COMMANDS = {"r": "SELECT", "a": "INSERT", "w": "UPDATE", "d": "DELETE", "*": "ALL"}


# A policy as shipped: (command, roles, USING, WITH CHECK, the statement that makes it), the
# expressions None when the statement has none.
_Policy = tuple[str, frozenset[str], str | None, str | None, str]
_Expressions = tuple[str | None, str | None]
_EXPRESSION = re.compile(r"(USING|WITH CHECK) \((.*?)\)(?= WITH CHECK|$)")


@cache
def _expected_security() -> tuple[set[str], dict[tuple[str, str], _Policy], set[tuple[str, str, str]]]:
    """From the shipped statements: the tables with row-level security, each policy (table, name)
    -> (command, roles, USING, WITH CHECK, statement), and the privileges (group, table, privilege) granted on
    whole tables or some of their columns."""
    secured: set[str] = set()
    policies: dict[tuple[str, str], _Policy] = {}
    # p001 also lets every group read the revision (its own statement, after Alembic's table exists).
    grants: set[tuple[str, str, str]] = {(group, "alembic_version", "SELECT") for group in roles.GROUPS}
    for statement in _shipped():
        flat = " ".join(statement.split())
        if found := re.match(r"ALTER TABLE (\w+) ENABLE ROW LEVEL SECURITY", flat):
            secured.add(found.group(1))
        if found := _POLICY.search(flat):
            name, table, command, to = found.groups()
            parts = dict(_EXPRESSION.findall(flat[found.end() - 5 :]))
            roles_named = frozenset(r.strip() for r in to.split(","))
            policies[(table, name)] = (
                command,
                roles_named,
                parts.get("USING"),
                parts.get("WITH CHECK"),
                statement,
            )
        if found := _REVOKE.match(flat):
            privileges, tables, groups = found.groups()
            for group in (g.strip() for g in groups.split(",")):
                for table in (t.strip() for t in tables.split(",")):
                    grants.difference_update((group, table, p.strip()) for p in privileges.split(","))
        if found := _GRANT.match(flat):
            privileges, columns, tables, to = found.groups()
            listed = [p.strip() for p in privileges.split(",")]
            if columns:  # "INSERT, UPDATE (value)": the last privilege is on those columns only
                listed[-1] += " (columns)"
            for group in (g.strip() for g in to.split(",")):
                for table in (t.strip() for t in tables.split(",")):
                    grants.update((group, table, privilege) for privilege in listed)
    return secured, policies, grants


def shipped_policy_expressions(url: str) -> dict[tuple[str, str], _Expressions] | None:
    """Each shipped policy's (USING, WITH CHECK) as this server prints them, or None when it cannot
    tell (the login may not make temporary tables).

    The server's printed form varies between versions, so the reference is made by the server
    itself: in a transaction that is rolled back, on a second connection (a verify reads in a
    read-only snapshot), each policy statement runs unchanged against a temporary copy of its
    table, which shadows the real one for unqualified names."""
    statements = {key: policy[4] for key, policy in _expected_security()[1].items()}
    try:
        with connect(url) as conn, conn.transaction(force_rollback=True):
            for table in sorted({table for table, _ in statements}):
                conn.execute(
                    sql.SQL("CREATE TEMP TABLE {} (LIKE {})").format(
                        sql.Identifier(table), sql.Identifier(_schema_of(conn), table)
                    )
                )
            for statement in statements.values():
                conn.execute(statement)  # a shipped statement, not input
            rows = conn.execute(
                "SELECT c.relname, p.polname, pg_get_expr(p.polqual, p.polrelid), "
                "pg_get_expr(p.polwithcheck, p.polrelid) FROM pg_policy p "
                "JOIN pg_class c ON c.oid = p.polrelid WHERE c.relnamespace = pg_my_temp_schema()"
            ).fetchall()
    except (psycopg.Error, StoreError):
        return None
    return {(table, name): (qual, check) for table, name, qual, check in rows}


def _schema_of(conn: psycopg.Connection[Any]) -> str:
    found = conn.execute("SELECT current_schema()").fetchone()
    return str(found[0]) if found and found[0] else "public"


def _loosened(expected: str | None, live: str | None) -> bool:
    """Whether a policy expression the schema makes restrictive now lets every row through."""
    return expected is not None and expected.strip() != "true" and (live or "").strip("() ") == "true"


def security_problems(
    conn: psycopg.Connection[Any], expressions: Mapping[tuple[str, str], _Expressions] | None = None
) -> list[str]:
    """What the security model rests on, as the shipped schema makes it: row-level security on,
    exactly ctx's policies, no privilege ctx never grants to a ctx group, no trigger ctx did not
    make, each function's SECURITY DEFINER flag and pinned search_path, and the unique index and
    exclusion constraint of the decision kernel.

    ``expressions`` are the policies' expressions as this server prints the shipped statements
    (:func:`shipped_policy_expressions`); each live policy must print the same. Without them a
    policy is only checked for having been loosened to ``true``."""
    problems: list[str] = []
    secured, policies, grants = _expected_security()
    tables = {
        name: rls
        for name, rls in conn.execute(
            "SELECT relname, relrowsecurity FROM pg_class "
            "WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'"
        ).fetchall()
    }
    for table in sorted(secured):
        if not tables.get(table, False):
            problems.append(f"row-level security is off on {table}")
    live = {
        (table, name): (_COMMANDS.get(cmd, cmd), frozenset(names), qual, check)
        for table, name, cmd, names, qual, check in conn.execute(
            "SELECT c.relname, p.polname, p.polcmd, "
            "ARRAY(SELECT rolname::text FROM pg_roles WHERE oid = ANY(p.polroles)), "
            "pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid) "
            "FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid "
            "WHERE c.relnamespace = current_schema()::regnamespace"
        ).fetchall()
    }
    for key in sorted(set(live) - set(policies)):
        problems.append(f"policy {key[1]} on {key[0]} is not one of ctx's")
    for key, (command, names, using, checked, _) in sorted(policies.items()):
        if key not in live:
            problems.append(f"policy {key[1]} on {key[0]} is missing")
            continue
        live_command, live_names, qual, check = live[key]
        if expressions is not None and key in expressions:
            changed = expressions[key] != (qual, check)
        else:
            changed = _loosened(using, qual) or _loosened(checked, check)
        if live_command != command or live_names != names or changed:
            problems.append(f"policy {key[1]} on {key[0]} differs from its definition")
    for group, table, privilege in conn.execute(
        "SELECT g, c.relname, p FROM unnest(%s::text[]) g, pg_class c, unnest(%s::text[]) p "
        "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' "
        "AND has_table_privilege(g, c.oid, p) ORDER BY 1, 2, 3",
        (list(roles.GROUPS), list(_PRIVILEGES)),
    ).fetchall():
        if (group, table, privilege) not in grants:
            problems.append(f"{group} may {privilege} {table}, which ctx never grants")
    defined = _defined("FUNCTION")
    for name, definer, config in conn.execute(
        "SELECT proname, prosecdef, proconfig FROM pg_proc "
        "WHERE pronamespace = current_schema()::regnamespace AND proname LIKE 'ctx\\_%'"
    ).fetchall():
        if name not in defined:
            continue
        if definer != ("SECURITY DEFINER" in defined[name]):
            problems.append(f"function {name} has its SECURITY DEFINER flag changed")
        if not any(str(c).startswith("search_path=pg_catalog") for c in config or ()):
            problems.append(f"function {name} has lost its pinned search_path")
    if (
        conn.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = current_schema() "
            "AND indexname = 'ux_decision_current' AND indexdef LIKE 'CREATE UNIQUE INDEX%'"
        ).fetchone()
        is None
    ):
        problems.append("the unique index ux_decision_current (one current decision per subject) is missing")
    if (
        conn.execute(
            "SELECT 1 FROM pg_constraint WHERE connamespace = current_schema()::regnamespace "
            "AND conname = 'decision_no_overlap' AND contype = 'x'"
        ).fetchone()
        is None
    ):
        problems.append("the exclusion constraint decision_no_overlap (windows apart) is missing")
    return problems


# Pairs of decisions whose windows overlap by the predicate of the decision_no_overlap triggers.
_OVERLAPPING_WINDOWS = """SELECT a.subject, a.id, b.id FROM decision a JOIN decision b
    ON b.subject = a.subject AND a.id < b.id
   AND (a.valid_until IS NULL OR a.valid_until > b.valid_from)
   AND (b.valid_until IS NULL OR b.valid_until > a.valid_from)
 ORDER BY a.subject, a.id, b.id LIMIT 5"""


def schema_objects(conn: psycopg.Connection[Any]) -> list[tuple[str, str, str, str | None]]:
    """``(type, name, table, definition)`` of the current schema's tables, indexes, constraints,
    triggers and functions, as the server prints them."""
    rows = conn.execute(
        """SELECT 'table', c.relname, c.relname, NULL FROM pg_class c
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
           UNION ALL
           SELECT 'index', i.indexname, i.tablename, i.indexdef FROM pg_indexes i
             WHERE i.schemaname = current_schema()
           UNION ALL
           SELECT 'constraint', k.conname, c.relname, pg_get_constraintdef(k.oid) FROM pg_constraint k
             JOIN pg_class c ON c.oid = k.conrelid WHERE k.connamespace = current_schema()::regnamespace
           UNION ALL
           SELECT 'trigger', t.tgname, c.relname, pg_get_triggerdef(t.oid) FROM pg_trigger t
             JOIN pg_class c ON c.oid = t.tgrelid
             WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
           UNION ALL
           SELECT 'function', p.proname, '', pg_get_functiondef(p.oid) FROM pg_proc p
             WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind = 'f'
           ORDER BY 1, 2"""
    ).fetchall()
    return [(r[0], r[1], r[2], r[3]) for r in rows]
