"""Read and write Architecture Decision Records: adr-tools (Nygard) and MADR Markdown files, no database."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

from ctx_kernel.kernel import text as _text
from ctx_kernel.kernel.errors import UsageError

STATUSES: tuple[str, ...] = ("accepted", "proposed", "rejected", "deprecated", "superseded")
DEFAULT_STATUS = "accepted"
# The whole file is kept as evidence, so a file is read only if it fits in the vault: about fifty
# times the longest real ADR we know (20 KB), so any limit hit is a generated or wrong file.
MAX_ADR_BYTES = _text.MAX_EVIDENCE_BYTES
SUBJECT_WORDS = 4
STOP_WORDS = frozenset(
    {"use", "uses", "using", "the", "a", "an", "for", "of", "to", "in", "and", "with", "on", "at", "by", "as"}
    | {"or", "our", "we", "is", "are", "be"}
)
RELATIONS: tuple[str, ...] = ("supersedes", "superseded_by", "amends", "amended_by")

AdrRef = int | str
"""A link to another ADR: its number, or its file name when no number can be read."""

_INVERSE = {
    "supersedes": "superseded_by",
    "superseded_by": "supersedes",
    "amends": "amended_by",
    "amended_by": "amends",
}
_FRONT_MATTER_RELATIONS = {
    "supersedes": "supersedes",
    "replaces": "supersedes",
    "superseded-by": "superseded_by",
    "replaced-by": "superseded_by",
    "amends": "amends",
    "amended-by": "amended_by",
}
_FRONT_MATTER_USED = {"status", "date", "subject", "title", *_FRONT_MATTER_RELATIONS}
# Who took the decision: MADR 2/3 front matter ``deciders``, MADR 4 ``decision-makers``.
DECIDER_KEYS = ("deciders", "decision-makers")
# ctx's own fields in a file, which export writes and import honours so that a round trip is exact.
KEY_ID, KEY_FROM, KEY_UNTIL, KEY_BY = "ctx-id", "ctx-valid-from", "ctx-valid-until", "ctx-ratified-by"
# The paths and globs a decision governs (kernel/facts/links.py), comma separated.
KEY_LINKS = "ctx-links"
CTX_KEYS: tuple[str, ...] = ("subject", KEY_ID, KEY_FROM, KEY_UNTIL, KEY_BY, KEY_LINKS)
# A file whose metadata is not front matter (adr-tools reads its title from line 1; log4brains and MADR 2
# read a list under the title) keeps ctx's fields in an HTML comment that those tools and Markdown
# viewers ignore. It opens with this line and closes with a line of its own, ``-->``.
CTX_BLOCK_OPEN = "<!-- ctx: fields ctx export adr keeps; adr-tools and Markdown viewers ignore this comment"


class AdrParseError(UsageError):
    """A Markdown file that cannot be read as an ADR: unreadable, not UTF-8, empty or without a title."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class AdrRecord:
    """One architecture decision record as read from (or written to) a Markdown file."""

    number: int | None
    title: str
    status: str
    date: str | None
    context: str | None
    decision: str
    consequences: str | None
    supersedes: list[AdrRef]
    superseded_by: list[AdrRef]
    path: str
    subject: str
    raw_status: str  # as written ("" when the file states none, and status is then "accepted")
    amends: list[AdrRef] = field(default_factory=list)  # "Amends [3. X](0003-x.md)" (adr-tools link)
    amended_by: list[AdrRef] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)  # other front matter keys, such as ctx-id
    deciders: list[str] = field(default_factory=list)  # "Deciders: Alice, Bob", MADR front matter
    subject_stated: bool = False  # the front matter names the subject (else it was made from the title)
    # Links the text only mentions ("This replaces ADR 3"), never taken as links: a person confirms them.
    suggested: list[SuggestedLink] = field(default_factory=list)
    # What MADR's Confirmation section names: its code spans, as written (``tests/arch/test_layers.py``),
    # and its relative Markdown link targets, relative to this file. Candidates only: the importer keeps
    # those that are repository paths (ctx_kernel.kernel.adr.importer.links_of).
    confirmation_spans: list[str] = field(default_factory=list)
    confirmation_targets: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SuggestedLink:
    """A supersession a record's own text mentions outside any status line: for a person to confirm."""

    relation: str  # "supersedes" or "superseded_by", from the record that says it
    target: AdrRef
    said: str  # the sentence, as written


@dataclass(frozen=True)
class _Ref:
    """A link as written: a number with its series prefix (None when unstated), and/or a file name."""

    number: int | None
    prefix: str | None
    filename: str | None

    @property
    def value(self) -> AdrRef:
        """The public form of the link: the number if one was read, else the file name."""
        return self.number if self.number is not None else (self.filename or "")


@dataclass(frozen=True)
class _Parsed:
    """A parsed file: the record, its links as written, and the file names it links to anywhere."""

    record: AdrRecord
    links: dict[str, list[_Ref]]
    mentions: frozenset[str]
    suggested: list[tuple[str, _Ref, str]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------------------
# Regular expressions
# ---------------------------------------------------------------------------------------------------------

_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(?:(.*?)\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_FM_KEY_RE = re.compile(r"^([A-Za-z0-9_][\w.-]*)[ \t]*:(?:[ \t]+(.*))?[ \t]*$")
_FM_ITEM_RE = re.compile(r"^[ \t]+-[ \t]+(.*?)[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_LOOSE_TITLE_RE = re.compile(r"^ {0,3}#(?![#\s])(.+)$")
_SETEXT_H1_RE = re.compile(r"^ {0,3}=+[ \t]*$")
_RULE_RE = re.compile(r"^[\s\-*_=~]*$")
_QUOTE_OR_BULLET_RE = re.compile(r"^\s*(?:>\s*)*(?:[-*+]\s+|\d+[.)]\s+)?")

_FILE_NUMBER_RE = re.compile(r"^(?P<prefix>[A-Za-z]{0,5})[-_ ]?(?P<num>\d{1,6})(?=[-_. ]|$)")
_DATE_NAMED_RE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_TITLE_GENERIC_RE = re.compile(
    r"^(?:architecture\s+decision\s+record|architectural\s+decision\s+record|decision\s+record|adr)"
    r"\s*[:\-–—]\s+(?=\S)",
    re.I,
)
_TITLE_PREFIXED_RE = re.compile(
    r"^(?P<prefix>adr|dr|ad|ar)[\s_#-]*(?P<num>\d{1,6})(?:\s*[:)\-–—]|\.(?=\s)|\s)\s*(?P<rest>\S.*)$",
    re.I,
)
_TITLE_BARE_RE = re.compile(r"^#?(?P<num>\d{1,6})(?P<sep>\s*[:)–—]|\.(?=\s)|\s+-(?=\s)|\s)\s*(?P<rest>\S.*)$")

_DATE_LINE_RE = re.compile(r"^\s*(?:[-*+]\s+)?[*_]*date[*_]*(?:\s*:|\s)\s*[*_]*\s*(?P<value>.*)$", re.I)
_DECIDERS_LINE_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?[*_]*(?:deciders|decision[- ]makers|decided\s+by)[*_]*\s*:\s*[*_]*\s*(?P<value>.*)$",
    re.I,
)
_STATUS_LINE_RE = re.compile(r"^\s*(?:[-*+]\s+)?[*_]*status[*_]*\s*:\s*[*_]*\s*(?P<value>.*)$", re.I)
_MONTHS = {
    name: index + 1
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_PATTERNS = (
    ("ymd", re.compile(r"(?<!\d)(?P<y>\d{4})[-/.](?P<m>\d{1,2})[-/.](?P<d>\d{1,2})(?!\d)")),
    ("dmy", re.compile(r"(?<!\d)(?P<a>\d{1,2})[/.](?P<b>\d{1,2})[/.](?P<y>\d{4}|\d{2})(?!\d)")),
    (
        "d_month_y",
        re.compile(r"(?<!\d)(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+" + _MONTH + r",?\s+(?P<y>\d{4})", re.I),
    ),
    ("month_d_y", re.compile(_MONTH + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y>\d{4})", re.I)),
)

_STATUS_PATTERNS = (
    ("superseded", re.compile(r"\bsupersed(?:ed)?\b(?!\s*(?:es|ing))|\breplaced\s+by\b|\bobsoleted\s+by\b")),
    (
        "rejected",
        re.compile(
            r"\breject(?:ed)?\b|\bdeclined\b|\bwithdrawn\b|\babandoned\b|\bnot\s+accepted\b|\brefused\b"
        ),
    ),
    (
        "deprecated",
        re.compile(r"\bdeprecated?\b|\bobsolete\b|\bretired\b|\breverted\b|\brevoked\b|\bno\s+longer\b"),
    ),
    (
        "proposed",
        re.compile(
            r"\bpropos(?:ed|al)\b|\bpending\b|\bdraft\b|\bwip\b|\bin\s+progress\b|\bin\s+review\b"
            r"|\bunder\s+(?:review|discussion|consideration)\b|\bincomplete\b|\bopen\b|\brfc\b|\bsuggested\b"
        ),
    ),
    (
        "accepted",
        re.compile(
            r"\baccept(?:ed)?\b|\bapproved?\b|\bagreed\b|\badopted\b|\bdecided\b|\bimplemented\b|\bactive\b"
            r"|\bdone\b|\bin\s+effect\b"
        ),
    ),
)
_PARTIAL_BEFORE_RE = re.compile(r"(?:partly|partially|in\s+part|partial)\s*$")

_RELATION_RE = re.compile(
    r"\b(?P<by>superseded|replaced|obsoleted|amended)\s+(?:(?:in\s+part|partly|partially)\s+)?by\b"
    r"|\b(?P<verb>supersedes|replaces|obsoletes|amends)\b",
    re.I,
)
_SELF_RELATION_RE = re.compile(
    r"\bthis\s+(?:adr|decision|record|document|proposal)\b[^.\n]{0,40}?\b(?:supersedes|replaces|amends)\b"
    r"|\b(?:has|have)\s+been\s+(?:(?:partly|partially|in\s+part)\s+)?(?:superseded|replaced|amended)\s+by\b",
    re.I,
)
_LINK_RE = re.compile(
    r"\[(?P<text>(?:\\.|[^\[\]\\]|\[[^\[\]]{0,300}\]){0,1000})\]\(\s*<?(?P<target>[^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# Reference-style links: ``[ADR 12][adr12]``, ``[adr12][]`` or ``[adr12]``, whose target a definition
# ``[adr12]: 0012-x.md`` gives anywhere in the file (CommonMark's link reference definitions).
_REF_DEF_RE = re.compile(r"^ {0,3}\[(?P<label>[^\[\]\n^][^\[\]\n]{0,299})\]:[ \t]*<?(?P<target>[^\s<>]+)>?")
_REF_LINK_RE = re.compile(r"\[(?P<text>[^\[\]\n]{1,300})\]\[(?P<label>[^\[\]\n]{0,300})\]")
_SHORTCUT_RE = re.compile(r"(?<![\]\\])\[(?P<text>[^\[\]\n]{1,300})\](?![\[(:])")
# A supersession mentioned in running text. It is only ever suggested, never taken as a link: "This
# replaces ADR 3" may as well say "This does not replace ADR 3" a line later.
_MENTION_RE = re.compile(
    r"\b(?P<by>superseded|replaced|obsoleted)\s+by\b"
    r"|\b(?P<verb>supersede[sd]?|superseding|replaces?|replacing|obsoletes|obsoleting)\b",
    re.I,
)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
MAX_SAID_CHARS = 300
_TOKEN_RE = re.compile(
    r"(?<![\w/.-])(?P<prefix>adr|dr|ad|decision|record)[\s_#:-]{0,3}(?P<num>\d{1,6})\b(?![/.-]\d)", re.I
)
_BARE_START_RE = re.compile(r"^[\s:,\-–]*(?:#\s*)?(?P<num>\d{1,6})\b(?![/.-]\d)")
_BARE_MORE_RE = re.compile(r"^\s*(?:,|and|&|or)\s*(?:#\s*)?(?P<num>\d{1,6})\b(?![/.-]\d)", re.I)

_SECTION_NAMES = {
    "status": {"status", "statuses", "state"},
    "context": {
        "context",
        "context and problem statement",
        "context and problem",
        "problem statement",
        "problem",
        "background",
        "motivation",
    },
    "decision": {
        "decision",
        "decisions",
        "decision outcome",
        "the decision",
        "our decision",
        "decision made",
    },
    "proposal": {"proposal", "what's proposed", "proposed decision", "solution", "chosen option"},
    "consequences": {"consequences", "consequence", "implications"},
    "positive": {"positive consequences", "good consequences", "positive", "positives", "pros"},
    "negative": {"negative consequences", "bad consequences", "negative", "negatives", "cons"},
    "links": {"links", "related", "related decisions", "related adrs", "see also", "more information"},
    # MADR 3/4: how compliance with the decision is confirmed (a test, a review), usually under
    # "Decision Outcome"; its text stays in the decision, and the paths it names become links.
    "confirmation": {"confirmation", "confirmations"},
}
_NESTED_KINDS = {"status", "context", "consequences", "positive", "negative", "links"}


# ---------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------


def _ascii_words(text: str) -> list[str]:
    """Lower-case ASCII words of a text, apostrophes dropped (``Mobility's`` gives ``mobilitys``)."""
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    folded = re.sub(r"['`]", "", folded)
    return re.findall(r"[a-z0-9]+", folded)


def derive_subject(title: str, number: int | None = None) -> str:
    """A short hyphenated subject from a title: stop-words dropped, the first four words kept."""
    words = _ascii_words(title)
    kept = [word for word in words if word not in STOP_WORDS] or words
    if not kept:
        return f"adr-{number}" if number is not None else "adr"
    return "-".join(kept[:SUBJECT_WORDS])


def adr_filename(number: int, title: str) -> str:
    """The stable file name of an ADR, ``{number:04d}-{slug}.md`` as adr-tools writes it."""
    if number < 0:
        raise ValueError(f"ADR number must not be negative: {number}")
    slug = "-".join(_ascii_words(title))
    if len(slug) > 60:
        slug = slug[:60].rsplit("-", 1)[0] if "-" in slug[:60] else slug[:60]
    return f"{number:04d}-{slug or 'adr'}.md"


def file_number(name: str) -> tuple[str, int] | None:
    """The series prefix (lower-case, maybe empty) and number of an ADR file name such as ``ADR007-x.md``."""
    stem = name.rsplit("/", 1)[-1]
    if stem.lower().endswith(".md"):
        stem = stem[:-3]
    if _DATE_NAMED_RE.match(stem):
        return None
    match = _FILE_NUMBER_RE.match(stem)
    if not match:
        return None
    return match.group("prefix").lower(), int(match.group("num"))


def _series(prefix: str | None) -> str:
    """The numbering series a prefix names; no prefix and ``adr`` are the same default series."""
    text = (prefix or "").lower()
    return "adr" if text in {"", "adr", "decision", "record"} else text


def parse_date(text: str) -> str | None:
    """The first date in a text as ISO ``YYYY-MM-DD``; numeric ``a/b/yyyy`` dates are read day first."""
    found: list[tuple[int, str]] = []
    for kind, pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            iso = _date_from_match(kind, match)
            if iso is not None:
                found.append((match.start(), iso))
                break
    return min(found)[1] if found else None


def _date_from_match(kind: str, match: re.Match[str]) -> str | None:
    """Turn one date-pattern match into an ISO date, or None if it names no real day."""
    groups = match.groupdict()
    year = int(groups["y"])
    if year < 100:
        year += 2000
    if kind == "ymd":
        month, day = int(groups["m"]), int(groups["d"])
    elif kind == "dmy":
        day, month = int(groups["a"]), int(groups["b"])
        if month > 12 >= day:
            day, month = month, day
    else:
        day, month = int(groups["d"]), _MONTHS[groups["month"].lower()]
    try:
        return dt.date(year, month, day).isoformat()
    except ValueError:
        return None


def normalise_status(raw: str) -> str:
    """Map a status as written (``✅ Accepted``, ``Superseded by [3](…)``, ``Pending``) to one of STATUSES."""
    return _status_keyword(raw) or DEFAULT_STATUS


def _status_keyword(raw: str) -> str | None:
    """The status a text states (the earliest keyword wins), or None when it names none."""
    text = _LINK_RE.sub(" ", raw).lower()
    best: tuple[int, int, str] | None = None
    for rank, (status, pattern) in enumerate(_STATUS_PATTERNS):
        for match in pattern.finditer(text):
            if status == "superseded" and _PARTIAL_BEFORE_RE.search(text[: match.start()]):
                candidate = (match.start(), rank, DEFAULT_STATUS)
            else:
                candidate = (match.start(), rank, status)
            if best is None or candidate < best:
                best = candidate
            break
    return best[2] if best else None


def _is_partial(raw: str) -> bool:
    """Whether a status says the record is only partly superseded."""
    return bool(re.search(r"\b(?:partly|partially|in\s+part|partial)\s+supersed", raw, re.I))


def _unquote_scalar(value: str) -> str:
    """A flat YAML scalar without its quotes (or trailing comment when unquoted)."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    return re.sub(r"\s+#.*$", "", value).strip()


def _flow_items(value: str) -> list[str] | None:
    """The items of an inline YAML list ``[a, b]``, or None if the value is not one."""
    value = value.strip()
    if not (value.startswith("[") and value.endswith("]")) or "](" in value:
        return None
    return [_unquote_scalar(item) for item in value[1:-1].split(",") if item.strip()]


def _parse_front_matter(block: str) -> dict[str, str | list[str]]:
    """Flat ``key: value`` lines (and simple ``- item`` lists) of a YAML front matter block."""
    result: dict[str, str | list[str]] = {}
    key: str | None = None
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _FM_ITEM_RE.match(line)
        if item and key is not None:
            current = result.get(key)
            items = current if isinstance(current, list) else []
            items.append(_unquote_scalar(item.group(1)))
            result[key] = items
            continue
        match = _FM_KEY_RE.match(line)
        if not match:
            key = None
            continue
        key, value = match.group(1), (match.group(2) or "")
        flow = _flow_items(value)
        result[key] = flow if flow is not None else _unquote_scalar(value)
    return result


def _fm_get(front: Mapping[str, str | list[str]], name: str) -> str | list[str] | None:
    """A front matter value by normalised key (``superseded_by`` and ``Superseded-By`` are the same)."""
    for key, value in front.items():
        if key.lower().replace("_", "-") == name:
            return value
    return None


def split_names(value: str) -> list[str]:
    """The names in a deciders value: ``Alice, Bob and @carol`` gives three (template text gives none)."""
    value = _LINK_RE.sub(lambda m: m.group("text"), value).strip()
    if value.startswith("[") and value.endswith("]"):  # an unfilled template: "[list everyone ...]"
        return []
    parts = re.split(r"\s*(?:[,;|]|\band\b|&)\s*", value)
    names = [re.sub(r"^[*_`]+|[*_`]+$", "", part).strip() for part in parts]
    return [name for name in names if name]


def _as_text(value: str | list[str] | None) -> str:
    """A front matter value as one string."""
    if value is None:
        return ""
    return ", ".join(value) if isinstance(value, list) else value


# ---------------------------------------------------------------------------------------------------------
# Links
# ---------------------------------------------------------------------------------------------------------


def _link_ref(target: str) -> _Ref | None:
    """The ADR a Markdown link target names, if it names a Markdown file or a numbered ADR file."""
    if not target or target.startswith("#"):
        return None
    is_url = bool(_SCHEME_RE.match(target))
    target = target.split("#", 1)[0].split("?", 1)[0].rstrip("/")
    name = unquote(target.rsplit("/", 1)[-1])
    is_markdown = name.lower().endswith(".md")
    if is_url and not is_markdown:
        return None
    numbered = file_number(name)
    if not is_markdown and (numbered is None or "." in name):
        return None
    if numbered is None:
        return _Ref(None, None, name)
    return _Ref(numbered[1], numbered[0], name if is_markdown else None)


def _refs_in(segment: str, *, bare: bool) -> list[_Ref]:
    """ADR references in the text after a relation verb: links, ``ADR-12`` tokens and leading bare numbers."""
    refs: list[_Ref] = []
    if bare:
        start = _BARE_START_RE.match(segment)
        if start:
            refs.append(_Ref(int(start.group("num")), None, None))
            rest = segment[start.end() :]
            while more := _BARE_MORE_RE.match(rest):
                refs.append(_Ref(int(more.group("num")), None, None))
                rest = rest[more.end() :]
    for link in _LINK_RE.finditer(segment):
        ref = _link_ref(link.group("target"))
        if ref is not None:
            refs.append(ref)
    plain = _LINK_RE.sub(" ; ", segment)
    for token in _TOKEN_RE.finditer(plain):
        prefix = token.group("prefix").lower()
        refs.append(_Ref(int(token.group("num")), None if prefix in {"decision", "record"} else prefix, None))
    return refs


def _relations_in_line(line: str, *, bare: bool) -> list[tuple[str, _Ref]]:
    """Every ``(relation, ref)`` a line states, such as ``Superseded by [12. X](0012-x.md)``."""
    matches = list(_RELATION_RE.finditer(line))
    found: list[tuple[str, _Ref]] = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(line)
        if match.group("by"):
            word = match.group("by").lower()
            kind = "amended_by" if word == "amended" else "superseded_by"
        else:
            kind = "amends" if match.group("verb").lower() == "amends" else "supersedes"
        found.extend((kind, ref) for ref in _refs_in(line[match.end() : end], bare=bare))
    return found


def _label(text: str) -> str:
    """A link label as CommonMark matches it: case-folded, inner whitespace collapsed."""
    return " ".join(text.split()).casefold()


def _link_definitions(lines: Sequence[str], code: Sequence[bool]) -> dict[str, str]:
    """The targets of the link reference definitions outside code, by label (the first one wins)."""
    found: dict[str, str] = {}
    for index, line in enumerate(lines):
        match = None if code[index] else _REF_DEF_RE.match(line)
        if match is not None:
            found.setdefault(_label(match.group("label")), match.group("target"))
    return found


def _inline_references(line: str, definitions: Mapping[str, str]) -> str:
    """A line with its reference-style links written inline, ``[ADR 12][adr12]`` as ``[ADR 12](0012-x.md)``,
    so the link readers see where they lead; labels with no definition are left as they are."""
    if not definitions or "[" not in line:
        return line

    def full(match: re.Match[str]) -> str:
        target = definitions.get(_label(match.group("label") or match.group("text")))
        return f"[{match.group('text')}]({target})" if target else match.group(0)

    def shortcut(match: re.Match[str]) -> str:
        target = definitions.get(_label(match.group("text")))
        return f"[{match.group('text')}]({target})" if target else match.group(0)

    return _SHORTCUT_RE.sub(shortcut, _REF_LINK_RE.sub(full, line))


def _mentions_in(sentence: str) -> list[tuple[str, _Ref]]:
    """The supersessions a sentence mentions, each with the ADR it names by link or ``ADR 3`` token."""
    matches = list(_MENTION_RE.finditer(sentence))
    found: list[tuple[str, _Ref]] = []
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(sentence)
        kind = "superseded_by" if match.group("by") else "supersedes"
        refs = _refs_in(sentence[match.end() : end], bare=False)
        # "decision 3" and "record 3" are too common in prose to suggest anything on their own.
        found += [(kind, ref) for ref in refs if ref.filename is not None or ref.prefix is not None]
    return found


# ---------------------------------------------------------------------------------------------------------
# Markdown structure
# ---------------------------------------------------------------------------------------------------------


@dataclass
class _Heading:
    """A heading line: where it is, its level and its text."""

    index: int
    level: int
    text: str
    end: int = 0
    kind: str | None = None
    name: str = ""


def _section_name(text: str) -> str:
    """A heading's text reduced for matching: lower-case, no markup or trailing punctuation."""
    name = text.replace("’", "'").lower()
    name = re.sub(r"[*_`]", "", name)
    name = re.sub(r"^\d+(?:\.\d+)*[.)]?\s+", "", name)
    return re.sub(r"\s+", " ", name).strip(" :.?!")


def _section_kind(name: str) -> str | None:
    """Which ADR section a heading name is (``decision``, ``status``, ...), if any."""
    for kind, names in _SECTION_NAMES.items():
        if name in names:
            return kind
    if re.match(r"^status\s*:", name):
        return "status"
    if re.match(r"^decision\s*[:\-–—]", name):
        return "decision"
    return None


def _without_comments(text: str, *, keep_lines: bool) -> str:
    """Text without its HTML comments, or with each blanked to its newlines (so that line numbers stay).

    One pass with ``find``: a regular expression would try every unclosed ``<!--`` against the rest of
    the file, which takes minutes on a hostile file of a megabyte.
    """
    kept: list[str] = []
    position = 0
    while (start := text.find("<!--", position)) != -1:
        end = text.find("-->", start + 4)
        if end == -1:  # unclosed: no comment starts after it either
            break
        kept.append(text[position:start])
        if keep_lines:
            kept.append("\n" * text.count("\n", start, end + 3))
        position = end + 3
    kept.append(text[position:])
    return "".join(kept)


def _heading_text(text: str) -> str:
    """A heading's text without surrounding spaces or a closing run of ``#`` characters."""
    text = text.strip()
    bare = text.rstrip("#")
    if bare != text and (not bare or bare[-1] in " \t"):
        text = bare.rstrip()
    return text


def _code_mask(lines: Sequence[str]) -> list[bool]:
    """For each line, whether it lies inside (or opens/closes) a fenced code block."""
    mask: list[bool] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE_RE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                mask.append(True)
                continue
            mask.append(False)
        else:
            mask.append(True)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
    return mask


def _headings(lines: Sequence[str], code: Sequence[bool]) -> list[_Heading]:
    """ATX headings and ``===`` underlined level-one headings, outside code blocks."""
    found: list[_Heading] = []
    for index, line in enumerate(lines):
        if code[index]:
            continue
        match = _ATX_RE.match(line)
        text = _heading_text(match.group(2) or "") if match else ""
        if match and text:
            found.append(_Heading(index, len(match.group(1)), text))
        elif (
            index + 1 < len(lines)
            and line.strip()
            and not code[index + 1]
            and _SETEXT_H1_RE.match(lines[index + 1])
            and not _ATX_RE.match(line)
        ):
            found.append(_Heading(index, 1, line.strip()))
    return found


def _clean_title(text: str, filename_number: int | None) -> tuple[str, int | None]:
    """A title without its ``7.`` / ``ADR-007:`` number prefix, and that number if one was written."""
    text = re.sub(r"^[*_]{1,3}(.*?)[*_]{1,3}$", r"\1", text.strip()).strip()
    text = _TITLE_GENERIC_RE.sub("", text)
    prefixed = _TITLE_PREFIXED_RE.match(text)
    if prefixed:
        return prefixed.group("rest").strip(), int(prefixed.group("num"))
    bare = _TITLE_BARE_RE.match(text)
    if bare:
        number = int(bare.group("num"))
        weak = not bare.group("sep").strip()
        if not weak or number == filename_number:
            return bare.group("rest").strip(), number
    return text, None


def _section_text(lines: Sequence[str], heading: _Heading, headings: Sequence[_Heading]) -> str | None:
    """A section's text without nested sections that are themselves ADR sections (MADR's consequences)."""
    kept: list[str] = []
    skip_until = -1
    nested = {h.index: h for h in headings if heading.index < h.index < heading.end}
    for index in range(heading.index + 1, heading.end):
        if index < skip_until:
            continue
        inner = nested.get(index)
        if inner is not None and inner.kind in _NESTED_KINDS and inner.kind != heading.kind:
            skip_until = inner.end
            continue
        kept.append(lines[index])
    return _strip_block(kept)


def _strip_block(lines: Iterable[str]) -> str | None:
    """Lines joined, trailing spaces and surrounding blank lines removed; None when nothing is left."""
    return "\n".join(line.rstrip() for line in lines).strip() or None


# ---------------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------------


def _read_bytes(path: Path, inside: Path | None) -> bytes:
    """A regular file's bytes, at most MAX_ADR_BYTES, refusing links that lead out of ``inside``.

    The size is checked on the open file before anything is read, and the file is opened
    non-blocking so that a FIFO named like an ADR cannot hang the reader.
    """
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise AdrParseError(path, "a broken or looping link; not read") from None
    if inside is not None and not real.is_relative_to(inside):
        raise AdrParseError(path, f"a link to {real}, outside the folder; not read")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise AdrParseError(path, f"cannot read the file ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise AdrParseError(path, "not a regular file; not read")
        if info.st_size > MAX_ADR_BYTES:
            raise AdrParseError(path, f"larger than {MAX_ADR_BYTES} bytes")
        try:
            data = handle.read(MAX_ADR_BYTES + 1)
        except OSError as exc:
            raise AdrParseError(path, f"cannot read the file ({exc.strerror or exc})") from exc
    if len(data) > MAX_ADR_BYTES:  # it grew after the check
        raise AdrParseError(path, f"larger than {MAX_ADR_BYTES} bytes")
    return data


def _read_text(path: Path, inside: Path | None = None) -> str:
    """The file's text as UTF-8 with normalised newlines, or AdrParseError."""
    data = _read_bytes(path, inside)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AdrParseError(path, f"not UTF-8 (byte {exc.start})") from exc
    if "\x00" in text:
        raise AdrParseError(path, "contains NUL bytes; not a text file")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def read_text(path: Path, inside: Path | None = None) -> str:
    """A file's text as ADRs are read: checked size, UTF-8, newlines normalised (AdrParseError)."""
    return _read_text(path, inside)


def parse_text(text: str, name: str) -> AdrRecord:
    """Read ADR Markdown held in memory as if it were the file ``name``."""
    if not text.strip():
        raise AdrParseError(Path(name), "empty file")
    return _parse_text(text, Path(name), name).record


def front_matter(path: Path, inside: Path | None = None) -> dict[str, str]:
    """The flat front matter of a Markdown file (empty when it has none), read as ADRs are read."""
    return front_matter_of(_read_text(path, inside))


def front_matter_of(text: str) -> dict[str, str]:
    """The flat front matter of Markdown text (empty when it has none)."""
    match = _FRONT_MATTER_RE.match(text)
    if match is None:
        return {}
    return {key: _as_text(value) for key, value in _parse_front_matter(match.group(1) or "").items()}


def parse_adr(path: Path, root: Path) -> AdrRecord:
    """Read one ADR Markdown file; its ``path`` is recorded relative to ``root``."""
    return _parse(path, root).record


def _relative(path: Path, root: Path) -> str:
    """The path relative to root in POSIX form, or the bare file name if it is not under root."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name


def _parse(path: Path, root: Path, inside: Path | None = None) -> _Parsed:
    """Parse a file into a record and the links as written (for the folder reader to resolve)."""
    text = _read_text(path, inside)
    if not text.strip():
        raise AdrParseError(path, "empty file")
    return _parse_text(text, path, _relative(path, root))


def _parse_text(text: str, path: Path, rel: str) -> _Parsed:
    """Parse ADR Markdown text; see :func:`parse_adr`."""
    doc = _read_document(text)
    numbered = file_number(path.name)
    filename_number = numbered[1] if numbered else None
    own_prefix = numbered[0] if numbered else ""
    title, title_number = _title(doc, path, filename_number)
    number = filename_number if filename_number is not None else title_number

    raw_status, from_front = _status_as_written(doc)
    links = _stated_links(doc)
    stated_superseded = bool(links["superseded_by"])
    for kind, ref in _self_relations(doc):
        links[kind].append(ref)
    links = {kind: _dedupe_refs(refs, path.name, number, own_prefix) for kind, refs in links.items()}
    suggested = [
        (kind, ref, said)
        for kind, ref, said in _suggested(doc)
        if _dedupe_refs([ref], path.name, number, own_prefix)
    ]
    status = normalise_status(raw_status)
    if (
        stated_superseded
        and links["superseded_by"]
        and not from_front
        and status in {"accepted", "proposed"}
        and not _is_partial(raw_status)
    ):
        status = "superseded"

    stated_subject = _front_text(doc.front, "subject") or doc.ctx.get("subject", "").strip()
    record = AdrRecord(
        number=number,
        title=title,
        status=status,
        date=_date(doc),
        context=_context(doc),
        decision=_decision(doc),
        consequences=_consequences(doc),
        supersedes=[ref.value for ref in links["supersedes"]],
        superseded_by=[ref.value for ref in links["superseded_by"]],
        path=rel,
        subject=stated_subject or derive_subject(title, number),
        raw_status=raw_status,
        amends=[ref.value for ref in links["amends"]],
        amended_by=[ref.value for ref in links["amended_by"]],
        meta=_meta(doc.front, doc.ctx),
        deciders=_deciders(doc),
        subject_stated=bool(stated_subject),
        suggested=[SuggestedLink(kind, ref.value, said) for kind, ref, said in suggested],
        **_confirmation(doc),
    )
    return _Parsed(record, links, _mentions(doc), suggested)


@dataclass(frozen=True)
class _Document:
    """The Markdown structure of an ADR file, which each field reader below works from.

    Comments are removed and the front matter is split off. ``sections`` are the headings after the
    title, each with its name, kind and end; the preamble lies between the title and the first of
    them. Every list of line indexes leaves out lines inside fenced code.
    """

    front: dict[str, str | list[str]]
    lines: list[str]
    code: list[bool]
    title: _Heading | None
    body_start: int
    sections: list[_Heading]
    preamble: list[int]
    status_heading: _Heading | None
    status_lines: list[int]
    link_lines: list[int]
    ctx: dict[str, str]  # ctx's fields from its comment block (front matter keys are in ``front``)
    definitions: dict[str, str]  # link reference definitions, by label

    def first(self, *kinds: str) -> _Heading | None:
        """The first section of the first of these kinds that the file has."""
        return next((h for kind in kinds for h in self.sections if h.kind == kind), None)


def _read_document(text: str) -> _Document:
    """Split ADR Markdown into its front matter, title, preamble and sections."""
    front: dict[str, str | list[str]] = {}
    fm_match = _FRONT_MATTER_RE.match(text)
    if fm_match:
        front = _parse_front_matter(fm_match.group(1) or "")
        text = text[fm_match.end() :]
    text, ctx = _split_ctx_block(text)
    lines = _without_comments(text, keep_lines=False).split("\n")
    code = _code_mask(lines)
    headings = _headings(lines, code)
    title = _find_title(lines, code, headings)
    body_start = title.index + 1 if title is not None else 0
    sections = _outline([h for h in headings if h.index >= body_start], len(lines))
    status_heading = next((h for h in sections if h.kind == "status"), None)
    return _Document(
        front=front,
        lines=lines,
        code=code,
        title=title,
        body_start=body_start,
        sections=sections,
        preamble=_outside_code(code, body_start, sections[0].index if sections else len(lines)),
        status_heading=status_heading,
        status_lines=(
            _outside_code(code, status_heading.index + 1, status_heading.end) if status_heading else []
        ),
        link_lines=[
            i for h in sections if h.kind == "links" for i in _outside_code(code, h.index + 1, h.end)
        ],
        ctx=ctx,
        definitions=_link_definitions(lines, code),
    )


def _outline(sections: list[_Heading], line_count: int) -> list[_Heading]:
    """The headings, each given its section name, kind and end (the next heading at its level or above)."""
    open_sections: list[_Heading] = []
    for heading in sections:
        heading.name = _section_name(heading.text)
        heading.kind = _section_kind(heading.name)
        heading.end = line_count
        while open_sections and open_sections[-1].level >= heading.level:
            open_sections.pop().end = heading.index
        open_sections.append(heading)
    return sections


def _outside_code(code: Sequence[bool], start: int, end: int) -> list[int]:
    """The indexes from start to end of the lines that are not fenced code."""
    return [i for i in range(start, end) if not code[i]]


def _front_text(front: Mapping[str, str | list[str]], name: str) -> str:
    """A front matter value as one stripped string (empty when the key is missing)."""
    return _as_text(_fm_get(front, name)).strip()


def _front_items(front: Mapping[str, str | list[str]], name: str) -> list[str]:
    """A front matter value as a list: its ``- item`` lines, or the one value, or none."""
    value = _fm_get(front, name)
    return value if isinstance(value, list) else [value] if value else []


def _title(doc: _Document, path: Path, filename_number: int | None) -> tuple[str, int | None]:
    """The title without its number prefix and the number it writes; AdrParseError when there is none."""
    if doc.title is not None:
        raw_title = doc.title.text
    elif _front_text(doc.front, "title"):
        raw_title = _front_text(doc.front, "title")
    else:
        raise AdrParseError(path, "no title heading (a line starting with '# ')")
    title, title_number = _clean_title(raw_title, filename_number)
    if not title:
        raise AdrParseError(path, "the title heading is empty")
    return title, title_number


# Where a file may state its status, after the front matter, in the order they are tried: the first that
# gives one wins.


def _status_in_heading(doc: _Document) -> str:
    """A status written in the Status heading itself: ``## Status: Accepted``."""
    heading = doc.status_heading
    if heading is None or ":" not in heading.text:
        return ""
    return heading.text.split(":", 1)[1].strip(" *_")


def _status_label_in_preamble(doc: _Document) -> str:
    """A ``* Status: accepted`` line under the title, as MADR 2 and log4brains write it."""
    return _status_from_lines(doc.lines, doc.preamble, bullets_only=True)


def _status_section(doc: _Document) -> str:
    """The text of a ``## Status`` section, as adr-tools (Nygard) writes it."""
    return _status_from_lines(doc.lines, doc.status_lines, bullets_only=False)


def _superseded_note_in_preamble(doc: _Document) -> str:
    """A ``Superseded by ...`` line under the title, in a file that states no status otherwise."""
    return next(
        (
            _unmark(doc.lines[i])
            for i in doc.preamble
            if re.search(r"\bsuperseded\s+by\b", doc.lines[i], re.I)
        ),
        "",
    )


_STATUS_SOURCES: tuple[Callable[[_Document], str], ...] = (
    _status_in_heading,
    _status_label_in_preamble,
    _status_section,
    _superseded_note_in_preamble,
)


def _status_as_written(doc: _Document) -> tuple[str, bool]:
    """The status as the file writes it ("" when it states none), and whether the front matter states it."""
    stated = _front_text(doc.front, "status")
    if stated:
        return stated, True
    for source in _STATUS_SOURCES:
        raw_status = source(doc)
        if raw_status:
            return raw_status, False
    return "", False


def _stated_links(doc: _Document) -> dict[str, list[_Ref]]:
    """The links the front matter states, and those in the status, the preamble and the Status and Links
    sections."""
    links: dict[str, list[_Ref]] = {kind: [] for kind in RELATIONS}
    for key, kind in _FRONT_MATTER_RELATIONS.items():
        for item in _front_items(doc.front, key):
            links[kind].extend(_refs_in(item, bare=True) or _fallback_refs(item))
    fm_status = _front_text(doc.front, "status")
    region_lines = [fm_status] if fm_status else []
    region_lines += [doc.lines[i] for i in (*doc.preamble, *doc.status_lines, *doc.link_lines)]
    for line in (_inline_references(line, doc.definitions) for line in region_lines):
        for kind, ref in _relations_in_line(line, bare=True):
            links[kind].append(ref)
    return links


def _self_relations(doc: _Document) -> list[tuple[str, _Ref]]:
    """The links a record states about itself anywhere outside code (``This ADR supersedes ...``)."""
    return [
        found
        for index, line in enumerate(doc.lines)
        if not doc.code[index] and _SELF_RELATION_RE.search(line)
        for found in _relations_in_line(_inline_references(line, doc.definitions), bare=False)
    ]


def _suggested(doc: _Document) -> list[tuple[str, _Ref, str]]:
    """Supersessions the running text mentions outside the title, status and links (``This replaces ADR
    3.``), each with its sentence: suggestions for a person, never links."""
    stated = {*doc.preamble, *doc.status_lines, *doc.link_lines}
    found: list[tuple[str, _Ref, str]] = []
    paragraph: list[str] = []
    for index in range(doc.body_start, len(doc.lines) + 1):
        line = doc.lines[index] if index < len(doc.lines) else ""
        if line.strip() and not doc.code[index] and index not in stated:
            paragraph.append(_inline_references(line.strip(), doc.definitions))
            continue
        text = " ".join(paragraph)
        paragraph.clear()
        if not _MENTION_RE.search(text):
            continue
        for sentence in _SENTENCE_END_RE.split(text):
            said = sentence if len(sentence) <= MAX_SAID_CHARS else sentence[: MAX_SAID_CHARS - 3] + "..."
            found += [(kind, ref, said) for kind, ref in _mentions_in(sentence)]
    return found


def _context(doc: _Document) -> str | None:
    """The text of the Context section."""
    heading = doc.first("context")
    return _section_text(doc.lines, heading, doc.sections) if heading else None


def _decision(doc: _Document) -> str:
    """The Decision section (with a ``## Decision: X`` summary first), else the whole body."""
    heading = doc.first("decision", "proposal")
    if heading is None:
        return _body_text(doc.lines, doc.code, doc.body_start, doc.status_heading)
    decision = _section_text(doc.lines, heading, doc.sections) or ""
    summary = re.match(r"^decision\s*[:\-–—]\s*(.+)$", heading.text.strip(), re.I)
    if summary:
        decision = f"{summary.group(1).strip()}\n\n{decision}".strip()
    return decision


def _consequences(doc: _Document) -> str | None:
    """The Consequences section, else MADR's positive and negative consequences under their headings."""
    heading = doc.first("consequences")
    if heading is not None:
        return _section_text(doc.lines, heading, doc.sections)
    parts = [
        f"{h.text}\n\n{body}"
        for h in doc.sections
        if h.kind in {"positive", "negative"} and (body := _section_text(doc.lines, h, doc.sections))
    ]
    return "\n\n".join(parts) or None


def _date(doc: _Document) -> str | None:
    """The front matter date, else a ``Date:`` line under the title or in Status, else one anywhere."""
    date = parse_date(_as_text(_fm_get(doc.front, "date")))
    if date is None:
        date = _date_from_lines(doc.lines, [*doc.preamble, *doc.status_lines]) or _date_from_lines(
            doc.lines, _outside_code(doc.code, 0, len(doc.lines))
        )
    return date


def _deciders(doc: _Document) -> list[str]:
    """Who took the decision: front matter names, then ``Deciders:`` lines under the title or in Status."""
    deciders: list[str] = []
    for key in DECIDER_KEYS:
        for item in _front_items(doc.front, key):
            deciders += split_names(item)
    for index in (*doc.preamble, *doc.status_lines):
        named = _DECIDERS_LINE_RE.match(doc.lines[index])
        if named:
            deciders += split_names(named.group("value"))
    return list(dict.fromkeys(deciders))


# A code span: a run of backticks, then text up to the same run (CommonMark), on one line. Bounded,
# so that a hostile line of unmatched runs costs linear time; a longer span is no link anyway.
_CODE_SPAN_RE = re.compile(r"(?<!`)(`{1,16})(?!`)(.{1,300}?)(?<!`)\1(?!`)")


def _confirmation(doc: _Document) -> dict[str, list[str]]:
    """The code spans and relative link targets of the Confirmation sections, in the order written."""
    spans: list[str] = []
    targets: list[str] = []
    for heading in doc.sections:
        if heading.kind != "confirmation":
            continue
        for index in _outside_code(doc.code, heading.index + 1, heading.end):
            line = _inline_references(doc.lines[index], doc.definitions)
            spans += [span.group(2).strip() for span in _CODE_SPAN_RE.finditer(line)]
            for link in _LINK_RE.finditer(line):
                target = link.group("target")
                if target and not _SCHEME_RE.match(target) and not target.startswith(("#", "/")):
                    targets.append(unquote(target.split("#", 1)[0].split("?", 1)[0]))
    return {
        "confirmation_spans": list(dict.fromkeys(s for s in spans if s)),
        "confirmation_targets": list(dict.fromkeys(t for t in targets if t)),
    }


def _meta(front: Mapping[str, str | list[str]], ctx: Mapping[str, str]) -> dict[str, str]:
    """The front matter keys that no record field reads, such as ``ctx-id``, and ctx's comment block's
    (the front matter wins where both state a key)."""
    meta = {key: value for key, value in ctx.items() if key not in _FRONT_MATTER_USED}
    meta.update(
        (key, _as_text(value))
        for key, value in front.items()
        if key.lower().replace("_", "-") not in _FRONT_MATTER_USED
    )
    return meta


def _mentions(doc: _Document) -> frozenset[str]:
    """The file names (lower-case) of every Markdown file the text links to outside code."""
    targets = [
        link.group("target")
        for index, line in enumerate(doc.lines)
        if not doc.code[index]
        for link in _LINK_RE.finditer(line)
    ]
    return frozenset(
        linked.filename.lower()
        for target in (*targets, *doc.definitions.values())
        if (linked := _link_ref(target)) is not None and linked.filename is not None
    )


def _find_title(lines: Sequence[str], code: Sequence[bool], headings: Sequence[_Heading]) -> _Heading | None:
    """The title heading: the first line if it is a heading of any level, else the first level-one heading."""
    first_line = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first_line is None:
        return None
    for heading in headings:
        if heading.index == first_line and _section_kind(_section_name(heading.text)) is None:
            return heading
    if not code[first_line]:
        loose = _LOOSE_TITLE_RE.match(lines[first_line])
        if loose and not _ATX_RE.match(lines[first_line]):
            return _Heading(first_line, 1, _heading_text(loose.group(1)))
    return next((h for h in headings if h.level == 1), None)


def _unmark(line: str) -> str:
    """A line without blockquote markers, list bullets and surrounding emphasis."""
    text = _QUOTE_OR_BULLET_RE.sub("", line, count=1).strip()
    return re.sub(r"^[*_`]{1,3}(.*?)[*_`]{1,3}$", r"\1", text).strip()


def _status_from_lines(lines: Sequence[str], indexes: Iterable[int], *, bullets_only: bool) -> str:
    """The status written in these lines: a ``Status: X`` line, else (in a Status section) the first line
    naming a status, else its first meaningful line."""
    found = _status_line(lines, indexes, bullets_only=bullets_only)
    return found[1] if found else ""


def _status_line(
    lines: Sequence[str], indexes: Iterable[int], *, bullets_only: bool
) -> tuple[int, str] | None:
    """The line that states the status among these lines (see :func:`_status_from_lines`), and its status."""
    meaningful: list[tuple[int, str]] = []
    for index in indexes:
        line = lines[index]
        labelled = _STATUS_LINE_RE.match(_QUOTE_OR_BULLET_RE.sub("", line, count=1))
        value = labelled.group("value").strip().rstrip("*_ \t") if labelled else ""
        if value:
            return index, value
        if bullets_only:
            continue
        text = _unmark(line)
        if not text or _RULE_RE.match(text) or _DATE_LINE_RE.match(text):
            continue
        meaningful.append((index, text))
    if bullets_only or not meaningful:
        return None
    return next((found for found in meaningful if _status_keyword(found[1])), meaningful[0])


def _date_from_lines(lines: Sequence[str], indexes: Iterable[int]) -> str | None:
    """The first ``Date: ...`` line among these lines that holds a readable date."""
    for index in indexes:
        match = _DATE_LINE_RE.match(_QUOTE_OR_BULLET_RE.sub("", lines[index], count=1))
        if match:
            date = parse_date(match.group("value"))
            if date is not None:
                return date
    return None


def _body_text(lines: Sequence[str], code: Sequence[bool], start: int, status: _Heading | None) -> str:
    """The text after the title without the Status section or date/status label lines."""
    kept = []
    for index in range(start, len(lines)):
        if status is not None and status.index <= index < status.end:
            continue
        line = lines[index]
        if not code[index]:
            bare = _QUOTE_OR_BULLET_RE.sub("", line, count=1)
            if (
                (_DATE_LINE_RE.match(bare) and parse_date(bare))
                or _STATUS_LINE_RE.match(bare)
                or _DECIDERS_LINE_RE.match(bare)
            ):
                continue
        kept.append(line)
    return _strip_block(kept) or ""


def _fallback_refs(item: str) -> list[_Ref]:
    """A front matter link value that is neither a number nor a link: a file name, if it is one."""
    item = item.strip()
    if not item:
        return []
    numbered = file_number(item)
    filename = item if item.lower().endswith(".md") else None
    if numbered is not None:
        return [_Ref(numbered[1], numbered[0], filename)]
    return [_Ref(None, None, filename)] if filename else []


def _dedupe_refs(refs: Iterable[_Ref], name: str, number: int | None, prefix: str) -> list[_Ref]:
    """Links without repeats or links to the record itself."""
    seen: set[AdrRef] = set()
    kept: list[_Ref] = []
    for ref in refs:
        if ref.filename is not None and ref.filename.lower() == name.lower():
            continue
        if (
            ref.filename is None
            and ref.number is not None
            and ref.number == number
            and (ref.prefix is None or _series(ref.prefix) == _series(prefix))
        ):
            continue
        key = ref.value
        if key in seen:
            continue
        seen.add(key)
        kept.append(ref)
    return kept


# ---------------------------------------------------------------------------------------------------------
# Folders
# ---------------------------------------------------------------------------------------------------------


_TEMPLATE_WORDS = {"template", "adr", "madr", "architecture", "decision", "record", "example", "md"}


def _is_adr_file(path: Path) -> bool:
    """Whether a file in an ADR folder is an ADR (not a README, index or template such as
    ``template.md`` or ``0000-adr-template.md``; ``0014-project-templates.md`` is an ADR)."""
    lowered = path.name.lower()
    # A link is taken up (and refused by the reader if it leads out of the folder), so it is reported.
    if not (path.is_symlink() or path.is_file()) or not lowered.endswith(".md") or lowered.startswith("."):
        return False
    if lowered in {"readme.md", "index.md"}:
        return False
    if "template" in lowered:
        words = {word for word in _ascii_words(lowered[:-3]) if not word.isdigit()}
        if file_number(lowered) is None or words <= _TEMPLATE_WORDS:
            return False
    return True


def read_adr_folder(
    folder: Path, *, recursive: bool = False
) -> tuple[list[AdrRecord], list[AdrParseError], list[str]]:
    """Read every ADR in a folder: records by number then path, parse errors, and warnings about links.

    Links are resolved inside the folder and made two-way (if 4 says it supersedes 1, 1 is superseded by
    4). A link stays a number when that number names one file in the folder, else it becomes that file's
    path. Links that name nothing in the folder are kept as written and reported in the warnings.
    Symbolic links that lead out of the folder, files that are not regular files and files over
    MAX_ADR_BYTES are not read; each is reported with the parse errors.
    """
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    pattern = "**/*" if recursive else "*"
    files = sorted((p for p in folder.glob(pattern) if _is_adr_file(p)), key=lambda p: p.as_posix())
    inside = folder.resolve()
    parsed: list[_Parsed] = []
    errors: list[AdrParseError] = []
    for path in files:
        try:
            parsed.append(_parse(path, folder, inside))
        except AdrParseError as exc:
            errors.append(exc)
    index = _FolderIndex.of([item.record for item in parsed])
    edges, link_warnings = _two_way_links(parsed, index)
    resolved = [
        dataclasses.replace(
            record,
            supersedes=list(dict.fromkeys(edges[i]["supersedes"])),
            superseded_by=list(dict.fromkeys(edges[i]["superseded_by"])),
            amends=list(dict.fromkeys(edges[i]["amends"])),
            amended_by=list(dict.fromkeys(edges[i]["amended_by"])),
            suggested=_resolved_suggestions(i, parsed, index, edges),
        )
        for i, record in enumerate(index.records)
    ]
    resolved.sort(key=lambda r: (r.number is None, r.number if r.number is not None else 0, r.path))
    return resolved, errors, [*index.duplicate_numbers(), *link_warnings]


@dataclass(frozen=True)
class _FolderIndex:
    """The records read from a folder, found by file name (lower-case) and by number."""

    records: list[AdrRecord]
    by_name: dict[str, int]
    by_number: dict[int, list[int]]

    @classmethod
    def of(cls, records: list[AdrRecord]) -> _FolderIndex:
        """The index of these records; a name or number used twice keeps every record that uses it."""
        by_name: dict[str, int] = {}
        by_number: dict[int, list[int]] = {}
        for index, record in enumerate(records):
            by_name.setdefault(Path(record.path).name.lower(), index)
            if record.number is not None:
                by_number.setdefault(record.number, []).append(index)
        return cls(records, by_name, by_number)

    def duplicate_numbers(self) -> list[str]:
        """A warning for each number that more than one file uses."""
        warnings = []
        for number, indexes in sorted(self.by_number.items()):
            if len(indexes) > 1:
                names = ", ".join(self.records[i].path for i in indexes)
                warnings.append(f"number {number} is used by more than one file: {names}")
        return warnings

    def value_of(self, index: int) -> AdrRef:
        """How a link names this record: its number if no other file uses it, else its path."""
        record = self.records[index]
        if record.number is not None and len(self.by_number[record.number]) == 1:
            return record.number
        return record.path


def _two_way_links(
    parsed: Sequence[_Parsed], index: _FolderIndex
) -> tuple[dict[int, dict[str, list[AdrRef]]], list[str]]:
    """Each record's links resolved in the folder, with their inverses, and warnings about links that
    name nothing or are unclear."""
    edges: dict[int, dict[str, list[AdrRef]]] = {
        i: {kind: [] for kind in RELATIONS} for i in range(len(index.records))
    }
    warnings: list[str] = []
    for source, item in enumerate(parsed):
        for kind in RELATIONS:
            for ref in item.links[kind]:
                target, note = _resolve(ref, source, parsed, index.by_name, index.by_number)
                if note:
                    warnings.append(f"{item.record.path}: {kind.replace('_', ' ')} {_describe(ref)}: {note}")
                if target is None:
                    edges[source][kind].append(ref.value)
                    continue
                edges[source][kind].append(index.value_of(target))
                edges[target][_INVERSE[kind]].append(index.value_of(source))
    return edges, warnings


def _resolved_suggestions(
    source: int,
    parsed: Sequence[_Parsed],
    index: _FolderIndex,
    edges: Mapping[int, Mapping[str, list[AdrRef]]],
) -> list[SuggestedLink]:
    """A record's suggested links that name one file in the folder and are not links already."""
    found: dict[tuple[str, AdrRef], SuggestedLink] = {}
    for kind, ref, said in parsed[source].suggested:
        target, _ = _resolve(ref, source, parsed, index.by_name, index.by_number)
        if target is None or target == source:
            continue
        value = index.value_of(target)
        if value in edges[source][kind] or value in edges[source][_INVERSE[kind]]:
            continue
        found.setdefault((kind, value), SuggestedLink(kind, value, said))
    return list(found.values())


def _describe(ref: _Ref) -> str:
    """A link as a person would name it in a warning."""
    if ref.filename:
        return ref.filename
    prefix = (ref.prefix or "").upper()
    return f"{prefix}{ref.number}" if prefix else f"ADR {ref.number}"


def _resolve(
    ref: _Ref,
    source: int,
    parsed: Sequence[_Parsed],
    by_name: Mapping[str, int],
    by_number: Mapping[int, list[int]],
) -> tuple[int | None, str | None]:
    """The index of the record a link names, and a note for the warnings when something is off."""
    if ref.filename is not None and ref.filename.lower() in by_name:
        return by_name[ref.filename.lower()], None
    missing_file = f"{ref.filename} is not in the folder" if ref.filename else None
    if ref.number is None:
        return None, missing_file
    candidates = [i for i in by_number.get(ref.number, []) if i != source]
    if not candidates:
        return None, missing_file or f"no ADR numbered {ref.number} in the folder"
    source_record = parsed[source].record
    source_prefix = (file_number(Path(source_record.path).name) or ("", 0))[0]
    wanted = ref.prefix if ref.prefix is not None else source_prefix
    for series in (_series(wanted), _series(source_prefix)):
        narrowed = [i for i in candidates if _series(_prefix_of(parsed[i].record)) == series]
        if narrowed:
            candidates = narrowed
            break
    if len(candidates) > 1:
        linking_back = [i for i in candidates if _links_to(parsed[i].links, source_record)]
        source_name = Path(source_record.path).name.lower()
        mentioning = [i for i in candidates if source_name in parsed[i].mentions]
        for narrowed in (linking_back, mentioning):
            if len(narrowed) == 1:
                candidates = narrowed
                break
    if len(candidates) > 1:
        names = ", ".join(parsed[i].record.path for i in candidates)
        return None, f"ambiguous, could be any of {names}"
    target = candidates[0]
    if missing_file:
        return target, f"{missing_file}; resolved by number to {parsed[target].record.path}"
    return target, None


def _prefix_of(record: AdrRecord) -> str:
    """The series prefix of a record's file name (``adr`` for ``ADR007-x.md``, empty for ``0007-x.md``)."""
    numbered = file_number(Path(record.path).name)
    return numbered[0] if numbered else ""


def _links_to(links: Mapping[str, list[_Ref]], record: AdrRecord) -> bool:
    """Whether any of these links names the record by file name or number."""
    name = Path(record.path).name.lower()
    return any(
        (ref.filename is not None and ref.filename.lower() == name)
        or (ref.filename is None and ref.number is not None and ref.number == record.number)
        for refs in links.values()
        for ref in refs
    )


# ---------------------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------------------

AdrLinkTarget = int | str | tuple[int, str] | AdrRecord
"""What :func:`render_adr` accepts as a link: a number, a file name, ``(number, title)`` or a record."""

_SAFE_SCALAR_RE = re.compile(r"^[A-Za-z0-9_.@/+()][^:#\n\"']*$")
_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _yaml_scalar(value: str) -> str:
    """A string as a flat YAML scalar, double-quoted unless it is plainly safe."""
    if "\n" in value or "\r" in value:
        raise ValueError(f"front matter values must be one line: {value!r}")
    if _SAFE_SCALAR_RE.match(value) and value == value.strip():
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _render_link(target: AdrLinkTarget) -> str:
    """One link as Markdown: ``[N. Title](file.md)``, or ``ADR-NNNN`` when only the number is known."""
    if isinstance(target, AdrRecord):
        text = f"{target.number}. {target.title}" if target.number is not None else target.title
        return f"[{_escape_link_text(text)}]({target.path})"
    if isinstance(target, tuple):
        number, title = target
        return f"[{_escape_link_text(f'{number}. {title}')}]({adr_filename(number, title)})"
    if isinstance(target, bool):
        raise TypeError("an ADR link cannot be a bool")
    if isinstance(target, int):
        return f"ADR-{target:04d}"
    return f"[{_escape_link_text(target)}]({target})"


def link_to(record: AdrRecord) -> str:
    """A Markdown link to a record from a file beside it, as adr-tools writes it: ``[3. X](0003-x.md)``."""
    text = f"{record.number}. {record.title}" if record.number is not None else record.title
    return f"[{_escape_link_text(text)}]({quote(Path(record.path).name)})"


def _escape_link_text(text: str) -> str:
    """Link text with backslashes and brackets escaped, so no title can end the link early."""
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def render_adr(
    number: int,
    title: str,
    decision: str,
    *,
    status: str = DEFAULT_STATUS,
    date: str | None = None,
    context: str | None = None,
    consequences: str | None = None,
    subject: str | None = None,
    supersedes: Sequence[AdrLinkTarget] = (),
    superseded_by: Sequence[AdrLinkTarget] = (),
    amends: Sequence[AdrLinkTarget] = (),
    amended_by: Sequence[AdrLinkTarget] = (),
    extra: Mapping[str, str] | None = None,
) -> str:
    """MADR-style Markdown for one ADR that :func:`parse_adr` reads back to the same fields.

    Section texts are written as given (stripped); they should not contain level-one or level-two
    headings, which would start a new section when the file is read back. A link given as a file name
    that starts with a number (``0012-x.md``) reads back as that number.
    """
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    if number < 0:
        raise ValueError(f"ADR number must not be negative: {number}")
    title = title.strip()
    if not title or "\n" in title:
        raise ValueError("the title must be one non-empty line")
    if date is not None:
        try:
            date = dt.date.fromisoformat(date).isoformat()
        except ValueError as exc:
            raise ValueError(f"date must be ISO YYYY-MM-DD, not {date!r}") from exc
    front: dict[str, str] = {"status": status}
    if date is not None:
        front["date"] = date
    front["subject"] = (subject or derive_subject(title, number)).strip()
    for key, value in (extra or {}).items():
        if not _KEY_RE.match(key) or key.lower().replace("_", "-") in _FRONT_MATTER_USED:
            raise ValueError(f"invalid or reserved front matter key {key!r}")
        front[key] = str(value)

    out = ["---", *(f"{key}: {_yaml_scalar(value)}" for key, value in front.items()), "---", ""]
    out += [f"# {number}. {title}", "", "## Status", "", status.capitalize(), ""]
    for label, targets in (
        ("Supersedes", supersedes),
        ("Superseded by", superseded_by),
        ("Amends", amends),
        ("Amended by", amended_by),
    ):
        out += [line for target in targets for line in (f"{label} {_render_link(target)}", "")]
    for heading, body in (("Context", context), ("Decision", decision), ("Consequences", consequences)):
        if heading == "Decision" or (body and body.strip()):
            out += [f"## {heading}", "", (body or "").strip(), ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------------------------
# Editing a file in place: only the front matter keys and the status change, every other line is kept
# ---------------------------------------------------------------------------------------------------------


def yaml_scalar(value: str) -> str:
    """A one-line string as a flat YAML scalar, double-quoted unless it is plainly safe."""
    return _yaml_scalar(value)


def set_front_matter(text: str, values: Mapping[str, str | list[str] | None]) -> str:
    """Set flat front matter keys (a list as ``- item`` lines; None removes the key), keeping other lines.

    A file without front matter gets a block at its top.
    """
    rendered: dict[str, list[str]] = {}
    for key, value in values.items():
        if value is None:
            rendered[key] = []
        elif isinstance(value, list):
            rendered[key] = [f"{key}:", *(f"  - {_yaml_scalar(item)}" for item in value)]
        else:
            rendered[key] = [f"{key}: {_yaml_scalar(value)}"]
    wanted = {key.lower().replace("_", "-"): key for key in rendered}
    match = _FRONT_MATTER_RE.match(text)
    block = (match.group(1) or "").split("\n") if match else []
    kept: list[str] = []
    done: set[str] = set()
    replacing = False
    for line in block:
        key_match = _FM_KEY_RE.match(line)
        if key_match is not None:
            name = wanted.get(key_match.group(1).lower().replace("_", "-"))
            replacing = name is not None
            if name is not None and name not in done:
                kept += rendered[name]
                done.add(name)
            if replacing:
                continue
        elif replacing and (_FM_ITEM_RE.match(line) or line.startswith((" ", "\t"))):
            continue  # the replaced key's list items or continuation lines
        else:
            replacing = False
        kept.append(line)
    for key, lines in rendered.items():
        if key not in done:
            kept += lines
    body = text[match.end() :] if match else text
    if not any(line.strip() for line in kept):
        return body if match is None else body.lstrip("\n")
    return "---\n" + "\n".join(kept).strip("\n") + "\n---\n" + ("" if match else "\n") + body


# ---------------------------------------------------------------------------------------------------------
# ctx's own fields: in the front matter of a file that keeps its metadata there, else in a comment block
# ---------------------------------------------------------------------------------------------------------

_MAX_BLOCK_LINES = 16


def _key_name(key: str) -> str:
    """A front matter key as ctx compares keys (``Ctx_Id`` is ``ctx-id``)."""
    return key.lower().replace("_", "-")


def _block_scalar(value: str) -> str:
    """A one-line value for the comment block, in which ``--`` never appears, so that no value can close
    the HTML comment early (``-\\-`` reads back as ``--``)."""
    scalar = _yaml_scalar(value)
    if "--" not in scalar:
        return scalar
    if not scalar.startswith('"'):
        scalar = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return re.sub(r"-(?=-)", r"-\\", scalar)


def _find_ctx_block(lines: Sequence[str]) -> tuple[int, int, dict[str, str]] | None:
    """The last ctx comment block outside code: its first and last line, and its fields.

    Only ctx's own keys are read from it, so a block can state nothing a front matter could not.
    """
    code = _code_mask(lines)
    found: tuple[int, int, dict[str, str]] | None = None
    for start, line in enumerate(lines):
        if code[start] or not line.startswith("<!-- ctx") or "-->" in line:
            continue
        if line[8:9] not in ("", ":"):  # "<!-- ctx notes" is someone's own comment
            continue
        fields: dict[str, str] = {}
        for end in range(start + 1, min(len(lines), start + 2 + _MAX_BLOCK_LINES)):
            if lines[end].strip() == "-->":
                found = (start, end, fields) if fields else found
                break
            match = _FM_KEY_RE.match(lines[end])
            if match is None or "--" in lines[end]:
                break
            if _key_name(match.group(1)) in CTX_KEYS:
                fields[_key_name(match.group(1))] = _unquote_scalar(match.group(2) or "")
    return found


def _split_ctx_block(text: str) -> tuple[str, dict[str, str]]:
    """Markdown without its ctx comment block (exactly as it was before the block was added), and the
    block's fields."""
    lines = text.split("\n")
    found = _find_ctx_block(lines)
    if found is None:
        return text, {}
    start, end, fields = found
    rest = lines[end + 1 :]
    if rest and rest[0] == "":  # the blank line that follows the block is the block's own
        rest = rest[1:]
    return "\n".join([*lines[:start], *rest]), fields


def _block_position(body: str) -> int | None:
    """Where the comment block goes: the line of the first heading after the title, outside code (so
    before adr-tools' ``## Status`` section, never inside it); None for the end of the file."""
    shadow = _without_comments(body, keep_lines=True).split("\n")
    code = _code_mask(shadow)
    headings = _headings(shadow, code)
    title = _find_title(shadow, code, headings)
    after = title.index if title is not None else -1
    first = next((h.index for h in headings if h.index > after), None)
    if first is not None or not _code_mask([*shadow, "<!--"])[-1]:
        return first
    # The file ends in an unclosed code fence, where the block would be code: it goes under the title.
    position = after + 1
    if title is not None and position < len(shadow) and _SETEXT_H1_RE.match(shadow[position]):
        position += 1
    return position


def _with_ctx_block(text: str, fields: Mapping[str, str]) -> str:
    """The file with a ctx comment block holding these fields, in place of any it had."""
    match = _FRONT_MATTER_RE.match(text)
    head, body = (text[: match.end()], text[match.end() :]) if match else ("", text)
    body = _split_ctx_block(body)[0]
    if not fields:
        return head + body
    block = [CTX_BLOCK_OPEN, *(f"{key}: {_block_scalar(value)}" for key, value in fields.items()), "-->"]
    position = _block_position(body)
    if position is None:
        return head + body.rstrip("\n") + "\n\n" + "\n".join(block) + "\n"
    lines = body.split("\n")
    return head + "\n".join([*lines[:position], *block, "", *lines[position:]])


def keeps_front_matter(text: str) -> bool:
    """Whether a file keeps metadata of its own in front matter (MADR), beyond ctx's keys."""
    return any(_key_name(key) not in CTX_KEYS for key in front_matter_of(text))


def set_ctx_fields(text: str, values: Mapping[str, str | None]) -> str:
    """The file with ctx's fields set where its own tools ignore them, every other line kept.

    A file that keeps its metadata in front matter (MADR) keeps ctx's keys there too. Any other file
    (adr-tools, which reads the title from line 1; log4brains and MADR 2, which read a list under the
    title) keeps them in an HTML comment before its first section, and loses a front matter that held
    only ctx's keys. A value of None leaves the key out.
    """
    if keeps_front_matter(text):
        match = _FRONT_MATTER_RE.match(text)
        head = text[: match.end()] if match else ""
        return set_front_matter(head + _split_ctx_block(text[len(head) :])[0], dict(values))
    if _FRONT_MATTER_RE.match(text):
        text = set_front_matter(text, {key: None for key in front_matter_of(text)})
    return _with_ctx_block(text, {key: value for key, value in values.items() if value is not None})


def ctx_fields_of(text: str) -> dict[str, str]:
    """ctx's fields in Markdown text: its comment block's, and its front matter's (which win)."""
    match = _FRONT_MATTER_RE.match(text)
    fields = _split_ctx_block(text[match.end() :] if match else text)[1]
    for key, value in front_matter_of(text).items():
        if _key_name(key) in CTX_KEYS:
            fields[_key_name(key)] = value
    return fields


def ctx_fields(path: Path, inside: Path | None = None) -> dict[str, str]:
    """ctx's fields in a file (see :func:`ctx_fields_of`), read as ADRs are read."""
    return ctx_fields_of(_read_text(path, inside))


def set_status(text: str, status: str) -> str:
    """The file with its status replaced by ``status`` where the file states it, every other line kept.

    The front matter ``status`` key, a ``## Status`` section or heading, or a ``Status:`` line is
    rewritten; a file that states no status gets a ``## Status`` section under its title. If the
    result would not read back as ``status``, the status goes into the front matter instead.
    """
    wanted = normalise_status(status)
    match = _FRONT_MATTER_RE.match(text)
    if match and _fm_get(_parse_front_matter(match.group(1) or ""), "status") is not None:
        return set_front_matter(text, {"status": status})
    head, body = (text[: match.end()], text[match.end() :]) if match else ("", text)
    # Comments are blanked line for line, so positions found in the shadow are positions in the file.
    shadow = _without_comments(body, keep_lines=True).split("\n")
    lines = body.split("\n")
    code = _code_mask(shadow)
    headings = _headings(shadow, code)
    title = _find_title(shadow, code, headings)
    start = title.index + 1 if title is not None else 0
    later = [h for h in headings if h.index >= start]
    section = next((h for h in later if _section_kind(_section_name(h.text)) == "status"), None)
    edited: list[str] | None = None
    if section is not None:
        end = next(
            (h.index for h in later if h.index > section.index and h.level <= section.level), len(lines)
        )
        if ":" in section.text:
            edited = [
                *lines[: section.index],
                f"{'#' * section.level} Status: {status}",
                *lines[section.index + 1 :],
            ]
        else:
            edited = _with_status_line(lines, shadow, code, section, end, status)
    else:
        first = next((h.index for h in later), len(lines))
        for index in range(start, first):
            label = _STATUS_LINE_RE.match(lines[index]) if not code[index] else None
            if label is not None:
                edited = [*lines[:index], lines[index][: label.start("value")] + status, *lines[index + 1 :]]
                break
        if edited is None:
            rest = lines[start:]
            while rest and not rest[0].strip():
                rest.pop(0)
            edited = [*lines[:start], "", "## Status", "", status, "", *rest]
    result = head + "\n".join(edited)
    try:
        if parse_text(result, "edited.md").status == wanted:
            return result
    except AdrParseError:
        pass
    return set_front_matter(text, {"status": status})


def _with_status_line(
    lines: list[str], shadow: list[str], code: list[bool], section: _Heading, end: int, status: str
) -> list[str]:
    """A Status section with the line that states the status replaced, as adr-tools replaces it, so its
    links (``Supersedes [2. X](0002-x.md)``) stay; an empty section gets the status."""
    found = _status_line(shadow, _outside_code(code, section.index + 1, end), bullets_only=False)
    if found is None:
        return [*lines[: section.index + 1], "", status, "", *lines[end:]]
    index = found[0]
    labelled = _STATUS_LINE_RE.match(lines[index])
    if labelled is not None:
        return [*lines[:index], lines[index][: labelled.start("value")] + status, *lines[index + 1 :]]
    bullet = _QUOTE_OR_BULLET_RE.match(lines[index])
    return [*lines[:index], (bullet.group() if bullet else "") + status, *lines[index + 1 :]]


def has_top_headings(text: str) -> bool:
    """Whether a text holds a level-one or level-two heading (outside code), which would end a section."""
    lines = text.split("\n")
    return any(h.level <= 2 for h in _headings(lines, _code_mask(lines)))


def is_adr_file(path: Path) -> bool:
    """Whether the folder reader takes this file as an ADR (not a README, index or template)."""
    return _is_adr_file(path)


def series(prefix: str | None) -> str:
    """The numbering series a file-name prefix names (``ADR``, ``adr-`` and none are one series)."""
    return _series(re.sub(r"[-_ ]+$", "", prefix or ""))


def slug(title: str, *, keep_case: bool = False) -> str:
    """A title as a file-name slug: ASCII words joined by hyphens, at most about 60 characters."""
    folded = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[A-Za-z0-9]+", re.sub(r"['`]", "", folded))
    text = "-".join(words if keep_case else [w.lower() for w in words])
    if len(text) > 60:
        text = text[:60].rsplit("-", 1)[0] if "-" in text[:60] else text[:60]
    return text or "adr"
