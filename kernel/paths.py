"""Where ctx's files live: the per-project store and the per-user config."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ctx_kernel.kernel.errors import StoreError, UsageError

STORE_DIR = ".ctx"
STORE_FILE = "ctx.db"
# The project's own settings, committed with it: ``db = "postgresql://host/dbname"`` names a
# team's shared store. Never a password: credentials come from the libpq environment.
PROJECT_CONFIG = "config.toml"

SQLITE_SCHEME = "sqlite:"
SERVER_SCHEMES = ("postgres", "postgresql")
# Where a PostgreSQL password belongs instead of a URL that may be committed or printed.
CREDENTIALS_HINT = "PGPASSWORD, ~/.pgpass, or a service in pg_service.conf (PGSERVICE)"

# A store location: the SQLite file, or a server URL kept as text (a Path would fold its "//").
Location = Path | str

# A URL scheme of two or more letters ("C:" is a Windows drive, not a scheme). A Path collapses
# "postgresql://host" to "postgresql:/host", so one slash is enough to recognise a URL.
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")
# userinfo of any URL in a text: scheme://user:password@host
_URL_AUTHORITY_RE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*:/{1,2})(?P<authority>[^/?#\s]*)")
# password=... in a URL query or a libpq "key=value" connection string, quoted or not.
_PASSWORD_PARAM_RE = re.compile(
    r"(?i)(?<![A-Za-z0-9_])(?P<key>(?:ssl)?password\s*=\s*)(?P<value>'(?:[^'\\]|\\.)*'|[^\s&]*)"
)
_SECRET_PARAMS = {"password", "sslpassword"}
REDACTED = "***"
_DB_FORMS = "postgresql://host/dbname, or sqlite:PATH relative to the config's folder"


def url_scheme(location: str | Path) -> str | None:
    """The lower-cased scheme of a URL location (``postgresql``), None for a path or ``sqlite:PATH``."""
    text = str(location)
    found = None if text.startswith(SQLITE_SCHEME) else _SCHEME_RE.match(text)
    return found.group(1).lower() if found else None


def is_server_url(location: str | Path) -> bool:
    """Whether ``location`` names a PostgreSQL server (``postgresql://``, ``postgres+psycopg://``)."""
    scheme = url_scheme(location)
    return scheme is not None and scheme.split("+")[0] in SERVER_SCHEMES


def redact(text: str) -> str:
    """``text`` with every password of a URL or connection string in it replaced by ``***``."""

    def userinfo(found: re.Match[str]) -> str:
        authority = found.group("authority")
        at = authority.rfind("@")
        if at < 0 or ":" not in authority[:at] or authority.index(":") == at - 1:
            return found.group(0)  # no password (``user:@host`` is an empty one)
        user = authority[: authority.index(":")]
        return f"{found.group('scheme')}{user}:{REDACTED}{authority[at:]}"

    text = _URL_AUTHORITY_RE.sub(userinfo, text)
    return _PASSWORD_PARAM_RE.sub(lambda found: found.group("key") + REDACTED, text)


def has_password(url: str) -> bool:
    """Whether a server URL carries a password (in its userinfo or its query)."""
    return redact(url) != url


def shared_url(url: str) -> str:
    """A server URL as a team may commit it: no user, no password, no secret query parameter."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    kept = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in _SECRET_PARAMS
    ]
    query = urlencode(kept, safe="/:,")
    # Not urlunsplit: it drops the "//" of an empty host (a Unix socket given as ?host=/run/...).
    return f"{parts.scheme}://{host}{parts.path}" + (f"?{query}" if query else "")


def without_password(url: str) -> str:
    """A server URL as it may be shown: any password (in the authority or ``?password=``) left out."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        netloc = f"{userinfo.split(':', 1)[0]}@{hostport}"
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    query = urlencode([(k, v) for k, v in pairs if k.lower() not in _SECRET_PARAMS], safe="/")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def display_location(location: Location) -> str:
    """A location as ctx prints it: a file's path, or a server URL without user or password."""
    if isinstance(location, Path):
        return str(location)
    return redact(shared_url(location) if is_server_url(location) else location)


def location_file(location: str) -> Path:
    """The file a store location names: ``sqlite:PATH`` and a plain path both name PATH (``~``
    expanded); other schemes pass through for the store to name the ones it does not support."""
    return Path(location.removeprefix(SQLITE_SCHEME)).expanduser()


def as_location(text: str, base: Path | None = None) -> Location:
    """A location as given: a URL stays text; ``sqlite:PATH`` or a path is the file (relative to ``base``)."""
    if url_scheme(text) is not None:
        return text
    file = location_file(text)
    if base is not None and not file.is_absolute():
        file = base / file
    if file.is_dir():
        raise UsageError(f"{file} is a folder: name the store's file (a folder's store is .ctx/ctx.db)")
    return file


@dataclass(frozen=True)
class Located:
    """The store a command uses, and what named it."""

    location: Location
    # "--db", "CTX_DB", the project config file that named it, or the store file found walking up.
    origin: str


class UnapprovedStoreError(StoreError):
    """A project's files name a store this user has not approved, so ctx neither connects nor opens it."""


# Connection parameters a committed project config may not set: who connects and with what
# credentials are the person's own (PGUSER, PGPASSWORD, ~/.pgpass, pg_service.conf).
_CREDENTIAL_PARAMS = {"user", "password", "passfile", "sslpassword", "sslkey", "sslcert"}
APPROVALS_FILE = "approved-stores.json"


@dataclass(frozen=True)
class Naming:
    """A project file that names a store other than its own ``.ctx/ctx.db``: what a person approves."""

    # The project config, or the symbolic link standing for the project's store file.
    source: Path
    location: Location
    # What the approval covers: the config's bytes, or the link's target.
    digest: str
    # The project folder whose ``.ctx`` holds the naming file.
    project: Path

    @property
    def shown(self) -> str:
        """The location as a person checks it: a file's real path, a URL without its password."""
        location = self.location.resolve() if isinstance(self.location, Path) else self.location
        return display_location(location)

    def refusal(self) -> UnapprovedStoreError:
        """The one-line error a command gives until a person approves this naming."""
        return UnapprovedStoreError(
            f"{self.source} names the store {self.shown}, which you have not "
            f"approved: nothing was opened or contacted; check it, then run `ctx allow {self.project}`"
        )


def approvals_path() -> Path:
    """The user's record of approved project stores (config file -> digest), in the config folder."""
    return config_dir() / APPROVALS_FILE


def _approvals() -> dict[str, dict[str, str]]:
    path = approvals_path()
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc
    return loaded if isinstance(loaded, dict) else {}


def is_approved(naming: Naming) -> bool:
    """Whether this user approved exactly this naming (a changed config needs a new approval)."""
    entry = _approvals().get(str(naming.source))
    return isinstance(entry, dict) and entry.get("digest") == naming.digest


def _write_approvals(entries: dict[str, dict[str, str]]) -> None:
    path = approvals_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(entries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, path)


def approve(naming: Naming) -> None:
    """Record that this user approved ``naming`` as it reads now."""
    entries = _approvals()
    entries[str(naming.source)] = {
        "digest": naming.digest,
        "location": naming.shown,
    }
    _write_approvals(entries)


def revoke(source: Path) -> bool:
    """Forget the approval of the naming file ``source``; True when there was one."""
    entries = _approvals()
    if entries.pop(str(source), None) is None:
        return False
    _write_approvals(entries)
    return True


def own_store(folder: Path) -> Path:
    """The store file a project folder holds by default: ``folder/.ctx/ctx.db``."""
    return folder / STORE_DIR / STORE_FILE


def _is_own_store(location: Location, store_dir: Path) -> bool:
    """Whether ``location`` is the project's own ``.ctx/ctx.db``, reached through no symbolic link."""
    if not isinstance(location, Path) or store_dir.is_symlink() or location.is_symlink():
        return False
    try:
        resolved = location.resolve()
        return resolved == (store_dir / STORE_FILE).resolve() and resolved.parent == store_dir.resolve()
    except OSError:
        return False


def read_project_config(path: Path) -> dict[str, Any]:
    """A project's ``.ctx/config.toml`` as a dict; one line naming the file when it is not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {redact(str(exc))}") from exc
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc


def _config_location(config: Path) -> Location | None:
    """The store a project config names with ``db = "..."``, or None when it names none."""
    value = read_project_config(config).get("db")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{config}: db must be a string naming the store ({_DB_FORMS})")
    scheme = url_scheme(value)
    if scheme is not None and not is_server_url(value):
        raise UsageError(f"{config}: unknown store scheme {scheme} in db ({_DB_FORMS})")
    if is_server_url(value):
        parts = urlsplit(value)
        named = {k.lower() for k, _ in parse_qsl(parts.query, keep_blank_values=True)} & _CREDENTIAL_PARAMS
        if "@" in parts.netloc or named:
            what = "a login or a password" if "@" in parts.netloc else ", ".join(sorted(named))
            raise UsageError(
                f"{config} sets {what} in db, and a committed project config may not choose who connects: "
                f"remove it; ctx connects as you, with PGUSER and {CREDENTIALS_HINT}"
            )
    return as_location(value, config.parent)


def configured_location(config: Path) -> Located | None:
    """The store a project config names, or None when it names none.

    Any store other than the project's own ``.ctx/ctx.db`` must have been approved by this user
    (``ctx allow``) for the config as it reads now; until then :class:`UnapprovedStoreError`.
    """
    location = _config_location(config)
    if location is None:
        return None
    naming = _config_naming(config, location)
    if naming is not None and not is_approved(naming):
        raise naming.refusal()
    return Located(location, str(config))


def _config_naming(config: Path, location: Location) -> Naming | None:
    """What a project config naming ``location`` asks this user to approve: None for the
    project's own ``.ctx/ctx.db``, else the config as it reads now."""
    if _is_own_store(location, config.parent):
        return None
    digest = hashlib.sha256(config.read_bytes()).hexdigest()
    return Naming(config.resolve(), location, digest, config.parent.parent)


def _linked_store(candidate: Path) -> Naming | None:
    """A project store file reached through a symbolic link (of the file or of ``.ctx``), as a naming."""
    link = (
        candidate if candidate.is_symlink() else candidate.parent if candidate.parent.is_symlink() else None
    )
    if link is None:
        return None
    target = candidate.resolve()
    digest = hashlib.sha256(str(target).encode("utf-8")).hexdigest()
    return Naming(Path(os.path.abspath(link)), target, digest, candidate.parent.parent)


def naming_in(folder: Path) -> Naming | None:
    """What the project in ``folder`` names that needs this user's approval, if anything."""
    config = folder.resolve() / STORE_DIR / PROJECT_CONFIG
    if config.is_file() and (location := _config_location(config)) is not None:
        return _config_naming(config, location)
    return _linked_store(own_store(folder.resolve()))


def locate_store(explicit: str | None = None, start: Path | None = None) -> Located:
    """``--db``, then ``CTX_DB``, then the nearest project naming a store walking up from ``start``:
    its ``.ctx/config.toml`` (``db = ...``) before its ``.ctx/ctx.db``. A store a project's files
    name other than its own ``.ctx/ctx.db`` is used only once this user approved it (``ctx allow``)."""
    if explicit:
        return Located(as_location(explicit), "--db")
    if named := os.environ.get("CTX_DB"):
        return Located(as_location(named), "CTX_DB")
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        config = folder / STORE_DIR / PROJECT_CONFIG
        if config.is_file() and (located := configured_location(config)) is not None:
            return located
        candidate = own_store(folder)
        if candidate.is_file():
            linked = _linked_store(candidate)
            if linked is not None and not is_approved(linked):
                raise linked.refusal()
            return Located(candidate, str(candidate))
    raise StoreError(f"no ctx store in {here} or any parent folder: run `ctx init` first")


def find_store(explicit: str | None = None, start: Path | None = None) -> Location:
    """The location of the store a command uses (see :func:`locate_store`)."""
    return locate_store(explicit, start).location


def enclosing_store(folder: Path) -> Location | None:
    """The store a command run in ``folder`` would use before a new one is made there, if any."""
    try:
        return find_store(None, folder)
    except StoreError:
        return None


# Written into a new project's .ctx/: the database stays local; the project config (which never
# holds a password) and signed audit checkpoints may be committed.
STORE_GITIGNORE = """\
# ctx: the store stays out of git (its evidence may hold private text; a binary file merges badly).
# Share decisions with `ctx export adr`; commit checkpoints/ to anchor the audit log, and
# config.toml so teammates find a shared store.
*
!.gitignore
!config.toml
!checkpoints/
!checkpoints/**
"""


def keep_out_of_git(store: Path) -> bool:
    """Write the .gitignore of the project's ``.ctx/`` folder that holds ``store`` (or the project
    config) if it has none; True when written."""
    if store.parent.name != STORE_DIR:
        return False
    ignore = store.parent / ".gitignore"
    if ignore.exists():
        return False
    ignore.write_text(STORE_GITIGNORE, encoding="utf-8")
    return True


def init_target(explicit: str | None = None, start: Path | None = None) -> Location:
    """Where ``ctx init`` creates the store: ``--db``, ``CTX_DB``, the working folder's
    ``.ctx/config.toml`` (a teammate's first ``ctx init``), else ``./.ctx/ctx.db``."""
    chosen = explicit or os.environ.get("CTX_DB")
    if chosen:
        return as_location(chosen)
    here = (start or Path.cwd()).resolve()
    config = here / STORE_DIR / PROJECT_CONFIG
    if config.is_file() and (located := configured_location(config)) is not None:
        return located.location
    own = own_store(here)
    linked = _linked_store(own)
    if linked is not None and not is_approved(linked):
        raise linked.refusal()
    return own


def find_naming(start: Path) -> tuple[Path, Naming | None]:
    """The nearest project walking up from ``start`` that names a store, and what of it needs approval
    (None when it uses its own ``.ctx/ctx.db``)."""
    here = start.resolve()
    for folder in (here, *here.parents):
        config = folder / STORE_DIR / PROJECT_CONFIG
        store = own_store(folder)
        names_one = config.is_file() and _config_location(config) is not None
        if names_one or store.is_file() or store.is_symlink() or store.parent.is_symlink():
            return folder, naming_in(folder)
    raise StoreError(f"no project naming a ctx store in {here} or any parent folder")


def write_project_config(folder: Path, url: str, *, check_only: bool = False) -> Path | None:
    """Name the shared store ``url`` (without user or password) in ``folder/.ctx/config.toml``.

    Returns the file when it was written, None when it already names that store (or
    ``check_only``); refuses when it names another one, so a teammate's project never silently moves.
    """
    shared = shared_url(url)
    config = folder / STORE_DIR / PROJECT_CONFIG
    current = read_project_config(config) if config.is_file() else {}
    named = current.get("db")
    if named is not None:
        if isinstance(named, str) and named.strip() and shared_url(named) == shared:
            return None
        raise UsageError(
            f"{config} already names another store ({display_location(str(named))}): edit its db line, "
            "or run ctx init in another folder"
        )
    # A JSON string of printable text is a TOML basic string; reading it back proves it.
    line = f"db = {json.dumps(shared, ensure_ascii=False)}\n"
    try:
        readable = tomllib.loads(line).get("db") == shared
    except tomllib.TOMLDecodeError:
        readable = False
    if not readable:
        raise UsageError("the store URL cannot be written to a TOML file")
    if check_only:
        return None
    text = config.read_text(encoding="utf-8") if config.is_file() else ""
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "# The team's shared ctx store. Never put a password here: ctx connects as you, with "
        f"{CREDENTIALS_HINT}.\n" + line + text,
        encoding="utf-8",
    )
    return config


def checkpoints_dir(store: Path | str) -> Path:
    """Where signed audit checkpoints are kept: ``checkpoints/`` beside the store file; for a store
    on a server, a folder of its own in the user's config folder (named by the URL shown without a
    password, so the same store always finds its checkpoints)."""
    if is_server_url(str(store)):
        digest = hashlib.sha256(without_password(str(store)).encode("utf-8")).hexdigest()[:16]
        return config_dir() / "servers" / digest / "checkpoints"
    return Path(store).parent / "checkpoints"


def stale_cache_dir(store: Path | str) -> Path:
    """Where the staleness pass keeps what git answered: ``stale/`` beside the store file; for a
    store on a server, a folder of its own in the user's config folder (as for checkpoints)."""
    return checkpoints_dir(store).parent / "stale"


def config_dir() -> Path:
    """The user's ctx config folder (``CTX_CONFIG_DIR`` overrides the platform default)."""
    override = os.environ.get("CTX_CONFIG_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_config_dir  # noqa: PLC0415 - only read when needed

    return Path(user_config_dir("ctx", appauthor=False))


def keys_dir() -> Path:
    """Where the audit signing key lives: ``keys/`` in the user's config folder."""
    return config_dir() / "keys"


def load_config() -> dict[str, Any]:
    """The user's ``config.toml`` as a dict (empty when there is none)."""
    path = config_dir() / "config.toml"
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from exc


def configured_reviewer() -> str | None:
    """The reviewer's name from ``CTX_REVIEWER`` or ``reviewer`` in config.toml."""
    name = os.environ.get("CTX_REVIEWER") or load_config().get("reviewer")
    return str(name).strip() if name and str(name).strip() else None


def served_retention_days() -> int:
    """How many days of served entries ``ctx audit fold`` keeps: ``retention_days`` under
    ``[served]`` in the user's config.toml (a setting of the person who signs the folds, never of a
    cloned repository)."""
    section = load_config().get("served", {})
    days = section.get("retention_days") if isinstance(section, dict) else None
    if days is None:
        raise UsageError("give --older-than DAYS, or set retention_days under [served] in config.toml")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= 100_000:
        raise UsageError(
            f"config.toml: [served] retention_days must be a whole number of days, 1 to 100000: {days!r}"
        )
    return days
