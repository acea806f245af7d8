"""Validation and normalisation of the text people and agents send to ctx."""

from __future__ import annotations

import re
import unicodedata

from kernel.errors import UsageError

MAX_SUBJECT_CHARS = 200
MAX_DECISION_CHARS = 8_000
MAX_RATIONALE_CHARS = 32_000
MAX_EVIDENCE_BYTES = 1_000_000
MAX_REASON_CHARS = 4_000
MAX_NAME_CHARS = 200

_SEGMENT_RE = re.compile(r"^[\w-]+$")


def normalise_subject(raw: str) -> str:
    """Lower-case, NFKC, spaces to hyphens; a dotted path of word segments (``auth.session-tokens``)."""
    text = unicodedata.normalize("NFKC", raw or "").strip().lower()
    if not text:
        raise UsageError("subject is empty")
    if len(text) > MAX_SUBJECT_CHARS:
        raise UsageError(f"subject is longer than {MAX_SUBJECT_CHARS} characters")
    text = re.sub(r"\s*\.\s*", ".", text)
    text = re.sub(r"[\s_/]+", lambda m: "_" if m.group(0) == "_" else "-", text)
    text = re.sub(r"-{2,}", "-", text)
    for segment in text.split("."):
        if not segment or not _SEGMENT_RE.match(segment) or segment.strip("-_") == "":
            raise UsageError(f"invalid subject {raw!r}: use dot-separated words such as auth.session-tokens")
    return text


def require_text(value: str | None, field: str, limit: int) -> str:
    """Strip a required text field and check it is non-empty and within its size limit."""
    text = (value or "").strip()
    if not text:
        raise UsageError(f"{field} is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Undecodable bytes from argv arrive as lone surrogates; SQLite cannot store them.
        raise UsageError(f"{field} is not valid UTF-8") from None
    if "\x00" in text:
        raise UsageError(f"{field} contains a NUL character")
    if len(text) > limit:
        raise UsageError(f"{field} is longer than {limit} characters")
    return text


def optional_text(value: str | None, field: str, limit: int) -> str | None:
    """Like :func:`require_text`, but empty input means no value."""
    if value is None or not value.strip():
        return None
    return require_text(value, field, limit)
