"""Timestamps and time-sortable ids.

Timestamps are ISO 8601 UTC strings with microseconds and a ``Z`` suffix, so that
string order is time order in SQL and in Python.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime, timedelta

from kernel.errors import UsageError

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ID_PREFIXES = {"ev": "evidence", "pr": "proposal", "dc": "decision"}
ID_RE = re.compile(r"^(ev|pr|dc)_[0-9A-HJKMNP-TV-Z]{26}$")

_last_ulid: tuple[int, int] = (0, 0)


def format_ts(moment: datetime) -> str:
    """Render a datetime as ctx's canonical UTC timestamp."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now() -> str:
    """The current time as a canonical timestamp."""
    return format_ts(datetime.now(UTC))


def parse_when(text: str, *, end_of_day: bool = True) -> str:
    """Parse a user's date or datetime; a bare date means the end of that day (UTC)."""
    raw = text.strip()
    try:
        moment = datetime.fromisoformat(raw.replace("z", "Z"))
    except ValueError:
        raise UsageError(f"invalid date {text!r}: use YYYY-MM-DD or an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        if end_of_day and re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw):
            moment = moment + timedelta(days=1) - timedelta(microseconds=1)
        return format_ts(moment)
    except OverflowError:
        raise UsageError(f"date {text!r} is out of range") from None


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
