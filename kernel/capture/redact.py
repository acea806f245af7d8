"""Replace obvious secrets in evidence text with typed placeholders such as ``[REDACTED:github-token]``.

Why hand-written patterns and not a library
    Yelp's detect-secrets 1.5.0 was measured first, on this project's 2-core machine: importing it
    takes about 160 ms (it pulls in ``requests``), and it scans line by line through per-plugin
    Python filters at about 8 ms per 1.5 KB record, against a budget well under 0.2 ms (bulk ingest
    must keep 2,000 records/s). Its ad-hoc ``scan_line`` reports values but no positions and, with
    its eager search, flags git SHAs and words such as "commit"; on a sample record it missed
    ``AWS_SECRET_ACCESS_KEY=…`` and a bearer token. Microsoft's secret masker
    (``microsoft-security-utilities-secret-masker`` 1.0.0b4, a beta) gives positions but knows
    Azure formats only (no AWS, GitHub, Slack, Stripe, OpenAI or private keys) and takes about
    1.9 ms per record. Neither fits the ``ctx log`` hot path, so this module has its own finders:

    * every pattern scanned over the whole text starts with a literal (``-----BEGIN``, ``bearer``,
      ``eyJ``, ``://``, ``token``, …), which the regex engine finds by fast search instead of trying
      the pattern at every position (a leading character class, lookbehind or alternation makes
      a scan 20 to 100 times slower);
    * runs of base64 characters, where tokens and random keys live, are found with
      ``bytes.translate`` and ``bytes.find`` on a byte mask, and only those runs are searched for
      vendor prefixes or judged for randomness;
    * patterns that only candidates need are compiled on first use (``re`` caches them), which
      keeps the import at a few milliseconds;
    * quantifiers are bounded or possessive, and prefixes carry their own boundary, so that no input
      makes a scan quadratic or backtrack catastrophically.

    Measured with ``bench/redact_bench.py`` on that machine: about 60 us per clean 1.5 KB record
    and 100 us per record holding two secrets; the import takes about 3 ms (7 ms without cached
    bytecode).

What is caught (kind: example)
    aws-access-key: ``AKIA``/``ASIA`` + 16; aws-secret-key: the 40 characters after
    ``aws_secret_access_key =`` or ``"SecretAccessKey":``; github-token: ``ghp_ gho_ ghu_ ghs_ ghr_
    github_pat_``; gitlab-token: ``glpat-``; slack-token: ``xox[abprs]-``; slack-webhook: the path of a
    ``hooks.slack.com/services/`` URL; stripe-key: ``sk_live_ rk_live_ sk_test_ rk_test_ whsec_``;
    anthropic-key: ``sk-ant-``; openai-key: ``sk-``, ``sk-proj-``; google-api-key: ``AIza`` + 35;
    jwt: ``eyJ…eyJ…signature``; bearer-token: ``Bearer <token>`` (the word is kept); basic-auth:
    ``Authorization: Basic <b64>``; private-key: a ``-----BEGIN … PRIVATE KEY-----`` block to its END
    line, or to its last base64 line when it was cut off; password: ``scheme://user:<password>@host``
    (user and host kept); password, secret, token, api-key: the value assigned to a key that names
    one, in env, config, JSON, header or query style (``DB_PASSWORD=…``, ``"api_key": "…"``,
    ``secret: …``, ``X-Api-Key: …``, ``?access_token=…``, ``&sig=…``); password: the value of a
    command-line option that takes one (``mysql -pSECRET``, ``--password=``, ``sshpass -p``,
    ``redis-cli -a``, ``docker login -p``, ``curl -u user:…``, ``openssl -passin pass:…``,
    ``ldapsearch -w``, ``sqlcmd -P``, ``smbclient -U user%…``) and the last field of a ``.pgpass``
    line; npm-token, pypi-token, huggingface-token, digitalocean-token, shopify-token: by prefix;
    high-entropy: any other run of 32 or more base64 characters that reads as random (see the
    thresholds below), with the token-like parts a dot joins to it (``id.time.hmac``).

What is deliberately left alone
    Runs of hex digits and hyphens of any length, whatever their context: git SHAs, UUIDs and
    64-hex sha256 digests are hashes or ids far more often than secrets, so a hex secret is caught
    only as the value of a named assignment (``api_key = "9f2c…"``). Digests after ``sha256=``,
    ``sha512-``, ``"integrity":`` and the like (npm and SRI integrity, pip RECORD lines); ctx's own
    ids (``ev_``, ``pr_``, ``dc_`` + 26 Crockford base32), alone or joined; identifiers in snake,
    kebab, camel or Pascal case and long words, whose "words" are too long to read as random;
    paths (a slash-separated run with two plain-word segments is judged segment by segment); URLs
    without a password; emails; versions; base64 of a few words (under 32 characters).

    Public material, by the structure of its format rather than by case: PEM blocks labelled as
    certificates, certificate requests, CRLs, public keys, PGP public keys and signatures (a block
    labelled PRIVATE KEY is always replaced); base64 that decodes to an SSH public key (RFC 4253:
    ``ssh-ed25519 AAAAC3…``, ``ssh-rsa``, ``ecdsa-sha2-*``, in authorized_keys and known_hosts alike),
    to an image, font, sound, video or PDF file (by its first bytes, with the lines of a wrapped blob)
    or follows a ``data:image/…;base64,`` prefix; base64 that decodes to a JSON document with no key
    naming a secret (pass, pwd, secret, token, key, cred, auth, private, cookie, sig), or to a PEM
    block or markup, when redacting the decoded text finds nothing (so base64 of a certificate is
    kept and base64 of a private key or of docker credentials is not); Go's and Terraform's
    ``h1:`` hashes; password hashes in modular crypt format (``$2b$12$…`` bcrypt, ``$argon2id$…``,
    ``$6$…``), which are stored as they are; Stripe's publishable ``pk_live_`` keys.

Known gaps
    Prose is not parsed ("the password is hunter2" and a ``.netrc`` password without a token
    prefix are kept); a command-line password is caught only for the tools listed above, after a
    blank.
    ``key: value`` with a colon counts only at the start of a line, after a quoted key or before a
    quoted value, so "invalid token: expired" is kept. Unquoted values made of letters only are
    taken for variable names (``password=user``), so ``PASSWORD=changeme`` is kept; quoted values
    with spaces are taken for messages (passphrases are kept), and a quoted word in one case for a
    name (``"pad_token": "PAD"``); values that read as code or
    references (``get_token()``, ``os.environ[…]``, ``$TOKEN``, ``<your-key>``, ``str``) are kept;
    an unquoted value ends at ``&``, ``;`` or ``,``. A value of 200 characters or more, and any
    random-looking key without a vendor prefix or a named key, is left to the high-entropy finder,
    which catches about 99 % of random base64 keys but only 84 % of lower-case-and-digit ones.
    Other public random-looking ids (a YouTube playlist id, base58 addresses) are redacted as
    high-entropy: nothing around them says they are public, and that errs on the safe side.

The labelled set in ``tests/redact_labelled.py`` (65 secrets, 62 public look-alikes) gives the
rates ``bench/redact_bench.py`` prints: all its secrets caught, all but one public string kept.

Redacting twice changes nothing: placeholders match no pattern, and ``redact`` repeats its pass
while a placeholder touches a base64 character or cut another candidate short, since a secret
glued to another one only shows its edge once the other is replaced.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from dataclasses import dataclass

PLACEHOLDER = "[REDACTED:{kind}]"
_PLACEHOLDER_START = "[REDACTED:"
_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_BASE64 = _ALNUM + "+/_-"  # both the standard and the url-safe alphabet, without padding

# Generic tokens: a run of at least _MIN_RANDOM_LENGTH base64 characters that keeps at least
# _MIN_RANDOM_REST once its hex parts are set aside, splits (see _WORDS) into at least
# _MIN_WORDS_PER_CHAR words per character (or _MIN_WORDS_PER_CHAR_WITHOUT_DIGITS when it has no
# digit), and has a Shannon entropy of at least _MIN_ENTROPY bits per character. Tuned on the
# 13,966 identifiers of 32 or more characters in the standard library and ctx's site-packages (none
# is flagged; at 0.3, KMSDataKeyForS3AndEC2Permissions is) and on random keys, of which these catch
# 99 % of base64 and url-safe base64 ones of 24 to 32 bytes and of 32-character alphanumeric ones,
# 89 % of 40-character Crockford base32 ones and 84 % of 32-character lower-case-and-digit ones.
_MIN_RANDOM_LENGTH = 32
_MIN_RANDOM_REST = 24
_MIN_WORDS_PER_CHAR = 0.33
_MIN_WORDS_PER_CHAR_WITHOUT_DIGITS = 0.4
_MIN_ENTROPY = 3.5
# Vendor tokens are searched for only inside runs of base64 characters at least this long: the
# shortest one, an xox?- Slack token, has 15 characters.
_MIN_TOKEN_LENGTH = 15
_MAX_PASSES = 4


@dataclass(frozen=True)
class Redaction:
    """Text with its secrets replaced, and how many of each kind were replaced."""

    text: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        """Number of secrets replaced, all kinds together."""
        return sum(self.counts.values())


def redact(text: str) -> Redaction:
    """Replace every secret this module recognises in ``text`` by ``[REDACTED:<kind>]``."""
    counts: dict[str, int] = {}
    # A secret glued to another one (sk-ant-…AA-----BEGIN PRIVATE KEY-----) shows its edge only once
    # the other is replaced, so another pass follows while a placeholder touches a base64 character
    # or cut a candidate short; nearly every text takes one pass.
    for _ in range(_MAX_PASSES):
        text, found, glued = _redact_once(text)
        for kind, n in found.items():
            counts[kind] = counts.get(kind, 0) + n
        if not glued:
            break
    return Redaction(text, counts)


def _redact_once(text: str) -> tuple[str, dict[str, int], bool]:
    """Replace what one pass of the finders sees, and tell whether the result needs another pass."""
    # str.lower() keeps every position except for U+0130, which it turns into two characters.
    lowered = text.replace("\u0130", "I").lower()
    runs = _base64_runs(text)
    spans = _Spans()
    # The more specific finders run first, and a later span that overlaps an earlier one is dropped.
    _find_pem_blocks(text, spans)
    _find_vendor_tokens(text, runs, spans)
    _find_context_tokens(text, lowered, spans)
    _find_command_passwords(text, lowered, spans)
    _find_pgpass_lines(text, spans)
    _find_assignments(text, lowered, spans)
    _find_random_tokens(text, lowered, runs, spans)
    if not spans.kept:
        return text, {}, False
    parts: list[str] = []
    counts: dict[str, int] = {}
    glued = spans.clipped
    position = 0
    for start, end, kind in spans.kept:
        if kind is None:
            continue  # public material: certificates, public keys, images, password hashes
        parts.append(text[position:start])
        parts.append(PLACEHOLDER.format(kind=kind))
        counts[kind] = counts.get(kind, 0) + 1
        glued = (
            glued or (start > 0 and text[start - 1] in _BASE64) or (end < len(text) and text[end] in _BASE64)
        )
        position = end
    parts.append(text[position:])
    return "".join(parts), counts, glued


class _Spans:
    """Spans to replace, in text order and never overlapping."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.kept: list[tuple[int, int, str | None]] = []
        # Set when a candidate was dropped for sticking out of a kept span: once that span is a
        # placeholder, the part outside may match on its own, so the text needs another pass.
        self.clipped = False

    def overlaps(self, start: int, end: int) -> bool:
        """Tell whether the span overlaps one kept before."""
        index = bisect_left(self.starts, end)
        if index == 0 or self.kept[index - 1][1] <= start:
            return False
        kept_start, kept_end, kind = self.kept[index - 1]
        if kind is not None:
            self.clipped = self.clipped or start < kept_start or end > kept_end
        return True

    def free(self, start: int, end: int) -> bool:
        """Tell whether the span overlaps none kept before (without noting a clipped candidate)."""
        index = bisect_left(self.starts, end)
        return index == 0 or self.kept[index - 1][1] <= start

    def add(self, start: int, end: int, kind: str | None) -> None:
        """Keep the span unless it overlaps one kept before; a kind of None marks public text to leave."""
        if self.overlaps(start, end):
            return
        index = bisect_left(self.starts, start)
        self.starts.insert(index, start)
        self.kept.insert(index, (start, end, kind))


# A run of base64 characters, found with a byte mask: a regex scan for long runs costs about 60 us
# per 1.5 KB record (it tries every word), bytes.translate plus bytes.find about 2 us. latin-1 with
# "replace" gives exactly one byte per character, so positions carry over.
_RUN_MASK = bytes(0x61 if chr(byte) in _BASE64 else 0x20 for byte in range(256))
_SHORTEST_RUN = b"a" * _MIN_TOKEN_LENGTH


def _base64_runs(text: str) -> list[tuple[int, int]]:
    """Return the bounds of every run of base64 characters long enough to hold a token."""
    mask = text.encode("latin-1", "replace").translate(_RUN_MASK)
    runs: list[tuple[int, int]] = []
    start = mask.find(_SHORTEST_RUN)
    while start != -1:
        end = mask.find(b" ", start + _MIN_TOKEN_LENGTH)
        if end == -1:
            end = len(mask)
        runs.append((start, end))
        start = mask.find(_SHORTEST_RUN, end)
    return runs


# ---- PEM blocks: private keys, certificates, public keys ------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9][ A-Z0-9]{0,40})-----")
# Labels of PEM blocks that hold public material (RFC 7468 and OpenPGP): left alone, body and all.
_PUBLIC_PEM_LABELS = frozenset(
    (
        "CERTIFICATE",
        "TRUSTED CERTIFICATE",
        "X509 CERTIFICATE",
        "X509 CRL",
        "CERTIFICATE REQUEST",
        "NEW CERTIFICATE REQUEST",
        "PUBLIC KEY",
        "RSA PUBLIC KEY",
        "DSA PUBLIC KEY",
        "EC PUBLIC KEY",
        "SSH2 PUBLIC KEY",
        "PGP PUBLIC KEY BLOCK",
        "PGP SIGNATURE",
        "PKCS7",
        "CMS",
        "DH PARAMETERS",
        "EC PARAMETERS",
    )
)
# The body: base64 lines (after real or escaped newlines) and PEM headers, or base64 chunks on the
# header's own line; it stops at the first line of anything else, so a block that was cut off
# ends with its last base64 line. This and the other patterns kept as strings are compiled on first
# use, since only candidates need them.
_KEY_BODY = r"""
    (?:(?:\r?\n|(?:\\r)?\\n)[ \t]*
         (?:[A-Za-z0-9+/=]++|(?:Proc-Type|DEK-Info|Version|Comment|Hash|Charset):[^\r\n\\]{0,200})?
         [ \t]*(?=\r?\n|(?:\\r)?\\n|["']|\Z)
     |[ \t]*(?:[A-Za-z0-9+/=]{20,}+|[A-Za-z0-9+/=]{1,19}+(?=[ \t]*-----END))(?=\s|(?:\\r)?\\n|["']|\Z))*
    """
_PEM_END = r"(?:\s|\\r|\\n)*-----END[ A-Z0-9]{0,40}-----"
_KEY_MATERIAL = r"[A-Za-z0-9+/]{16}"


def _find_pem_blocks(text: str, spans: _Spans) -> None:
    """Replace private key blocks; mark certificates and public keys as public."""
    for match in _PEM_BEGIN.finditer(text):
        label = match.group(1).rstrip()
        private = "PRIVATE KEY" in label
        if not private and label not in _PUBLIC_PEM_LABELS:
            continue
        body = re.compile(_KEY_BODY, re.VERBOSE).match(text, match.end())
        assert body is not None  # the pattern matches the empty string
        if not re.compile(_KEY_MATERIAL).search(text, body.start(), body.end()):
            continue  # a header quoted in prose or code, with no key after it
        end_line = re.compile(_PEM_END).match(text, body.end())
        spans.add(
            match.start(), end_line.end() if end_line else body.end(), "private-key" if private else None
        )


# ---- tokens with a vendor prefix ------------------------------------------------------------

# Searched only inside base64 runs that hold an anchor, since an alternation of several literals
# is scanned slowly (the engine tries every branch at each position). The lookbehind after each
# prefix refuses a prefix glued to the token's own alphabet, which also keeps "ghp_ghp_ghp_…" from
# costing a scan per repetition; possessive quantifiers (++, {m,n}+) never backtrack.
_VENDOR_TOKEN = r"""
    (?P<aws_access_key>A(?:KIA|SIA)(?<![A-Za-z0-9]....)[A-Z0-9]{16}(?![A-Za-z0-9]))
  | (?P<github_token>(?:gh[pousr]_(?<![A-Za-z0-9_]....)[A-Za-z0-9]{36,251}+
                     |github_pat_(?<![A-Za-z0-9_]github_pat_)[A-Za-z0-9_]{22,244}+)(?![A-Za-z0-9_]))
  | (?P<gitlab_token>glpat-(?<![A-Za-z0-9_-]glpat-)[A-Za-z0-9_-]{20,250}+(?![A-Za-z0-9_-]))
  | (?P<slack_token>xox[abprs]-(?<![A-Za-z0-9-].....)[A-Za-z0-9-]{10,250}+(?![A-Za-z0-9-]))
  | (?P<stripe_key>(?:[sr]k_(?:live|test)_(?<![A-Za-z0-9_]........)[A-Za-z0-9]{16,247}+
                   |whsec_(?<![A-Za-z0-9_]whsec_)[A-Za-z0-9]{24,250}+)(?![A-Za-z0-9_]))
  | (?P<anthropic_key>sk-ant-(?<![A-Za-z0-9_-]sk-ant-)[A-Za-z0-9_-]{20,300}+(?![A-Za-z0-9_-]))
  | (?P<openai_key>sk-(?<![A-Za-z0-9_-]sk-)[A-Za-z0-9_-]{20,300}+(?![A-Za-z0-9_-]))
  | (?P<google_api_key>AIza(?<![A-Za-z0-9_-]AIza)[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-]))
  | (?P<npm_token>npm_(?<![A-Za-z0-9_]npm_)[A-Za-z0-9]{36}(?![A-Za-z0-9_]))
  | (?P<pypi_token>pypi-AgE(?<![A-Za-z0-9_-]pypi-AgE)[A-Za-z0-9_-]{50,1000}+)
  | (?P<huggingface_token>hf_(?<![A-Za-z0-9_]hf_)[A-Za-z]{34,40}+(?![A-Za-z0-9_]))
  | (?P<digitalocean_token>do[opr]_v1_(?<![A-Za-z0-9_].......)[a-f0-9]{64}(?![A-Za-z0-9_]))
  | (?P<shopify_token>shp(?:at|ca|pa|ss)_(?<![A-Za-z0-9_]......)[a-fA-F0-9]{32}(?![A-Za-z0-9_]))
    """
# A run holds a token only if it holds one of these; testing them costs less than one regex scan.
_VENDOR_ANCHORS = (
    "AKIA",
    "ASIA",
    "gh",
    "github_pat_",
    "glpat-",
    "xox",
    "k_live_",
    "k_test_",
    "whsec_",
    "sk-",
    "AIza",
    "npm_",
    "pypi-",
    "hf_",
    "_v1_",
    "shp",
)


def _find_vendor_tokens(text: str, runs: list[tuple[int, int]], spans: _Spans) -> None:
    every_run = " ".join(text[start:end] for start, end in runs)
    if not any(anchor in every_run for anchor in _VENDOR_ANCHORS):
        return
    for run_start, run_end in runs:
        run = text[run_start:run_end]
        if not any(anchor in run for anchor in _VENDOR_ANCHORS):
            continue
        for match in re.compile(_VENDOR_TOKEN, re.VERBOSE).finditer(text, run_start, run_end):
            group = match.lastgroup
            assert group is not None
            if spans.overlaps(match.start(), match.end()):
                continue
            # "sk-" is also how kebab-case names such as sk-learn-compat-… begin.
            if group == "openai_key" and not _has_upper_lower_digit(match.group()):
                continue
            spans.add(match.start(), match.end(), group.replace("_", "-"))


def _has_upper_lower_digit(value: str) -> bool:
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() for c in value)
    )


# ---- tokens known by their context ----------------------------------------------------------

# Each pattern starts with a literal, which lets the regex engine jump from one occurrence to the
# next (a leading lookbehind, character class or case-insensitive flag makes a scan 20 to 100
# times slower). Patterns marked lowered run on text.lower() so keys match in any case. The group
# ``v`` is the part replaced.
_CONTEXT_TOKENS = (
    ("bearer-token", True, re.compile(r"bearer(?<![a-z0-9_-]bearer)[ \t]+(?P<v>[a-z0-9._~+/-]{16,}+=*+)")),
    (
        "basic-auth",
        True,
        re.compile(
            r"authorization(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?basic[ \t]+(?P<v>[a-z0-9+/]{6,}={0,2})"
        ),
    ),
    (
        "jwt",
        False,
        re.compile(r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]*+"),
    ),
    (
        "slack-webhook",
        False,
        re.compile(r"hooks\.slack\.com/services/(?P<v>T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,})"),
    ),
    (
        "password",
        False,
        re.compile(r"://[^\s:/?#@\[\]\"'<>]{0,100}:(?P<v>[^\s/?#\"'<>]{1,200})@"),
    ),
)


def _find_context_tokens(text: str, lowered: str, spans: _Spans) -> None:
    for kind, on_lowered, pattern in _CONTEXT_TOKENS:
        for match in pattern.finditer(lowered if on_lowered else text):
            start, end = match.span("v") if "v" in pattern.groupindex else match.span()
            if spans.overlaps(start, end):
                continue
            if kind == "bearer-token" and not _mixed(text[start:end]):
                continue  # "bearer authentication_mechanism": a word, not a token
            if kind == "password" and _is_placeholder_password(text[start:end]):
                continue  # https://user:password@host in documentation
            spans.add(start, end, kind)


_PLACEHOLDER_PASSWORDS = frozenset(
    ("pass", "password", "passwd", "pwd", "secret", "token", "xxx", "***", "...")
)


def _is_placeholder_password(value: str) -> bool:
    return (
        value.lower() in _PLACEHOLDER_PASSWORDS
        or value[0] in "<{$%*"
        or len(set(value)) == 1
        or _PLACEHOLDER_START in value
    )


def _mixed(value: str) -> bool:
    """Tell whether a value mixes cases or letters with digits, as random tokens do and words do not."""
    has_upper = any(c.isupper() for c in value)
    has_lower = any(c.islower() for c in value)
    return (has_upper and has_lower) or (any(c.isdigit() for c in value) and (has_upper or has_lower))


# ---- passwords on command lines: mysql -pSECRET, sshpass -p …, curl -u user:… ------------------

# A value: quoted (the inside is replaced) or bare, up to the next blank or shell operator.
_ARG = r"""(?:'(?P<sq>[^'\n]{1,200}+)'|"(?P<dq>[^"\n]{1,200}+)"|(?P<bare>[^\s'"`;|&<>()]{1,200}+))"""
# (tools, the option that carries a password), tried on a command line where one of the tools is
# named before the option.
_COMMAND_OPTIONS = (
    # -p takes the password glued to it (a lone -p prompts for it); -P is the port.
    (
        tuple("mysql mysqldump mysqladmin mysqlimport mysqlcheck mysqlpump mysqlsh".split())
        + tuple("mariadb mariadb-dump mariadb-admin mariadb-import mariadb-check".split()),
        r"(?:-p(?=[^\s])|--password=)",
    ),
    (("sshpass",), r"-p[ \t]*"),
    (("redis-cli",), r"(?:-a|--pass)[ \t]+"),
    (("docker login", "podman login", "registry login", "mongo"), r"(?:-p|--password)(?:[ \t]+|=)"),
    (("curl",), r"""(?:-u|--user)(?:[ \t]+|=)?['"]?[^\s:'"]{1,100}+:"""),
    (("wget",), r"--(?:http-|ftp-)?password="),
    (("openssl",), r"""-pass(?:in|out)?[ \t]+['"]?pass:"""),
    (("ldapsearch", "ldapmodify", "ldapadd", "ldapdelete", "ldapwhoami", "ldappasswd"), r"-w[ \t]+"),
    (("sqlcmd", "bcp"), r"-P[ \t]*"),
    (("smbclient",), r"""-U[ \t]*['"]?[^\s%'"]{1,100}+%"""),
)
# Every option above after a blank, on the lowered text: one literal-led scan finds the candidates,
# where looking for each tool's name would cost a search per name.
_OPTION = re.compile(r" -(?:-?pass|-user|-http-pass|-ftp-pass|[pauw])")


def _find_command_passwords(text: str, lowered: str, spans: _Spans) -> None:
    for hit in _OPTION.finditer(lowered):
        line_start = lowered.rfind("\n", 0, hit.start()) + 1
        command = lowered[line_start : hit.start()]
        for tools, option in _COMMAND_OPTIONS:
            if not any(_names_tool(command, tool) for tool in tools):
                continue
            match = re.compile(option + _ARG).match(text, hit.start() + 1)
            if match is None:
                continue
            group = "sq" if match.group("sq") else "dq" if match.group("dq") else "bare"
            start, end = match.span(group)
            if not _is_placeholder_password(text[start:end]) and text[start] not in "-[":
                spans.add(start, end, "password")
            break


def _names_tool(command: str, tool: str) -> bool:
    """Tell whether a command line names the tool as a word of its own (mysql, not mysql_config.py)."""
    at = command.find(tool)
    while at != -1:
        before = command[at - 1] if at else " "
        after = command[at + len(tool) : at + len(tool) + 1]
        if not (before.isalnum() or before in "_-.") and (after[:1].isspace() or after in ("", ".", "-")):
            return True
        at = command.find(tool, at + 1)
    return False


# A .pgpass line, hostname:port:database:username:password, found from its ":port:" field on.
_PGPASS = re.compile(r":(?:\d{1,5}|\*):[^\s:]{1,100}:[^\s:]{1,100}:(?P<v>\S{1,200}+)")
_PGPASS_HOST = r"[^\s:#][^\s:]{0,252}"


def _find_pgpass_lines(text: str, spans: _Spans) -> None:
    for match in _PGPASS.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        if (
            re.compile(_PGPASS_HOST).fullmatch(text, line_start, match.start())
            and not text[match.end() : len(text) if line_end == -1 else line_end].strip()
            and not _is_placeholder_password(match.group("v"))
        ):
            spans.add(*match.span("v"), "password")


# ---- assignments: PASSWORD=…, "api_key": "…", secret: … -------------------------------------

# Found from the word that names a secret, so DB_PASSWORD and clientSecret need no pattern for
# their prefix; one literal-led pattern per word, on the lowered text, for speed as above.
# Values are bounded so that "token=token=token=…" costs a bounded scan per word; a quoted value
# longer than the bound does not match, an unquoted one is skipped, and either is left to the
# high-entropy finder.
_MAX_VALUE_LENGTH = 200  # the {1,200} of _ASSIGNMENT_VALUE
_SECRET_WORDS = tuple(
    (kind, re.compile(word))
    for kind, word in (
        ("password", r"pass(?:word|wd|phrase)?"),
        ("password", r"pwd"),
        ("secret", r"secret(?:[_-]?access)?(?:[_-]?key)?"),
        ("secret", r"credentials?"),
        ("token", r"token"),
        ("api-key", r"api[_-]?key"),
        ("api-key", r"access[_-]?key"),
        ("api-key", r"private[_-]?key"),
        ("signature", r"sig(?:nature)?"),  # signed URLs: Azure SAS sig=, X-Amz-Signature=
    )
)
_ASSIGNMENT_VALUE = re.compile(
    r"""
    (?P<close>\\?["'])?(?P<space>[ \t]*)(?P<op>:=|=>|=(?!=)|:(?![:/]))[ \t]*
    (?:\\?"(?P<dq>[^"\\\n]{1,200}+)\\?"
      |\\?'(?P<sq>[^'\\\n]{1,200}+)\\?'
      |(?P<bare>[^\s"'`,;&<>(){}\[\]]{1,200}+))
    """,
    re.VERBOSE,
)
_NOT_A_VALUE = r"""
    [$%<{\[*\#]                        # $VAR ${VAR} %(name)s <key> {{ key }} [PAD] [REDACTED:…] *** #
    | (?i:none|null|nil|true|false|undefined|str|string|bytes|int|bool|number|boolean|object|any
        |optional|required|redacted|masked|hidden|await|async|self|this|xxx+)\Z
    | [A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\Z  # attribute access such as settings.SECRET_KEY
    | [A-Z][a-z]+(?:[A-Z][a-z]+)*\Z    # a type name such as SecretStr
    | (?:[a-z]+(?:[_-][a-z0-9]+)+|[A-Z]+(?:_[A-Z0-9]+)+)\Z  # a name: next_marker, SCRIPT_FILENAME
    | \.{0,2}/|~/|[A-Za-z]:\\          # a path
    | \w+://                           # a URL: its password, if any, has its own pattern
    """
_SECRET_WORD = r"pass|pwd|secret|token|key|cred"
_COMPOUND_NAME = r"[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+|[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+"


def _find_assignments(text: str, lowered: str, spans: _Spans) -> None:
    for kind, word_pattern in _SECRET_WORDS:
        for word_match in word_pattern.finditer(lowered):
            match = _ASSIGNMENT_VALUE.match(lowered, word_match.end())
            if match is None:
                continue
            value_group = "dq" if match.group("dq") else "sq" if match.group("sq") else "bare"
            start, end = match.span(value_group)
            word = word_match.group()
            quoted = value_group != "bare"
            if spans.overlaps(start, end):
                continue
            if not quoted:
                if end - start == _MAX_VALUE_LENGTH:
                    continue  # longer than any password: left whole to the high-entropy finder
                end = start + len(text[start:end].rstrip(".:"))  # password=hunter2. at a sentence end
            if kind == "secret" and _is_aws_secret(text[start:end], word, lowered, word_match.start()):
                spans.add(start, end, "aws-secret-key")
                continue
            if word in ("pass", "sig") and word_match.start() and lowered[word_match.start() - 1].isalpha():
                continue  # bypass=, compass:, design=
            if not _plausible_value(text[start:end], word, quoted):
                continue
            if not quoted and text[end : end + 1] in ("(", "["):
                continue  # a call or a subscript: code, not a value
            if (
                match.group("op") == ":"
                and not match.group("close")
                and (match.group("space") or not (quoted or _at_line_start(text, word_match.start())))
            ):
                continue  # "invalid token: expired" is a sentence, not a field; "Pass :meth:" neither
            spans.add(start, end, kind)


def _is_aws_secret(value: str, word: str, lowered: str, word_start: int) -> bool:
    """Tell whether a secret assigned to aws_secret_access_key, SecretAccessKey or the like is AWS's."""
    if len(value) != 40 or not re.fullmatch(r"[A-Za-z0-9/+]{40}", value):
        return False
    return "access" in word or lowered[max(0, word_start - 4) : word_start].rstrip("_-").endswith("aws")


def _plausible_value(value: str, word: str, quoted: bool) -> bool:
    """Reject values that are empty in effect, placeholders, references or names of variables."""
    if len(value) < 4 or len(set(value)) == 1 or _PLACEHOLDER_START in value:
        return False
    if "..." in value or "\u2026" in value or "***" in value:
        return False
    if quoted and (
        any(c.isspace() for c in value) or (value.isalpha() and (value.islower() or value.isupper()))
    ):
        return False  # a message, or a name such as "marker"
    # Unquoted, an all-letter word is a variable (password=user, token = nextchar); a secret has
    # digits, mixed case or symbols.
    if not quoted and not (_mixed(value) or any(not c.isalnum() and c not in "_-." for c in value)):
        return False
    if re.match(_NOT_A_VALUE, value, re.VERBOSE):
        return False
    folded = value.lower()
    if word.replace("_", "").replace("-", "") in folded.replace("_", "").replace("-", ""):
        return False  # password=password, api_key=api_key, token=access_token
    return not (re.search(_SECRET_WORD, folded) and re.fullmatch(_COMPOUND_NAME, value))  # key=openai_key


def _at_line_start(text: str, word_start: int) -> bool:
    """Tell whether the key that ends in the word at ``word_start`` begins its line (YAML, headers)."""
    start = word_start
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-."):
        start -= 1
    return not text[text.rfind("\n", 0, start) + 1 : start].strip(" \t-#/")


# ---- generic high-entropy tokens ------------------------------------------------------------

_HASH_NAMES = ("sha1", "sha224", "sha256", "sha384", "sha512", "md5", "blake2b", "blake2s", "blake2")
_HASH_PREFIXES = tuple(name + sep for name in _HASH_NAMES for sep in "-_:=")
_HASH_CONTEXT = (*_HASH_NAMES, "integrity", "digest", "hash", "checksum")
# ctx's own ids, as kernel.ids.ID_RE spells them; one alone is too short to judge, several joined
# (ev_…/pr_…) are not random either.
_CTX_ID = re.compile(r"(?i:ev|pr|dc)_[0-9A-HJKMNP-TV-Z]{26}")
_HEX_RUN = re.compile(r"[0-9a-fA-F-]+")  # SHAs, sha256 digests, UUIDs
# Hex digits, with 0x or a one-letter prefix (Gerrit's Change-Id is I + 40 hex digits).
_HEXISH = re.compile(r"(?:0[xX]|[A-Za-z])?[0-9a-fA-F]*")
_SEPARATORS = re.compile(r"[+/_=-]")
# Words as identifiers spell them: Capitalised, lower, ACRONYM, digits.
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# A path segment that is a plain word: src, site-packages, python3, Lib.
_PLAIN_SEGMENT = re.compile(r"[A-Za-z][a-z]+(?:[_-][a-z]+)*[0-9]*")


def _find_random_tokens(text: str, lowered: str, runs: list[tuple[int, int]], spans: _Spans) -> None:
    for start, run_end in runs:
        end = run_end
        if end - start < _MIN_RANDOM_LENGTH or _HEX_RUN.fullmatch(text, start, end):
            continue
        if text.startswith("=", end):
            end += 2 if text.startswith("==", end) else 1
        if spans.overlaps(start, end):
            continue
        if lowered[max(0, start - 16) : start].rstrip(" \t\"':=,-").endswith(_HASH_CONTEXT):
            continue  # sha256=…, "integrity": "…", digest: …
        if text.endswith("h1:", 0, start) and not text[start - 4 : start - 3].isalnum():
            continue  # Go's and Terraform's h1: hashes (go.sum, .terraform.lock.hcl)
        run = text[start:end]
        if "/" in run:
            segments = run.split("/")
            if sum(1 for segment in segments if _PLAIN_SEGMENT.fullmatch(segment)) >= 2:
                # A path or URL: only a random-looking segment of its own is a secret. Two plain
                # words, not one, since a random key has a short all-lower-case segment now and then.
                found: list[tuple[int, int]] = []
                offset = start
                for segment in segments:
                    if _looks_random(segment):
                        found.append((offset, offset + len(segment)))
                    offset += len(segment) + 1
                if found and (public_end := _public_blob(text, start, end)):
                    spans.add(start, public_end, None)
                    continue
                for segment_start, segment_end in found:
                    spans.add(segment_start, segment_end, "high-entropy")
                continue
        if _looks_random(run):
            if public_end := _public_blob(text, start, end):
                spans.add(start, public_end, None)
            else:
                spans.add(*_dotted_token(text, start, end, spans), "high-entropy")


# ---- public blobs: random-looking runs whose structure says they are public ------------------------

# A data: URI of an image, font or sound; its payload is a file, not a credential.
_MEDIA_DATA_URI = r"data:(?:image|font|audio|video)/[\w.+-]{1,60};base64,\Z"
# Modular crypt format password hashes ($2b$12$…, $argon2id$v=19$…, $6$rounds=5000$…): hashes
# made to be stored, which the issue counts as public look-alikes, and no use as a password.
_CRYPT_HASH = (
    r"\$(?:2[abxy]?|1|5|6|7|y|gy|apr1|md5|sha1|sha256|sha512|argon2(?:id|i|d)|scrypt"
    r"|pbkdf2(?:-sha\d+)?|bcrypt(?:-sha256)?)\$(?:[^\s$'\"]{0,200}\$){0,5}[./A-Za-z0-9+=-]*\Z"
)
# Publishable keys, public by design (Stripe puts them in web pages).
_PUBLIC_PREFIXES = ("pk_live_", "pk_test_")
# First bytes of image, font, audio, video and PDF files.
_MEDIA_MAGIC = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
    b"RIFF",
    b"wOFF",
    b"wOF2",
    b"OTTO",
    b"\x00\x01\x00\x00\x00",
    b"%PDF-",
    b"\x00\x00\x01\x00",
    b"OggS",
    b"fLaC",
    b"ID3",
    b"\x1aE\xdf\xa3",
    b"BM",
)
# The key types an SSH public key blob names first (RFC 4253 6.6, OpenSSH's PROTOCOL.certkeys).
_SSH_KEY_TYPE = rb"(?:ssh-|ecdsa-sha2-|sk-ssh-|sk-ecdsa-sha2-|rsa-sha2-)[a-z0-9@.-]{2,60}"
_NEXT_LINE = r"=*(?:\r?\n|(?:\\r)?\\n)[ \t]*([A-Za-z0-9+/]++=*)"
# Names of JSON keys whose values are secrets: base64 of a document holding one is not public.
_SECRET_KEY_NAME = r"(?i:pass|pwd|secret|token|key|cred|auth|private|cookie|sig)"
_MAX_DECODED_CHARS = 1_000_000


def _public_blob(text: str, start: int, end: int) -> int:
    """Where a random-looking run that is public material ends (wrapped lines included), else 0.

    Public: a data: URI of media, a password hash, a publishable key, base64 of an image or font
    file or of an SSH public key, and base64 of a JSON document, PEM block or markup that holds no
    secret (judged by redacting the decoded text).
    """
    run = text[start:end]
    before = text[max(0, start - 300) : start]
    if run.startswith(_PUBLIC_PREFIXES) or re.search(_MEDIA_DATA_URI, before):
        return end
    if "$" in before and re.search(_CRYPT_HASH, before):
        return end
    head = _b64decode(run[:32].rstrip("="))
    if head is None:
        return 0
    if head.startswith(_MEDIA_MAGIC) or head[4:8] == b"ftyp":
        return _wrapped_end(text, end, len(run))
    if head.startswith(b"\x00\x00\x00") and re.fullmatch(_SSH_KEY_TYPE, head[4 : 4 + head[3]]):
        return end
    stripped = head.lstrip()
    if stripped[:1] in (b"{", b"[", b"<") or stripped.startswith(b"-----BEGIN"):
        return end if _public_document(run) else 0
    return 0


def _b64decode(run: str) -> bytes | None:
    import base64  # noqa: PLC0415 - only random-looking runs are decoded
    import binascii  # noqa: PLC0415

    core = run.rstrip("=")
    if len(core) % 4 == 1:
        core = core[:-1]
    urlsafe = "-" in core or "_" in core
    if urlsafe and ("+" in core or "/" in core):
        return None
    padded = core + "=" * (-len(core) % 4)
    try:
        return base64.urlsafe_b64decode(padded) if urlsafe else base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _wrapped_end(text: str, end: int, width: int) -> int:
    """The end of a base64 blob wrapped at ``width`` characters a line, from the end of its first line."""
    while (line := re.compile(_NEXT_LINE).match(text, end)) and len(line.group(1)) <= width:
        end = line.end()
        if len(line.group(1)) < width:
            break
    return end


def _public_document(run: str) -> bool:
    """Tell whether base64 decodes to a JSON document, PEM block or markup that holds no secret."""
    from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json  # noqa: PLC0415

    data = _b64decode(run)
    if data is None or len(data) > _MAX_DECODED_CHARS:
        return False
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if (
        not decoded.isprintable()
        and not decoded.replace("\n", "").replace("\r", "").replace("\t", "").isprintable()
    ):
        return False
    if decoded.lstrip()[:1] in ("{", "["):
        try:
            document = read_json(decoded)
        except JSONInputError:
            return False
        if _names_a_secret(document):
            return False
    return redact(decoded).total == 0


def _names_a_secret(value: object) -> bool:
    """Tell whether a JSON value has an object key that names a secret, at any depth."""
    if isinstance(value, dict):
        return any(re.search(_SECRET_KEY_NAME, key) or _names_a_secret(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_names_a_secret(item) for item in value)
    return False


_DOTTED_PART = r"[A-Za-z0-9_-]{6,}+"


def _dotted_token(text: str, start: int, end: int, spans: _Spans) -> tuple[int, int]:
    """Widen a random run over the token-like parts a dot joins to it (Discord's id.time.hmac)."""
    while start > 7 and text[start - 1] == ".":
        part = re.search(r"[A-Za-z0-9_-]{6,}+\Z", text[max(0, start - 101) : start - 1])
        if not part or not _token_like(part.group()) or not spans.free(start - 1 - len(part.group()), start):
            break
        start -= 1 + len(part.group())
    while text.startswith(".", end) and (part := re.compile(_DOTTED_PART).match(text, end + 1)):
        if not _token_like(part.group()) or not spans.free(end, part.end()):
            break
        end = part.end()
    return start, end


def _token_like(part: str) -> bool:
    return _mixed(part) and not _PLAIN_SEGMENT.fullmatch(part)


def _looks_random(token: str) -> bool:
    """Tell whether a run of base64 characters reads as a random key rather than names and hashes."""
    core = token.rstrip("=")
    if len(core) < _MIN_RANDOM_LENGTH or _HEX_RUN.fullmatch(core):
        return False
    if "_" in core:
        core = _CTX_ID.sub("", core)
    if len(core) < _MIN_RANDOM_LENGTH or core.lower().startswith(_HASH_PREFIXES):
        return False
    # Hex parts are hashes, ids or SHAs; what is left must still be long and made of short "words",
    # as random text is and identifiers (TooManySymbolsPlugin, x86_64_linux) are not.
    rest = "".join(part for part in _SEPARATORS.split(core) if not _HEXISH.fullmatch(part))
    if len(rest) < _MIN_RANDOM_REST:
        return False
    words = _WORDS.findall(rest)
    if len(words) < _MIN_WORDS_PER_CHAR * len(rest):
        return False
    # Mixed-case identifiers of short words (OpIdKernelTypeStrArgsEntryAddOpId) reach 0.3 too, but
    # have no digits, which 32 random base62 characters lack only once in 250 draws.
    if len(words) < _MIN_WORDS_PER_CHAR_WITHOUT_DIGITS * len(rest) and not any(w.isdigit() for w in words):
        return False
    return _entropy(core) >= _MIN_ENTROPY


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    length = len(text)
    return math.log2(length) - sum(n * math.log2(n) for n in map(text.count, set(text))) / length
