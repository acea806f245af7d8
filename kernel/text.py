"""Validation and normalisation of the text people and agents send to ctx, and how stored text is shown.

Two rules keep what a person reads equal to what ctx stores:

- Kernel fields a person ratifies (subjects, decisions, rationales, reasons, names) refuse
  *hidden* characters: control characters other than newline and tab, bidi overrides and
  isolates, zero-width and other invisible format characters, Unicode tag characters and
  stray variation selectors (:func:`hidden_at`).
- Everything shown to a person goes through :func:`visible`, which spells those same characters
  out (``\\x1b``, ``\\u202e``) instead of sending them to the terminal. Evidence keeps its bytes;
  only its display is escaped. Text the kernel accepts is shown unchanged.
"""

from __future__ import annotations

import re
import unicodedata

from ctx_kernel.kernel.errors import UsageError

# Each ASCII byte that is neither a letter nor a digit as a space, newlines kept: FTS5's word rule
# ([^\W_]+) for ASCII text with bytes.translate, several times faster than the expression.
ASCII_SEPARATORS = bytes(b if chr(b).isalnum() or b == 10 else 32 for b in range(256))
MAX_SUBJECT_CHARS = 200
MAX_DECISION_CHARS = 8_000
MAX_RATIONALE_CHARS = 32_000
MAX_EVIDENCE_BYTES = 1_000_000
MAX_REASON_CHARS = 4_000
MAX_NAME_CHARS = 200
MAX_TITLE_CHARS = 500

# Anything but printable ASCII, newline and tab: only such text needs a closer look.
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")
# A subject segment: Unicode letters and digits (after NFKC and case folding), `-` and `_`.
_WORD_SEGMENT_RE = re.compile(r"^[\w-]+$")
# Line and paragraph separators are line breaks by definition; real ADRs use them as such.
_LINE_BREAKS = re.compile("\r\n|\u2028|\u2029")
# Zero-width joiner and non-joiner shape emoji sequences and several scripts (Persian, Indic);
# between two non-ASCII characters they cannot hide anything from a reader.
_JOINERS = frozenset("\u200c\u200d")
# Hangul fillers render as blank space, and the combining grapheme joiner as nothing.
_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u034f")
# Emoji and text presentation selectors pick a glyph; other variation selectors can smuggle bytes.
_PRESENTATION_SELECTORS = frozenset("\ufe0e\ufe0f")


def hidden_at(text: str, index: int) -> bool:
    """Whether ``text[index]`` would be invisible or act on a terminal instead of being read.

    Newline and tab are ordinary. Hidden: control characters (C0, DEL, C1), format characters
    (bidi controls, zero-width spaces, soft hyphen, tag characters, ...), line and paragraph
    separators, Hangul fillers, and variation selectors other than the emoji/text ones.
    Zero-width (non-)joiners count as hidden unless both neighbours are non-ASCII characters.
    """
    char = text[index]
    if char in "\n\t":
        return False
    if char.isascii():
        return not char.isprintable()
    category = unicodedata.category(char)
    if category in ("Cc", "Zl", "Zp") or char in _INVISIBLE_LETTERS:
        return True
    if category == "Cf":
        if char in _JOINERS:
            before = text[index - 1] if index > 0 else " "
            after = text[index + 1] if index + 1 < len(text) else " "
            return before.isascii() or after.isascii() or before.isspace() or after.isspace()
        return True
    code = ord(char)
    return (0xFE00 <= code <= 0xFE0F and char not in _PRESENTATION_SELECTORS) or 0xE0100 <= code <= 0xE01EF


def lookalike_key(subject: str) -> str:
    """What a subject looks like: its TR39 skeleton with combining marks taken off, so that a
    subject differing from another only by an accent (``auth.tokens`` + U+0301) looks like it."""
    if subject.isascii():
        return subject
    # Marks off before the skeleton too: a letter with an accent (U+1F15) has no entry of its own
    # in the confusables table while the bare letter (U+03B5) has one.
    return _unmarked(skeleton(_unmarked(subject)))


def _unmarked(text: str) -> str:
    bare = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(c for c in bare if unicodedata.category(c) != "Mn"))


def escape_char(char: str) -> str:
    """``\\x1b``, ``\\u202e`` or ``\\U000e0041``: a character spelled out as a Python escape."""
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``count`` and its noun as they read together: ``1 decision``, ``0 decisions``, ``3 decisions``
    (``nouns``: the plural when it is not the noun and an s)."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def visible(text: str) -> str:
    """``text`` as it is safe to show a person: hidden characters spelled out, the rest untouched."""
    return _SUSPECT.sub(lambda m: escape_char(m[0]) if hidden_at(text, m.start()) else m[0], text)


def visible_document(text: str) -> str:
    """A document's text as :func:`visible` shows it, keeping its line breaks as written (CRLF,
    line and paragraph separators): what a file a person reviews may hold."""

    def shown(match: re.Match[str]) -> str:
        char, index = match[0], match.start()
        line_break = char in "\u2028\u2029" or (char == "\r" and text[index + 1 : index + 2] == "\n")
        return escape_char(char) if not line_break and hidden_at(text, index) else char

    return _SUSPECT.sub(shown, text)


def json_visible(document: str) -> str:
    """A JSON document with hidden characters written as ``\\uXXXX`` escapes: the same value
    when parsed, and nothing that acts on a terminal when printed (:func:`json.dumps` escapes
    only C0 controls). Only characters outside printable ASCII are looked at."""

    def escaped(match: re.Match[str]) -> str:
        char = match[0]
        if not hidden_at(document, match.start()):
            return char
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
        return f"\\u{code:04x}"

    return _SUSPECT.sub(escaped, document)


def describe_char(char: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE``; control characters, which have no name, say so."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X} {name or 'CONTROL CHARACTER'}"


def refuse_hidden(text: str, field: str) -> str:
    """Return ``text``, or refuse it naming the first hidden character and its position (from 1)."""
    for match in _SUSPECT.finditer(text):
        index = match.start()
        if hidden_at(text, index):
            raise UsageError(
                f"{field} contains {describe_char(text[index])} at character {index + 1}: hidden and "
                "terminal-control characters are refused in what a person ratifies"
            )
    return text


def normalise_subject(raw: str) -> str:
    """NFKC, case-folded, spaces to hyphens; a dotted path of word segments (``auth.session-tokens``).

    A segment is Unicode letters and digits with ``-`` and ``_`` between them; segments are
    joined by dots. Whether a new subject may be confused with an existing one is checked
    where subjects are created (:func:`skeleton`).
    """
    original = raw or ""
    text = unicodedata.normalize("NFKC", original).strip().casefold()
    if not text:
        raise UsageError("subject is empty")
    if len(text) > MAX_SUBJECT_CHARS:
        raise UsageError(f"subject is longer than {MAX_SUBJECT_CHARS} characters")
    for index in range(len(text)):
        if hidden_at(text, index) and text[index] not in "\n\t":
            raise UsageError(f"subject contains {describe_char(text[index])} at character {index + 1}")
    text = re.sub(r"\s*\.\s*", ".", text)
    text = re.sub(r"[\s_/]+", lambda m: "_" if m.group(0) == "_" else "-", text)
    text = re.sub(r"-{2,}", "-", text)
    for segment in text.split("."):
        if not segment or not _WORD_SEGMENT_RE.match(segment) or segment.strip("-_") == "":
            raise UsageError(
                f"invalid subject {visible(original)!r}: use dot-separated words such as auth.session-tokens"
            )
    return text


def skeleton(subject: str) -> str:
    """The Unicode TR39 confusable skeleton of a normalised subject: equal skeletons look alike.

    A subject of ASCII letters, digits, ``-``, ``_`` and dots is its own skeleton, so the
    common case needs no lookup table.
    """
    if subject.isascii():
        return subject
    from disarm import skeleton_key  # noqa: PLC0415 - its tables load in ~50 ms; ASCII needs none

    return skeleton_key(subject)


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


def require_shown(value: str | None, field: str, limit: int) -> str:
    """A kernel field a person reads before acting: :func:`require_text` with line breaks made
    ``\\n`` and every hidden character refused (see :func:`hidden_at`)."""
    if value is not None:
        value = _LINE_BREAKS.sub("\n", value)
    return refuse_hidden(require_text(value, field, limit), field)


def check_limit(limit: int | None, most: int) -> int | None:
    """``limit`` (None: no limit), refused unless it is a whole number from 1 to ``most``."""
    if limit is not None and (isinstance(limit, bool) or not 1 <= limit <= most):
        raise UsageError(f"the limit must be a whole number from 1 to {most}, not {limit!r}")
    return limit


def clip(value: str, limit: int) -> str:
    """``value`` on one line (whitespace collapsed), cut to ``limit`` characters ending in an ellipsis."""
    flat = " ".join(value.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def optional_shown(value: str | None, field: str, limit: int) -> str | None:
    """Like :func:`require_shown`, but empty input means no value."""
    if value is None or not value.strip():
        return None
    return require_shown(value, field, limit)
