"""The look-alike table a PostgreSQL store checks new subjects with, as shipped in ``lookalikes.txt``.

The facade keys a subject by :func:`ctx_kernel.kernel.text.lookalike_key` (the TR39 skeleton with
combining marks off, from ``disarm``). The server cannot run that code, so revision p006 loads
this table: each letter, digit or mark whose key is not itself, with its key. ``ctx_lookalike``
decomposes a subject, replaces each character by its key and composes the result, which equals
the facade's key for subjects of single-character confusables (a test holds the two together).

The file is written once per revision (``python -m ctx_kernel.kernel.store.postgres.lookalikes``)
and never changes after it ships: a new table is a new revision. Each line is a source code point
and its key's code points, in hexadecimal, so that no invisible character sits in the file.
"""

from __future__ import annotations

import hashlib
import sys
import unicodedata
from functools import cache
from pathlib import Path

TABLE = Path(__file__).resolve().parent / "lookalikes.txt"


def build() -> list[tuple[str, str]]:
    """Every letter, digit or mark of this Python's Unicode whose look-alike key is not itself."""
    from ctx_kernel.kernel.text import lookalike_key  # noqa: PLC0415 - only to write the file

    rows = []
    for code in range(0x80, sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.category(char)[0] in "LNM" and (key := lookalike_key(char)) != char:
            rows.append((char, key))
    return rows


def render(rows: list[tuple[str, str]]) -> str:
    """The file's text: a header naming the Unicode version, then one line per row."""
    lines = [f"# unicode {unicodedata.unidata_version}"]
    lines += [" ".join([f"{ord(source):x}", *(f"{ord(c):x}" for c in key)]) for source, key in rows]
    return "\n".join(lines) + "\n"


@cache
def shipped() -> tuple[str, list[tuple[str, str]]]:
    """The Unicode version the file was written with, and its rows."""
    header, *lines = TABLE.read_text(encoding="ascii").splitlines()
    rows = []
    for line in lines:
        source, *key = line.split(" ")
        rows.append((chr(int(source, 16)), "".join(chr(int(c, 16)) for c in key)))
    return header.removeprefix("# unicode "), rows


def digest(rows: list[tuple[str, str]]) -> str:
    """What verify compares with the server's copy: md5 over the rows in code point order."""
    body = "\n".join(f"{source}\t{key}" for source, key in sorted(rows, key=lambda r: r[0].encode("utf-8")))
    return hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest()


def insert_statement() -> str:
    """One INSERT of every shipped row (a key may be a quote: U+02BC looks like ')."""
    values = ", ".join(f"({_literal(source)}, {_literal(key)})" for source, key in shipped()[1])
    return f"INSERT INTO ctx_lookalike_char (source, target) VALUES {values}"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


if __name__ == "__main__":
    TABLE.write_text(render(build()), encoding="ascii")
    print(f"wrote {TABLE.name}: {len(shipped.__wrapped__()[1])} rows")
