"""Symbol links (``path#Name``, ``path#Class.method``): the definition a decision governs, found in
a file's text by its name, digested on its own, and looked for elsewhere when it moved.

Definitions are found by the keywords most languages use to introduce one (``class``, ``def``,
``function``, ``fn``, ``func``, ``struct``, ``interface``, ``type``, ``enum``, ``trait``) and end
where the text returns to the definition's indentation: exact for Python, close enough for a digest
in brace languages (the closing brace's line is left out, the same way every time).
"""

from __future__ import annotations

import hashlib
import re

_KEYWORDS = r"(?:async\s+def|def|class|function|fn|func|struct|interface|type|enum|trait|impl)"


def _start(lines: list[str], name: str, begin: int, end: int, indent: int | None) -> int | None:
    pattern = re.compile(
        rf"^(\s*)(?:export\s+|pub\s+|public\s+|private\s+|static\s+)*{_KEYWORDS}\s+{re.escape(name)}\b"
    )
    for number in range(begin, end):
        found = pattern.match(lines[number])
        if found and (indent is None or len(found.group(1)) > indent):
            return number
    return None


def _end(lines: list[str], start: int) -> int:
    indent = len(lines[start]) - len(lines[start].lstrip())
    number = start + 1
    while number < len(lines):
        line = lines[number]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        number += 1
    while number > start + 1 and not lines[number - 1].strip():
        number -= 1
    return number


def definition(text: str, symbol: str) -> str | None:
    """The lines defining ``symbol`` (dotted for a member) in ``text``, or None when it is not there."""
    lines = text.splitlines()
    begin, end, indent = 0, len(lines), None
    start = None
    for part in symbol.split("."):
        start = _start(lines, part, begin, end, indent)
        if start is None:
            return None
        indent = len(lines[start]) - len(lines[start].lstrip())
        begin, end = start, _end(lines, start)
    assert start is not None
    return "\n".join(line.rstrip() for line in lines[begin:end])


def digest(text: str, symbol: str) -> str | None:
    """sha256 of the symbol's definition, or None when the text does not define it."""
    found = definition(text, symbol)
    return None if found is None else hashlib.sha256(found.encode("utf-8", "surrogateescape")).hexdigest()


def grep_pattern(symbol: str) -> str:
    """An extended regex `git grep` finds the symbol's (outermost) definition with."""
    # POSIX extended syntax: no (?:...) and no \s.
    keywords = "async[[:space:]]+def|def|class|function|fn|func|struct|interface|type|enum|trait|impl"
    return rf"({keywords})[[:space:]]+{re.escape(symbol.split('.', maxsplit=1)[0])}\b"
