"""Record ids: time-sortable ULIDs with a kind prefix (``ev_``, ``pr_``, ``dc_``), checked,
abbreviated and resolved as a person types them."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

from ctx_kernel.kernel.errors import NotFoundError, UsageError

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_PREFIXES = {"ev": "evidence", "pr": "proposal", "dc": "decision"}
ID_RE = re.compile(r"^(ev|pr|dc)_[0-9A-HJKMNP-TV-Z]{26}$")
_last_ulid: tuple[int, int] = (0, 0)


def new_id(prefix: str) -> str:
    """A ULID with a kind prefix (``ev_``, ``pr_``, ``dc_``): sortable by creation time.

    Generated here rather than with python-ulid, whose import costs ~100 ms on the
    ``ctx log`` / ``ctx propose`` hot path; the format is the ULID spec's
    (48-bit millisecond time, 80 random bits, Crockford base32), monotonic per process.
    """
    global _last_ulid
    millis = time.time_ns() // 1_000_000
    last_ms, last_rand = _last_ulid
    rand = last_rand + 1 if millis <= last_ms else int.from_bytes(os.urandom(10), "big")
    millis = max(millis, last_ms)
    _last_ulid = (millis, rand)
    value = (millis << 80) | (rand & ((1 << 80) - 1))
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


# A git-style abbreviation: the kind's prefix and at least this many characters of the id's body.
MIN_ID_PREFIX = 4
_ID_PREFIX_RE = re.compile(rf"^(ev|pr|dc)_[0-9A-HJKMNP-TV-Z]{{{MIN_ID_PREFIX},25}}$")


def id_prefix(value: str, kind: str | None = None) -> str | None:
    """``value`` normalised as the start of an id of ``kind`` (``pr_01M8``), or None if it is not one."""
    prefix, _, body = value.strip().partition("_")
    text = f"{prefix.lower()}_{body.upper()}"
    if not _ID_PREFIX_RE.match(text) or (kind is not None and ID_PREFIXES[text[:2]] != kind):
        return None
    return text


def check_id(value: str, kind: str | None = None) -> str:
    """Return a well-formed id (upper-cased body) or raise a usage error naming the problem."""
    text = value.strip()
    prefix, _, body = text.partition("_")
    text = f"{prefix.lower()}_{body.upper()}"
    if not ID_RE.match(text):
        raise UsageError(f"malformed id {value!r}: expected ev_, pr_ or dc_ followed by 26 characters")
    if kind is not None and ID_PREFIXES[text[:2]] != kind:
        raise UsageError(f"{value!r} is a {ID_PREFIXES[text[:2]]} id, not a {kind} id")
    return text


def resolve_id(value: str, kind: str | None, ids_with_prefix: Callable[[str, int], list[str]]) -> str:
    """A full id, or the one id that starts with ``value`` (``pr_01M8Q`` for ``pr_01M8Q...``,
    at least four characters after the underscore, as git abbreviates commits).

    ``ids_with_prefix(prefix, limit)`` lists the stored ids that start with ``prefix``.
    """
    try:
        return check_id(value, kind)
    except UsageError:
        prefix = id_prefix(value, kind)
        if prefix is None:
            raise
    found = ids_with_prefix(prefix, 6)
    if not found:
        raise NotFoundError(f"no {kind or ID_PREFIXES[prefix[:2]]} with an id starting {prefix}")
    if len(found) > 1:
        more = ", ..." if len(found) > 5 else ""
        raise UsageError(
            f"{prefix} is ambiguous: it starts {', '.join(found[:5])}{more}; give more of the id"
        )
    return found[0]
