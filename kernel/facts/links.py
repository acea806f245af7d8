"""What a decision governs: links to paths and globs in the repository, checked before they are kept.

A link is a path or a glob relative to the repository's root (``kernel/store/**``,
``pyproject.toml``), optionally naming a symbol defined there (``kernel/store/base.py#Store``).
Links come from agents, so each is checked as hostile input: it never leaves the repository
(no absolute path, no drive, no ``..``), holds no control character, and is bounded in length and
in number. Pure string checks: ``ctx propose`` loads this module, so it imports nothing heavy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ctx_kernel.kernel.errors import UsageError
from ctx_kernel.kernel.text import visible

# A link is a line a person reads in a plan; a decision governs a few areas of code, not a tree.
MAX_LINK_CHARS = 300
MAX_LINKS = 50
# A symbol is a name a language defines: dotted for a method (``Store.open``).
_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_DRIVE = re.compile(r"^[A-Za-z]:")


def split_link(link: str) -> tuple[str, str | None]:
    """A link's path or glob and the symbol it names (None without ``#``)."""
    pattern, hashed, symbol = link.partition("#")
    return pattern, symbol if hashed else None


def check_link(raw: str) -> str:
    """``raw`` as a link kept with a proposal (``./`` dropped, slashes single), or a UsageError
    naming why it cannot be one."""
    link = raw.strip()
    shown = visible(link[:80])
    if not link:
        raise UsageError("a link is empty: give a path or glob relative to the repository root")
    if len(link) > MAX_LINK_CHARS:
        raise UsageError(f"link {shown}... is longer than {MAX_LINK_CHARS} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in link):
        raise UsageError(f"link {shown!r} holds a control character")
    pattern, symbol = split_link(link)
    if symbol is not None and not _SYMBOL.match(symbol):
        raise UsageError(f"link {shown!r} names no symbol after #: use path#Name or path#Class.method")
    if "," in link:  # an ADR file lists a decision's links comma separated (ctx-links)
        raise UsageError(f"link {shown!r} holds a comma: give each path or glob as a link of its own")
    if "\\" in pattern:
        raise UsageError(f"link {shown!r} uses a backslash: write paths with / as git does")
    if pattern.startswith("/") or _DRIVE.match(pattern) or pattern.startswith("~"):
        raise UsageError(f"link {shown!r} is absolute: give a path relative to the repository root")
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UsageError(f"link {shown!r} leaves the repository (..): give a path inside it")
    if not parts:
        raise UsageError(f"link {shown!r} names no path: give a path or glob inside the repository")
    if parts[0] == ".git":
        raise UsageError(f"link {shown!r} points into .git: link the files a decision governs")
    normal = "/".join(parts) + ("/" if pattern.endswith("/") else "")
    return normal if symbol is None else f"{normal}#{symbol}"


# What prose names that may be a path: a file name ends in a short lower-case extension.
_EXTENSION = re.compile(r"[^/.]\.[a-z][a-z0-9]{0,9}$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:|^//|^www\.")
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")


def looks_like_path(text: str) -> bool:
    """Whether a name found in prose (an ADR's code span) reads as a repository path or glob: it holds
    a ``/`` or ends in a file extension, has no space, and is no URL and no commit hash. Such a name
    is kept only if :func:`check_link` takes it too; ``doc-detective-core`` or ``1595353`` is not
    a path."""
    pattern = split_link(text)[0]
    if not pattern or any(c.isspace() for c in text) or _URL.match(text) or _COMMIT.match(pattern):
        return False
    return "/" in pattern or _EXTENSION.search(pattern) is not None


def check_links(raw: Sequence[str]) -> list[str]:
    """``raw`` checked (:func:`check_link`), duplicates dropped, order kept; at most MAX_LINKS."""
    links = list(dict.fromkeys(check_link(r) for r in raw))
    if len(links) > MAX_LINKS:
        raise UsageError(f"{len(links)} links: a proposal names at most {MAX_LINKS}")
    return links


# The longest review interval: ten years (a longer one is a typo, not a plan).
MAX_REVIEW_DAYS = 3_650
_EVERY = re.compile(r"^\s*(\d+)\s*([dwmy]?)\s*$")
_DAYS_PER = {"": 1, "d": 1, "w": 7, "m": 30, "y": 365}


def check_review(review_by: str | None, review_every: str | int | None) -> tuple[str | None, int | None]:
    """A review date (YYYY-MM-DD) and an interval in days (``90``, ``90d``, ``12w``, ``6m``, ``1y``),
    checked; a UsageError naming what is wrong."""
    from datetime import date  # noqa: PLC0415 - only when a review date is given

    day = None
    if review_by is not None:
        try:
            day = date.fromisoformat(review_by.strip()).isoformat()
        except ValueError:
            raise UsageError(f"review date {visible(review_by[:40])!r} is not a date (YYYY-MM-DD)") from None
    days = None
    if review_every is not None:
        found = _EVERY.match(str(review_every).lower())
        if found is None:
            raise UsageError(
                f"review interval {visible(str(review_every)[:40])!r} is not a number of days "
                "(90d, 12w, 6m, 1y)"
            )
        days = int(found.group(1)) * _DAYS_PER[found.group(2)]
        if not 1 <= days <= MAX_REVIEW_DAYS:
            raise UsageError(f"review interval of {days} days: give 1 to {MAX_REVIEW_DAYS} days")
    return day, days
