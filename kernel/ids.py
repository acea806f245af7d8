"""Record ids: time-sortable ULIDs with a kind prefix (``ev_``, ``pr_``, ``dc_``), checked,
abbreviated and resolved as a person types them."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable, Sequence

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


def check_id(value: str, kind: str | None = None) -> str:
    """Return a well-formed id (upper-cased body) or raise a usage error naming the problem."""
    text = value.strip()
    prefix, _, body = text.partition("_")
    text = f"{prefix.lower()}_{body.upper()}"
    if not ID_RE.match(text):
        raise UsageError(f"malformed id {value!r}: {ACCEPTED}")
    if kind is not None and ID_PREFIXES[text[:2]] != kind:
        raise UsageError(f"{value!r} is a {ID_PREFIXES[text[:2]]} id, not a {kind} id")
    return text


# A handle is the shortest end of an id, this long or longer, that no other record's id ends with:
# ids start with their creation time, so records made together share long starts, while their
# ends are random (80 bits). The store indexes each id's last MIN_HANDLE characters.
MIN_HANDLE = 4
ACCEPTED = (
    "give an id (pr_01M8D74N...), its start (pr_01M8D7, four or more characters after the "
    "underscore) or its handle (the end of it that lists print, e.g. 3WCX)"
)
_BODY_RE = re.compile(rf"^[0-9A-HJKMNP-TV-Z]{{{MIN_HANDLE},26}}$")
# Ends asked for in one query (SQLite allows 32,766 parameters; each end is asked of three tables).
_TAILS_PER_QUERY = 500
# Crockford base32 reads I and L as 1 and O as 0, so a handle copied by eye still resolves.
_READ_AS = str.maketrans("ILO", "110")


def handle_of(record_id: str, sharing: Iterable[str]) -> str:
    """The shortest end of ``record_id`` (``MIN_HANDLE`` characters or more) that none of the ids
    in ``sharing`` ends with; the whole id when another kind's id has the same body."""
    body = record_id[3:]
    others = [other[3:] for other in sharing if other != record_id]
    for length in range(MIN_HANDLE, len(body) + 1):
        end = body[-length:]
        if not any(other.endswith(end) for other in others):
            return end
    return record_id


def handles(record_ids: Iterable[str], ids_ending: Callable[[Sequence[str]], list[str]]) -> dict[str, str]:
    """Each id's handle; ``ids_ending(tails)`` lists every stored id whose last ``MIN_HANDLE``
    characters are one of ``tails`` (one indexed query for the whole list)."""
    wanted = list(dict.fromkeys(record_ids))
    tails = sorted({i[-MIN_HANDLE:] for i in wanted})
    by_tail: dict[str, list[str]] = {}
    for start in range(0, len(tails), _TAILS_PER_QUERY):
        for found in ids_ending(tails[start : start + _TAILS_PER_QUERY]):
            by_tail.setdefault(found[-MIN_HANDLE:], []).append(found)
    return {i: handle_of(i, by_tail.get(i[-MIN_HANDLE:], ())) for i in wanted}


def resolve_id(
    value: str,
    kind: str | None,
    ids_with_prefix: Callable[[str, int], list[str]],
    ids_ending: Callable[[Sequence[str]], list[str]],
) -> str:
    """The id ``value`` names: a whole id, the start of one (``pr_01M8Q``: four or more characters
    after the underscore, as git abbreviates commits; with or without the kind), or its handle
    (an end of it, ``3WCX``, with or without the kind). An ambiguous value lists what it names.

    ``ids_with_prefix(prefix, limit)`` lists the stored ids that start with ``prefix``;
    ``ids_ending(tails)`` those whose last ``MIN_HANDLE`` characters are one of ``tails``.
    """
    try:
        return check_id(value, kind)
    except UsageError:
        pass
    kinds, body = _parse(value, kind)
    if kind is not None and not kinds:
        raise UsageError(f"{value!r} is a {ID_PREFIXES[value.strip()[:2].lower()]} id, not a {kind} id")
    starts = [i for k in kinds for i in ids_with_prefix(f"{k}_{body}", 6)] if len(body) < 26 else []
    ends = [i for i in ids_ending([body[-MIN_HANDLE:]]) if i[3:].endswith(body)]
    found = sorted(set(starts) | {i for i in ends if i[:2] in kinds})
    if len(found) == 1:
        return found[0]
    shown = value.strip()
    if not found:
        what = kind or (ID_PREFIXES[kinds[0]] if len(kinds) == 1 else "record")
        elsewhere = [i for i in ends if i[:2] not in kinds]
        also = (
            f" ({shown} is the handle of {ID_PREFIXES[elsewhere[0][:2]]} {elsewhere[0]})" if elsewhere else ""
        )
        raise NotFoundError(f"no {what} with an id starting or ending {shown}{also}")
    named = handles(found[:5], ids_ending)
    listed = ", ".join(f"{i} ({named[i]})" for i in found[:5])
    more = ", ..." if len(found) > 5 else ""
    raise UsageError(f"{shown} is ambiguous: it names {listed}{more}; give more of it")


def _parse(value: str, kind: str | None) -> tuple[list[str], str]:
    """The kinds ``value`` may name (its ``ev_``/``pr_``/``dc_``, else every kind, narrowed to
    ``kind``) and its body, upper-cased; a usage error saying what is accepted when it is neither."""
    text = value.strip()
    prefix, underscore, rest = text.partition("_")
    if underscore and prefix.lower() in ID_PREFIXES:
        kinds, body = [prefix.lower()], rest
    elif not underscore:
        kinds, body = list(ID_PREFIXES), text
    else:
        raise UsageError(f"malformed id {value!r}: {ACCEPTED}")
    body = body.upper().translate(_READ_AS)
    if not _BODY_RE.match(body):
        raise UsageError(f"malformed id {value!r}: {ACCEPTED}")
    return [k for k in kinds if kind is None or ID_PREFIXES[k] == kind], body
