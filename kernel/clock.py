"""Timestamps.

A timestamp is ``YYYY-MM-DDTHH:MM:SS.ffffffZ``: UTC, a four-digit year, always microseconds.
Every timestamp ctx stores is made by :func:`format_ts`, which only renders moments from
1970-01-01 (where ULID ids start) to the end of 9999, so the strings are all the same width and
string order is time order in SQL; anything a person or a file gives goes through
:func:`parse_when` or :func:`check_ts` first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

from ctx_kernel.kernel.errors import StoreError, UsageError

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
RANGE_TEXT = "1970-01-01 to 9999-12-31 (UTC)"
# Years of one to three digits are read too, so stamps an older ctx wrote unpadded compare as the
# times they are; check_ts refuses them.
_TS_RE = re.compile(r"^(\d{1,4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{6})Z$")


class TimestampRangeError(ValueError):
    """A moment before 1970 or after 9999, which ctx does not store."""


def format_ts(moment: datetime) -> str:
    """Render a datetime as ctx's canonical UTC timestamp; TimestampRangeError outside the range."""
    if moment.tzinfo is None:
        raise ValueError("a timestamp needs a time zone")
    # Compared before converting: astimezone overflows near year 1 and 9999.
    if not EARLIEST <= moment <= LATEST:
        raise TimestampRangeError(f"{moment.isoformat()} is outside {RANGE_TEXT}")
    utc = moment.astimezone(UTC)
    # Not strftime("%Y"): C libraries write years before 1000 without padding.
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T"
        f"{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}.{utc.microsecond:06d}Z"
    )


def to_datetime(stamp: str) -> datetime:
    """A stored timestamp as an aware datetime; ValueError when it is not one."""
    match = _TS_RE.match(stamp)
    if match is None:
        raise ValueError(f"not a timestamp: {stamp!r}")
    try:
        year, month, day, hour, minute, second, micro = (int(part) for part in match.groups())
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
    except ValueError:
        raise ValueError(f"not a timestamp: {stamp!r}") from None


def check_ts(stamp: str) -> str:
    """Return a stamp that is canonical and in range, or raise ValueError naming the problem."""
    moment = to_datetime(stamp)
    if format_ts(moment) != stamp:
        raise ValueError(f"not a canonical timestamp: {stamp!r}")
    return stamp


def latest(stamps: Iterable[str]) -> str:
    """The latest of some stored timestamps, compared as times; StoreError for one that is malformed.

    A store written before the fixed-width format may hold ``999-01-01T...``, which sorts after every
    real date as text: building on it would date new decisions in year 999.
    """
    found = list(stamps)
    for stamp in found:
        try:
            check_ts(stamp)
        except ValueError:
            raise StoreError(
                f"the store holds a malformed time {stamp!r} (written by an older ctx): "
                f"ctx keeps times from {RANGE_TEXT} as YYYY-MM-DDTHH:MM:SS.ffffffZ"
            ) from None
    return max(found, key=to_datetime)


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
            moment = moment.replace(hour=23, minute=59, second=59, microsecond=999_999)
        return format_ts(moment)
    except (OverflowError, TimestampRangeError):
        raise UsageError(f"date {text!r} is out of range: ctx keeps times from {RANGE_TEXT}") from None
