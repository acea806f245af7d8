"""The ``ctx`` command line: parses arguments, calls the facade, prints text or JSON."""

from __future__ import annotations

import getpass
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable
from contextlib import nullcontext
from datetime import UTC, datetime
from functools import update_wrapper
from pathlib import Path
from typing import Any, NoReturn

import click

from ctx_kernel.kernel import envelopes, paths, text
from ctx_kernel.kernel.capture.ingest import (
    PARALLEL_FROM,
    TRANSCRIPT_FORMATS,
    BatchReport,
    EvidenceInput,
    count_lines,
    from_turns,
    read_jsonl,
)
from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.errors import CtxError, StalePlanError, StoreError, UsageError
from ctx_kernel.kernel.facade import Ctx, age, plain_diff, short_age
from ctx_kernel.kernel.hosts import bulk
from ctx_kernel.kernel.limits import (
    COPY_BATCH,
    DEFAULT_BUDGET,
    DEFAULT_MODE,
    DEFAULT_RRF_K,
    MAX_BUDGET,
    MAX_RECALL_K,
    MAX_RRF_K,
    MIN_BUDGET,
    RECALL_MODES,
)
from ctx_kernel.kernel.recall import fusion
from ctx_kernel.kernel.records import EVIDENCE_KINDS, Decision, Proposal
from ctx_kernel.kernel.store import driver, migrate

MAX_JSON_INPUT_BYTES = 200_000


def _say(message: object = "", *, err: bool = False, nl: bool = True) -> None:
    """Print human output; stored text in it is shown with hidden characters spelled out."""
    click.echo(text.visible(message) if isinstance(message, str) else message, err=err, nl=nl)


def _colour(message: str, style: str) -> str:
    """``message`` styled for a terminal; plain when output is not one or NO_COLOR is set.

    Styled text is printed with ``click.echo``, never :func:`_say`, which would spell the
    escape sequences out; pass stored text through ``text.visible`` first.
    """
    if os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return message
    if style == "bold":
        return click.style(message, bold=True)
    return click.style(message, fg=style, bold=True)


def _emit_json(data: Any) -> None:
    click.echo(text.json_visible(json.dumps(data, indent=2, ensure_ascii=False)))


_DB_HELP = (
    "Store to use: a file, sqlite:PATH or postgresql://host/dbname (default: CTX_DB, else the nearest "
    ".ctx/config.toml naming one or .ctx/ctx.db above the working folder)."
)


def _db_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--db", "db_here", metavar="STORE", help=_DB_HELP)(func)


def _locate(explicit: str | None, start: Path | None = None) -> paths.Location:
    """The store's location (``--db``, ``CTX_DB``, the project's config, ``.ctx/ctx.db``)."""
    return paths.locate_store(explicit, start).location


def _open(explicit: str | None, start: Path | None = None, **kwargs: Any) -> Ctx:
    """Open the store a command uses (see :func:`_locate`)."""
    return Ctx.open(_locate(explicit, start), **kwargs)


def _with_store(func: Callable[..., Any]) -> Callable[..., Any]:
    """Open the project's store for the command (``--db`` before or after it) and close it afterwards."""

    def wrapper(ctx: click.Context, *args: Any, db_here: str | None, **kwargs: Any) -> Any:
        kernel = _open(db_here or ctx.find_root().obj.get("db"))
        try:
            return func(kernel, *args, **kwargs)
        finally:
            kernel.close()

    # The command's name, help and options (click keeps them on the function) carry over to the wrapper.
    update_wrapper(wrapper, func)
    return _db_option(click.pass_context(wrapper))


def _check_utf8(value: str, what: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8") from None
    return value


def _read_stdin(limit: int, what: str) -> str:
    data = sys.stdin.buffer.read(limit + 1)
    if len(data) > limit:
        raise UsageError(f"{what} is larger than {limit} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{what} is not valid UTF-8") from None


def _age(stamp: str) -> str:
    return short_age(age(stamp, datetime.now(UTC)))


def _window(decision: Decision) -> str:
    end = decision.valid_until[:19] if decision.valid_until else "now"
    return f"{decision.valid_from[:19]} .. {end}"


def _decision_line(decision: Decision) -> str:
    state = "current" if decision.current else f"{decision.closed_by}"
    return f"{decision.id}  {decision.subject}  [{state}, {_window(decision)}]\n    {decision.decision}"


def _proposal_line(proposal: Proposal) -> str:
    badges = []
    if proposal.supersedes:
        badges.append("supersedes " + ", ".join(proposal.supersedes))
    if proposal.near_duplicate_of:
        badges.append(f"near-duplicate of {proposal.near_duplicate_of}")
    tail = f"  ({'; '.join(badges)})" if badges else ""
    return (
        f"{proposal.id}  {proposal.subject}  by {proposal.proposer}, "
        f"{_age(proposal.created_at)} old{tail}\n    {proposal.decision}"
    )


def _reviewer(kernel: Ctx, given: str | None, yes: bool, action: str) -> str:
    """A person's name for a ratification or rejection; refuse without a terminal unless explicit.

    On a server store the name is the login, which the database binds every act to."""
    interactive = sys.stdin.isatty()
    if kernel.login is not None:
        if not (interactive or yes):
            raise UsageError(f"{action} is a person's act: without a terminal pass --yes")
        return kernel.actor(given, kernel.login, "reviewer")
    if not interactive:
        if not (yes and given):
            raise UsageError(f"{action} is a person's act: without a terminal pass --yes and --reviewer NAME")
        return given
    name = given or paths.configured_reviewer()
    if name is None:
        name = click.prompt("Reviewer name", default=getpass.getuser())
    return name


def _confirm(question: str, yes: bool) -> None:
    if not yes and not click.confirm(question, default=False):
        raise click.Abort()


def _completion_store(ctx: click.Context) -> Ctx | None:
    try:
        return Ctx.open(paths.find_store(ctx.find_root().params.get("db")), embedder=None)
    except CtxError:
        return None


def _complete_pending(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """Pending proposal ids (with their subject as help) for shell completion."""
    from click.shell_completion import CompletionItem  # noqa: PLC0415

    kernel = _completion_store(ctx)
    if kernel is None:
        return []
    with kernel:
        return [
            CompletionItem(p.id, help=f"{p.subject}: {text.visible(p.decision)[:60]}")
            for p in kernel.queue()
            if p.id.lower().startswith(incomplete.lower())
        ]


def _complete_subject(ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
    """Subjects of decisions and pending proposals for shell completion."""
    kernel = _completion_store(ctx)
    if kernel is None:
        return []
    with kernel:
        return sorted(s for s in kernel.store.known_subjects() if s.startswith(incomplete.lower()))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--db", metavar="STORE", help=_DB_HELP)
@click.version_option(package_name="ctx-kernel", prog_name="ctx")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """ctx: a local-first, human-ratified decision kernel for AI coding agents.

    Agents log evidence and propose decisions; only a person ratifies them.
    """
    ctx.ensure_object(dict)["db"] = db


_KEY_FILE_HELP = (
    "Key file (default: CTX_VAULT_KEY, else CTX_VAULT_KEY_FILE, else vault/<store id>.key "
    "in the config folder); created 0600 if missing."
)


@cli.command()
@click.option("--encrypt", is_flag=True, help="Encrypt evidence text at rest (AES-256-GCM).")
@click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), help=_KEY_FILE_HELP)
@_db_option
@click.pass_context
def init(ctx: click.Context, encrypt: bool, key_file: Path | None, db_here: str | None) -> None:
    """Create the store (.ctx/ctx.db in the working folder, or --db / CTX_DB / .ctx/config.toml).

    With --db postgresql://host/dbname it creates the schema on the server and names the store
    in .ctx/config.toml (never with a user or password), so teammates' commands find it.
    """
    explicit = db_here or ctx.obj.get("db")
    target = paths.init_target(explicit)
    here = Path.cwd().resolve()
    shadowed = None if explicit or os.environ.get("CTX_DB") else paths.enclosing_store(here)
    if shadowed == target:
        shadowed = None
    shown = paths.display_location(target)
    if isinstance(target, str) and paths.is_server_url(target) and explicit is not None:
        paths.write_project_config(here, target, check_only=True)  # before the server is touched
    kernel, created = Ctx.init(target)
    with kernel:
        _say(f"{'created' if created else 'already present, schema up to date:'} {shown}")
        if created and shadowed is not None:
            _say(
                f"ctx: note: {paths.display_location(shadowed)} already serves this folder; commands "
                "run here and below now use the new store instead",
                err=True,
            )
        if isinstance(target, str) and paths.is_server_url(target):
            _name_shared_store(here, target, explicit is not None)
        elif isinstance(target, Path) and created and paths.keep_out_of_git(target):
            _say(
                f"{target.parent / '.gitignore'} keeps the store out of git (its evidence may hold "
                "private text); commit checkpoints/ beside it, and share decisions with `ctx export adr`",
                err=True,
            )
        if encrypt and not (kernel.encrypted and not created):
            _seal(kernel, kernel.encrypt, key_file, "encrypting")
        elif key_file is not None:
            raise UsageError("--key-file goes with --encrypt")


@cli.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--revoke", is_flag=True, help="Withdraw the approval instead.")
@click.option("--yes", is_flag=True, help="Approve without asking (for scripts).")
def allow(folder: Path | None, revoke: bool, yes: bool) -> None:
    """Approve the store a project's .ctx/config.toml names, for your commands, hooks and ctx mcp.

    A cloned repository's config could name any server or file. Until you approve it here, ctx
    neither connects to it nor opens it, and every command says so. The approval covers the config
    as it reads now: a changed config needs a new one. A project's own .ctx/ctx.db needs none.
    """
    project, naming = paths.find_naming(folder or Path.cwd())
    if naming is None:
        _say(f"{paths.own_store(project)} is the project's own store: nothing to approve")
        return
    if revoke:
        done = paths.revoke(naming.source)
        _say(f"{'approval withdrawn' if done else 'was not approved'}: {naming.source}")
        return
    shown = naming.shown
    if paths.is_approved(naming):
        _say(f"already approved: commands run in {project} use {shown}")
        return
    if not yes and not sys.stdin.isatty():
        raise UsageError("approving a store is a person's act: without a terminal pass --yes")
    who = os.environ.get("PGUSER") or getpass.getuser()
    how = (
        f"a server: ctx connects as {who}, with your credentials" if paths.is_server_url(shown) else "a file"
    )
    _say(f"{naming.source} names the store\n  {shown}\n  ({how})", err=True)
    _confirm(f"Use it for commands run in {project}?", yes)
    paths.approve(naming)
    _say(f"approved: commands run in {project} use {shown}")


def _name_shared_store(project: Path, url: str, from_option: bool) -> None:
    """Write the project's config naming a server store (``ctx init --db URL``), password-free."""
    if paths.has_password(url):
        _say(
            f"ctx: note: the password in the URL was used once and is not kept; give it with "
            f"{paths.CREDENTIALS_HINT}",
            err=True,
        )
    if not from_option:
        return
    written = paths.write_project_config(project, url)
    # The person named this store on the command line: their config needs no second approval.
    if (naming := paths.naming_in(project)) is not None:
        paths.approve(naming)
    if written is not None:
        paths.keep_out_of_git(written)
        _say(
            f"{written} names the store for everyone who works here: commit it (it holds no "
            f"password; each person connects as their own role with {paths.CREDENTIALS_HINT})",
            err=True,
        )


@cli.command("encrypt")
@click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), help=_KEY_FILE_HELP)
@_with_store
def encrypt_command(kernel: Ctx, key_file: Path | None) -> None:
    """Encrypt every evidence text at rest; resumable, and new evidence is encrypted from then on.

    Evidence vectors and entity mentions are dropped (they would give the text away); keyword
    search keeps working on keyed tokens. Keep the key safe: without it the evidence is lost.
    """
    _seal(kernel, kernel.encrypt, key_file, "encrypting")


@cli.command()
@click.option("--key-file", type=click.Path(dir_okay=False, path_type=Path), help="The current key file.")
@_with_store
def rekey(kernel: Ctx, key_file: Path | None) -> None:
    """Encrypt every evidence text again under a new key; safe to interrupt and run again.

    The new key waits in <key file>.new until every row uses it, then replaces the key file.
    """
    _seal(kernel, kernel.rekey, key_file, "re-encrypting")


def _seal(kernel: Ctx, step: Callable[..., Any], key_file: Path | None, label: str) -> None:
    show = sys.stderr.isatty()
    bar: Any = (
        click.progressbar(length=1, label=label, file=sys.stderr, show_pos=True) if show else nullcontext()
    )
    with bar:
        shown = 0

        def progress(done: int, total: int) -> None:
            nonlocal shown
            if show:
                bar.length = max(total, 1)
                bar.update(done - shown)
                shown = done

        report = step(key_file=key_file, progress=progress)
    _say(f"{report.sealed} evidence texts sealed with key {report.key_id} ({report.key_source})")
    if report.key_created:
        _say(f"key written to {report.key_source}: back it up; without it the evidence cannot be read")


@cli.command()
@click.argument("body", metavar="TEXT|-", required=False)
@click.option(
    "--jsonl",
    "jsonl",
    metavar="FILE|-",
    help="Log many records, one JSON object per line (schemas/log-record.schema.json).",
)
@click.option(
    "--kind", type=click.Choice(EVIDENCE_KINDS), default="note", show_default=True, help="What the text is."
)
@click.option("--agent", envvar="CTX_AGENT", help="Who logged it (default: CTX_AGENT).")
@click.option("--session", envvar="CTX_SESSION", help="Session id (default: CTX_SESSION).")
@click.option("--source", help="Where the text came from: a path, URL or path#Lline.")
@click.option("--tag", "tags", multiple=True, help="A tag; repeat for more.")
@click.option("--no-redact", is_flag=True, help="Store secrets (keys, tokens, passwords) as they are.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@_with_store
def log(
    kernel: Ctx,
    body: str | None,
    jsonl: str | None,
    kind: str,
    agent: str | None,
    session: str | None,
    source: str | None,
    tags: tuple[str, ...],
    no_redact: bool,
    as_json: bool,
) -> None:
    """Append raw text (or - for standard input) to the evidence vault; prints its id.

    Obvious secrets are replaced by typed placeholders such as [REDACTED:aws-access-key]
    before the text is stored, unless --no-redact. With --jsonl, records are committed 500
    at a time; a bad line is reported by number and skipped (the good lines are stored, and
    the exit status is 1), and running the same file again adds nothing.
    """
    if kernel.login is not None:
        agent = kernel.actor(agent, kernel.login, "agent")
    if jsonl is not None:
        if body is not None:
            raise UsageError("give either TEXT or --jsonl FILE, not both")
        defaults = EvidenceInput(text="", kind=kind, agent=agent, session=session, tags=tags)
        report = _log_jsonl(kernel, jsonl, defaults, redact=not no_redact)
        if as_json:
            _emit_json(report.to_dict())
        else:
            _say("\n".join(bulk.summary(report, redact=not no_redact)))
        if report.interrupted:
            sys.exit(130)
        if report.rejected_count:
            # Scripts must notice a bad line; everything else in the file is already committed.
            lines = "1 line was" if report.rejected_count == 1 else f"{report.rejected_count} lines were"
            _fail(f"{lines} rejected; the other lines were logged", 1)
        return
    if body is None:
        raise UsageError("missing TEXT (or - for standard input, or --jsonl FILE)")
    if body == "-":
        body = _read_stdin(text.MAX_EVIDENCE_BYTES, "evidence")
    result = kernel.log(
        _check_utf8(body, "evidence"),
        kind=kind,
        agent=agent,
        session=session,
        tags=tags,
        source=source,
        redact=not no_redact,
    )
    if as_json:
        _emit_json(result.to_dict())
    else:
        _say(result.id + ("  (already in the vault)" if result.duplicate else ""))
    if result.redacted:
        _say(f"redacted {result.redacted} secret(s) before storing", err=True)


def _log_jsonl(kernel: Ctx, name: str, defaults: EvidenceInput, *, redact: bool) -> BatchReport:
    report = BatchReport()
    if name == "-":
        items = read_jsonl(sys.stdin.buffer, defaults=defaults)
        return bulk.log_items(kernel, items, report=report, total_lines=None, label="logging", redact=redact)
    try:
        handle = open(name, "rb")  # noqa: SIM115 - closed below, after the generator is drained
    except OSError as error:
        raise UsageError(f"{name}: cannot read: {error.strerror or error}") from None
    with handle:
        total = count_lines(handle)
        items = read_jsonl(handle, defaults=defaults)
        return bulk.log_items(
            kernel,
            items,
            report=report,
            total_lines=total,
            label="logging",
            redact=redact,
            parallel=total >= PARALLEL_FROM,
        )


@cli.command()
@click.option("--subject", help="Dotted subject, e.g. auth.tokens.")
@click.option("--decision", help="The decision, one or two sentences.")
@click.option("--rationale", help="Why.")
@click.option("--title", help="A short title, as an ADR's heading (kept on ADR export).")
@click.option("--evidence", "evidence", multiple=True, metavar="ID", help="Cited evidence id; repeat.")
@click.option("--supersedes", multiple=True, metavar="ID", help="Decision id it replaces; repeat.")
@click.option(
    "--agent",
    "--proposer",
    "proposer",
    envvar="CTX_AGENT",
    help="Who proposes: the agent's name, as in ctx log (default: CTX_AGENT, else the user).",
)
@click.option("--session", envvar="CTX_SESSION", help="Session id (default: CTX_SESSION).")
@click.option(
    "--input",
    "input_file",
    type=click.File("rb"),
    metavar="FILE|-",
    help="Read the proposal as JSON (schemas/propose-input.schema.json) from a file or -.",
)
@click.option(
    "--json",
    "json_option",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="",
    help="Print the queued proposal as JSON (schemas/proposal.schema.json).",
)
@click.option("--json-out", "json_out", is_flag=True, hidden=True, help="Deprecated: use --json.")
@_with_store
def propose(
    kernel: Ctx,
    subject: str | None,
    decision: str | None,
    rationale: str | None,
    title: str | None,
    evidence: tuple[str, ...],
    supersedes: tuple[str, ...],
    proposer: str | None,
    session: str | None,
    input_file: Any,
    json_option: str | None,
    json_out: bool,
) -> None:
    """Queue a decision for a person to ratify. By default it supersedes the subject's current one.

    --input reads the whole proposal as a JSON document; --json prints the result as JSON, as on
    every command. (The earlier spellings --json FILE for input and --json-out still work, with a
    note, until the next release.)
    """
    as_json = json_out or json_option == ""
    json_input = input_file
    if json_out:
        _say("ctx: --json-out is deprecated: use --json", err=True)
    if json_option:
        if json_input is not None:
            raise UsageError("give one input: --input FILE")
        try:
            json_input = click.open_file(json_option, "rb")
        except OSError as exc:
            raise UsageError(f"cannot read {json_option}: {exc.strerror or exc}") from None
        _say(f"ctx: --json {json_option} is deprecated for input: use --input {json_option}", err=True)
    fields: dict[str, Any] = {
        "subject": subject,
        "decision": decision,
        "rationale": rationale,
        "title": title,
        "evidence": list(evidence),
        "supersedes": list(supersedes),
        "proposer": proposer,
        "session": session,
    }
    if json_input is not None:
        given = [name for name in ("subject", "decision", "rationale", "title") if fields[name] is not None]
        given += [name for name in ("evidence", "supersedes") if fields[name]]
        if given:
            raise UsageError(f"give the proposal either as --input or as options, not both (--{given[0]})")
        fields = _propose_document(json_input.read(MAX_JSON_INPUT_BYTES + 1))
        fields["proposer"] = fields.get("proposer") or proposer
        fields["session"] = fields.get("session") or session
    if not fields.get("subject"):
        raise UsageError("missing --subject")
    if not fields.get("decision"):
        raise UsageError("missing --decision")
    for key in ("subject", "decision", "rationale", "title"):
        if fields.get(key) is not None:
            _check_utf8(fields[key], key)
    fields["proposer"] = kernel.actor(fields.get("proposer"), f"cli:{getpass.getuser()}", "proposer")
    proposal = kernel.propose(**fields)
    if as_json:
        _emit_json(proposal.to_dict())
        return
    _say(proposal.id)
    if proposal.supersedes:
        _say(f"would supersede: {', '.join(proposal.supersedes)}", err=True)
    if proposal.near_duplicate_of:
        _say(
            f"near-duplicate of pending {proposal.near_duplicate_of} "
            f"(similarity {proposal.near_duplicate_score:.0f})",
            err=True,
        )


def _propose_document(raw: bytes) -> dict[str, Any]:
    document = read_json(raw, max_bytes=MAX_JSON_INPUT_BYTES)
    from pydantic import ValidationError  # noqa: PLC0415 - only for JSON input

    from ctx_kernel.kernel.contracts import ProposeInput, first_problem  # noqa: PLC0415

    try:
        return ProposeInput.model_validate(document).model_dump()
    except ValidationError as exc:
        raise UsageError(f"invalid proposal JSON: {first_problem(exc)}") from None


@cli.command()
@click.option("--subject", help="Only this subject and its sub-subjects.")
@click.option("--proposer", help="Only this proposer.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/queue.schema.json).")
@_with_store
def queue(kernel: Ctx, subject: str | None, proposer: str | None, as_json: bool) -> None:
    """List pending proposals, oldest first."""
    found = kernel.queue(subject, proposer)
    if as_json:
        _emit_json(envelopes.queue(found))
        return
    if not found:
        _say("no pending proposals")
    for proposal in found:
        _say(_proposal_line(proposal))


@cli.command()
@click.argument("proposal_id", metavar="ID", shell_complete=_complete_pending)
@click.option("--decision", help="Ratify this amended text instead (the amendment is recorded).")
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config; asked on a terminal).")
@click.option(
    "--settle/--no-settle",
    default=True,
    show_default=True,
    help="Close the other proposals of its review group as settled by this one, as ctx review does.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option(
    "--closes",
    "approved_closes",
    multiple=True,
    metavar="ID",
    help="With --yes: also close this current decision, ratified after the proposal was made.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/ratification.schema.json).")
@_with_store
def ratify(
    kernel: Ctx,
    proposal_id: str,
    decision: str | None,
    reviewer: str | None,
    settle: bool,
    yes: bool,
    approved_closes: tuple[str, ...],
    as_json: bool,
) -> None:
    """Ratify a pending proposal: it becomes the current decision on its subject.

    It shows exactly what changes (the plan ctx review shows) and carries out that plan, or
    refuses if another reviewer changed the subject in the meantime. With --yes nothing is shown,
    so it approves what the proposal was made against: a current decision ratified since then is
    closed only when named with --closes.
    """
    plan = kernel.plan_ratification(proposal_id, decision=decision, settle=None if settle else [])
    name = _reviewer(kernel, reviewer, yes, "ratifying")
    if yes:
        approved = {kernel.resolve_id(d, "decision") for d in approved_closes}
        for unseen in plan.closes_unseen():
            if unseen.id not in approved:
                raise StalePlanError(
                    f"not ratified: {unseen.subject} now has current decision {unseen.id}, ratified by "
                    f"{text.visible(unseen.ratified_by)} at {unseen.ratified_at[:19]}, after "
                    f"{plan.proposal.id} was proposed; run `ctx ratify {plan.proposal.id}` to see the "
                    f"plan, or add --closes {unseen.id}"
                )
    if not yes:
        _say(f"Ratifying {plan.proposal.id} by {plan.proposal.proposer}:", err=True)
        for line in plan.lines():
            _say(f"  {line}", err=True)
    _confirm(f"Ratify {plan.proposal.id} as {name}?", yes)
    result = kernel.ratify(plan, reviewer=name)
    if as_json:
        _emit_json(result.to_dict())
        return
    _say(result.decision.id)
    for old in result.superseded:
        _say(f"superseded {old}", err=True)
    for other in result.settled:
        _say(f"settled {other}", err=True)


@cli.command()
@click.argument("proposal_id", metavar="ID", shell_complete=_complete_pending)
@click.option("--reason", required=True, help="Why it is rejected (kept for audit).")
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config; asked on a terminal).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the proposal as JSON (schemas/proposal.schema.json)."
)
@_with_store
def reject(
    kernel: Ctx, proposal_id: str, reason: str, reviewer: str | None, yes: bool, as_json: bool
) -> None:
    """Reject a pending proposal with a reason."""
    proposal = kernel.pending(proposal_id)
    name = _reviewer(kernel, reviewer, yes, "rejecting")
    if not yes:
        _say(f"{proposal.id} on {proposal.subject} by {proposal.proposer}:\n  {proposal.decision}", err=True)
    _confirm(f"Reject {proposal.id} ({proposal.subject}) as {name}?", yes)
    rejected = kernel.reject(proposal.id, reviewer=name, reason=_check_utf8(reason, "reason"))
    if as_json:
        _emit_json(rejected.to_dict())
        return
    _say(f"rejected {proposal.id}")


@cli.command()
@click.argument("proposal_id", metavar="ID", shell_complete=_complete_pending)
@click.option("--reason", help="Why it is withdrawn.")
@click.option(
    "--agent",
    "--actor",
    "actor",
    envvar="CTX_AGENT",
    help="Who withdraws it (default: CTX_AGENT, else the user).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the proposal as JSON (schemas/proposal.schema.json)."
)
@_with_store
def withdraw(kernel: Ctx, proposal_id: str, reason: str | None, actor: str | None, as_json: bool) -> None:
    """Withdraw a pending proposal."""
    withdrawn = kernel.withdraw(
        proposal_id, actor=kernel.actor(actor, f"cli:{getpass.getuser()}", "agent"), reason=reason
    )
    if as_json:
        _emit_json(withdrawn.to_dict())
        return
    _say(f"withdrawn {withdrawn.id}")


@cli.command()
@click.argument("subject", shell_complete=_complete_subject)
@click.option("--reason", required=True, help="Why the decision no longer holds.")
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config; asked on a terminal).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the decision as JSON (schemas/decision.schema.json)."
)
@_with_store
def retire(kernel: Ctx, subject: str, reason: str, reviewer: str | None, yes: bool, as_json: bool) -> None:
    """Close the current decision on SUBJECT with no successor."""
    name = _reviewer(kernel, reviewer, yes, "retiring")
    if not yes:
        for current in kernel.decisions(subject):
            if current.subject == text.normalise_subject(subject):
                _say(f"{current.id} on {current.subject}:\n  {current.decision}", err=True)
    _confirm(f"Retire the current decision on {text.normalise_subject(subject)} as {name}?", yes)
    decision = kernel.retire(subject, reviewer=name, reason=reason)
    if as_json:
        _emit_json(decision.to_dict())
        return
    _say(f"retired {decision.id}")


@cli.command()
@click.option("--subject", help="Only this subject and its sub-subjects.")
@click.option("--as-of", "as_of", metavar="DATE", help="Decisions valid at DATE (a bare date means its end).")
@click.option("--all", "include_closed", is_flag=True, help="Include superseded and retired decisions.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/decisions.schema.json).")
@_with_store
def decisions(
    kernel: Ctx, subject: str | None, as_of: str | None, include_closed: bool, as_json: bool
) -> None:
    """List current decisions (or those valid at a date, or all)."""
    found = kernel.decisions(subject, as_of=as_of, include_closed=include_closed)
    if as_json:
        _emit_json(envelopes.decisions(found, as_of))
        return
    if not found:
        _say("no decisions")
    for decision in found:
        _say(_decision_line(decision))


@cli.command()
@click.argument("subject", shell_complete=_complete_subject)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/history.schema.json).")
@_with_store
def history(kernel: Ctx, subject: str, as_json: bool) -> None:
    """Show SUBJECT's supersede chain with validity windows, oldest first."""
    chain = kernel.history(subject)
    if as_json:
        _emit_json(envelopes.history(subject, chain))
        return
    for decision in chain:
        _say(_decision_line(decision))
        if decision.title:
            _say(f"    title: {decision.title}")
        if decision.deciders:
            _say(f"    deciders: {', '.join(decision.deciders)} (ratified by {decision.ratified_by})")
        for old in decision.supersedes:
            _say(f"    supersedes {old}")
        if decision.amended and decision.proposal_id:
            proposed = kernel.proposal(decision.proposal_id).decision
            _say(f"    amended by {decision.ratified_by}: {plain_diff(proposed, decision.decision)}")
        if decision.closed_by == "retired":
            _say(f"    retired: {decision.close_reason}")


@cli.command()
@click.argument("item_id", metavar="ID", shell_complete=_complete_pending)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/show.schema.json).")
@_with_store
def show(kernel: Ctx, item_id: str, as_json: bool) -> None:
    """Show one evidence text, proposal or decision by id."""
    record = kernel.show(item_id)
    if as_json:
        _emit_json(envelopes.show(record))
        return
    for key, value in record.to_dict().items():
        if value not in (None, [], ""):
            _say(f"{key}: {value}")


@cli.command()
@click.argument("query")
@click.option(
    "--limit", default=10, show_default=True, type=click.IntRange(1, 1000), help="Hits per section."
)
@click.option("--as-of", "as_of", metavar="DATE", help="Search decisions valid at DATE.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/search.schema.json).")
@_with_store
def search(kernel: Ctx, query: str, limit: int, as_of: str | None, as_json: bool) -> None:
    """Keyword search: ratified decisions and unratified evidence, in two sections."""
    results = kernel.search(_check_utf8(query, "query"), limit=limit, as_of=as_of)
    if as_json:
        _emit_json(results.to_dict())
        return
    _say("Decisions (ratified):")
    for match in results.decisions:
        _say("  " + _decision_line(match.decision).replace("\n", "\n  "))
    if not results.decisions:
        _say("  none")
    _say("Evidence (unratified):")
    for found in results.evidence:
        _say(f"  {found.evidence.id}  {found.evidence.kind}  {found.snippet}")
    if not results.evidence:
        _say("  none")


def _explain(
    scores: dict[str, Any], rrf: float | None = None, combsum: bool = False, timed: bool = False
) -> str:
    """Each ranker's raw score and rank, and the fused score with how it was made."""
    parts = []
    labels = {"keyword": "bm25", "entity": "entity", "vector": "cosine"}
    for name, score in scores.items():
        if score is None:
            continue
        detail = f": {score.detail}" if score.detail else ""
        parts.append(f"{name} #{score.rank} ({labels[name]} {score.score:.4g}{detail})")
    if combsum and rrf is not None:
        # kernel/recall/fusion.py: CombSUM of min-max normalised scores, plus the neighbour share.
        parts.append(
            f"fused {rrf:.3f} (each ranker's score scaled to 0-1 within its list, summed; "
            "a text logged next to a strong hit in the same session also gets half of that hit's)"
        )
        if timed:
            parts.append("+1: the question asks when and this text states a time")
        if not any(score is not None for score in scores.values()):
            return f"no ranker matched it directly; it was logged next to a strong hit · {parts[-1]}"
    elif rrf is not None:
        parts.append(f"rrf {rrf:.4f} (sum of weight / (rrf-k + rank) over the rankers)")
    return " · ".join(parts) or "no ranker matched it directly"


@cli.command()
@click.argument("query")
@click.option(
    "--k", "k", default=10, show_default=True, type=click.IntRange(1, MAX_RECALL_K), help="Hits per section."
)
@click.option("--as-of", "as_of", metavar="DATE", help="Answer with the decisions valid at DATE.")
@click.option(
    "--mode",
    type=click.Choice(RECALL_MODES),
    default=DEFAULT_MODE,
    show_default=True,
    help="Which rankers to use; hybrid fuses all three.",
)
@click.option(
    "--rrf-k",
    "rrf_k",
    default=DEFAULT_RRF_K,
    show_default=True,
    type=click.IntRange(1, MAX_RRF_K),
    help=(
        "Reciprocal rank fusion constant (decisions, and evidence in single-ranker modes;"
        " hybrid evidence fuses normalised scores)."
    ),
)
@click.option(
    "--min",
    "minimums",
    multiple=True,
    metavar="RANKER=SCORE",
    help="Drop a ranker's hits below this raw score, e.g. vector=0.4 (cosine); repeat per ranker.",
)
@click.option("--explain", is_flag=True, help="Show each ranker's raw score and rank per hit.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/recall.schema.json).")
@_with_store
def recall(
    kernel: Ctx,
    query: str,
    k: int,
    as_of: str | None,
    mode: str,
    rrf_k: int,
    minimums: tuple[str, ...],
    explain: bool,
    as_json: bool,
) -> None:
    """Decisions in force (with what contradicts them) and unratified evidence, in two sections."""
    min_scores: dict[str, float] = {}
    for pair in minimums:
        name, _, value = pair.partition("=")
        try:
            min_scores[name.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--min takes RANKER=SCORE, e.g. vector=0.4, not {pair!r}") from None
        if not math.isfinite(min_scores[name.strip()]):
            raise UsageError(f"--min takes a finite score, not {pair!r}")
    found = kernel.recall(
        _check_utf8(query, "query"), k=k, as_of=as_of, mode=mode, rrf_k=rrf_k, min_scores=min_scores
    )
    if found.vectors.note and found.vectors.state in ("off", "partial"):
        _say(f"ctx: note: {found.vectors.note}", err=True)
    if as_json:
        _emit_json(found.to_dict())
        return
    moment = f"at {found.as_of[:19]}" if found.as_of else "now"
    _say(f"Decisions (ratified, in force {moment}):")
    for hit in found.decisions:
        d = hit.decision
        _say(f"  {hit.rank}. {d.id}  {d.subject}  [since {d.valid_from[:10]}]")
        _say(f"     {d.decision}")
        if hit.via:
            _say(f"     (its superseded predecessor {hit.via} matched the query)")
        for related in [*hit.superseded, *hit.conflicts, *hit.pending]:
            flag = f"{related.warning}: " if related.warning else ""
            _say(f"     ! {flag}{related.id} {related.subject}: {related.text}")
            _say(f"       why: {related.why}")
        if explain:
            _say(f"     explain: {_explain(hit.scores, hit.rrf)}")
    if not found.decisions:
        _say("  none")
    if found.closed:
        _say("No longer in force (do not apply):")
        for closed in found.closed:
            _say(f"  {closed.decision.id}  {closed.decision.subject}: {closed.decision.decision}")
            _say(f"     why: {closed.why}")
    _say("Evidence (unratified, not decisions):")
    asks_when = found.mode == "hybrid" and fusion.asks_when(query)
    for ev in found.evidence:
        _say(
            f"  {ev.rank}. {ev.evidence.id}  {ev.evidence.kind}  {ev.evidence.created_at[:10]}  {ev.snippet}"
        )
        if explain:
            timed = asks_when and fusion.states_time(ev.evidence.text)
            _say(f"     explain: {_explain(ev.scores, ev.rrf, combsum=found.mode == 'hybrid', timed=timed)}")
    if not found.evidence:
        _say("  none")


@cli.command()
@click.option("--query", "-q", help="What the session is about (default: every current decision).")
@click.option(
    "--budget",
    default=DEFAULT_BUDGET,
    show_default=True,
    type=click.IntRange(MIN_BUDGET, MAX_BUDGET),
    help="Token budget (1 token ~ 4 characters).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
    help="Markdown for an agent's context, or JSON (schemas/inject.schema.json).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON (schemas/inject.schema.json): --format json."
)
@_with_store
def inject(kernel: Ctx, query: str | None, budget: int, fmt: str, as_json: bool) -> None:
    """Print the context block an agent reads at session start, within a token budget."""
    block = kernel.inject(_check_utf8(query, "query") if query is not None else None, budget=budget)
    if as_json or fmt == "json":
        _emit_json(block.to_dict())
    else:
        _say(block.markdown, nl=False)


@cli.command()
@click.option("--download", is_flag=True, help="Let fastembed download the model if no local copy exists.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/reindex.schema.json).")
@_with_store
def reindex(kernel: Ctx, download: bool, as_json: bool) -> None:
    """Embed every decision and evidence text again with the configured model; stopped midway
    (Ctrl-C, a kill), the next run carries on after the texts already embedded."""
    reached = [0, 0]

    def count(done: int, total: int) -> None:
        reached[:] = [done, total]

    try:
        if as_json or not sys.stderr.isatty():
            report = kernel.reindex(download=download, progress=count)
        else:
            with click.progressbar(length=1, label="embedding", file=sys.stderr, show_eta=False) as bar:
                rate = bulk.Throughput()

                def progress(done: int, total: int) -> None:
                    count(done, total)
                    left = rate.left(done, total)
                    if left is not None:
                        bar.label = f"embedding, about {bulk.duration(left)} left"
                    bar.length = max(total, 1)
                    bar.update(done - bar.pos)

                report = kernel.reindex(download=download, progress=progress)
    except KeyboardInterrupt:
        done, total = reached
        _fail(f"interrupted after {done} of {total} texts: run `ctx reindex` again to embed the rest", 130)
    if as_json:
        _emit_json(report.to_dict())
        return
    changed = f" (was {report.previous_model})" if report.previous_model not in (None, report.model) else ""
    resumed = ", carrying on after an interrupted reindex" if report.resumed else ""
    _say(
        f"embedded {report.decisions} decisions and {report.evidence} evidence texts with "
        f"{report.model}{changed}, {report.dim} dimensions, in {report.seconds:.1f} s{resumed}"
    )


_MIGRATE_STAGES = {
    "evidence": "evidence",
    "proposal": "proposals",
    "proposal_evidence": "proposal citations",
    "decision": "decisions",
    "decision_evidence": "decision citations",
    "supersession": "supersession links",
    "resolved": "proposal resolutions",
    "audit": "audit chain",
    "vectors": "vectors",
    "index": "index, mentions, conflicts",
}


@cli.command("migrate")
@click.option(
    "--to",
    "to",
    required=True,
    metavar="LOCATION",
    help="Where to copy the store: a file, sqlite:PATH or a postgresql:// URL (not printed with a password).",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100_000),
    default=COPY_BATCH,
    show_default=True,
    help="Rows per transaction on the target.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Copy even a store that does not verify, or through a symbolic link to nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/migrate.schema.json).")
@_with_store
def migrate_command(kernel: Ctx, to: str, batch_size: int, force: bool, as_json: bool) -> None:
    """Copy this store to another file or server: evidence, proposals, decisions, the audit chain.

    Stopped at any point, the same command carries on where it stopped: rows the target holds are
    checked against this store's, never written twice, and a target that holds another store or a
    changed row is refused. The keyword index, entity mentions and conflicts are rebuilt there;
    vectors are copied when the target uses the same model.
    """
    if as_json or not sys.stderr.isatty():
        report = kernel.migrate(to, batch_size=batch_size, force=force)
    else:
        report = _migrate_with_bars(kernel, to, batch_size, force)
    if as_json:
        _emit_json(report.to_dict())
        return
    copied = sum(t.copied for t in report.tables)
    rows = sum(t.rows for t in report.tables)
    again = "resumed: " if report.resumed else ""
    _say(
        f"{again}copied {copied} of {rows} rows to {report.target} in {report.seconds:.1f} s: "
        f"{report.audit_rows} audit rows, last hash {report.last_hash}, {report.vectors} vectors"
    )


def _migrate_with_bars(kernel: Ctx, to: str, batch_size: int, force: bool) -> Any:
    """``Ctx.migrate`` with a progress bar per table on the terminal (standard error)."""
    from rich.console import Console  # noqa: PLC0415 - only ctx migrate draws bars
    from rich.progress import (  # noqa: PLC0415
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    bars = Progress(
        TextColumn("{task.description:>28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )
    tasks: dict[str, Any] = {}

    def progress(stage: str, done: int, total: int | None) -> None:
        if stage not in tasks:
            tasks[stage] = bars.add_task(_MIGRATE_STAGES.get(stage, stage), total=total)
        bars.update(tasks[stage], completed=done, total=total)

    with bars:
        return kernel.migrate(to, batch_size=batch_size, progress=progress, force=force)


@cli.group()
def audit() -> None:
    """The hash-chained audit log."""


def _passphrase(confirm: bool) -> str:
    """``CTX_KEY_PASSPHRASE``, else a hidden prompt on a terminal (asked twice when creating a key)."""
    given = os.environ.get("CTX_KEY_PASSPHRASE")
    if given is not None:
        return given
    if not sys.stdin.isatty():
        raise UsageError("no passphrase for the signing key: set CTX_KEY_PASSPHRASE or run on a terminal")
    return click.prompt(
        "Passphrase for the signing key", hide_input=True, confirmation_prompt=confirm, err=True
    )


@audit.command("export")
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False),
    help="The records file to write; the signed manifest goes beside it as OUT.manifest.json.",
)
@click.option("--since", metavar="DATE", help="Start at this moment (a bare date means its start, UTC).")
@click.option("--until", metavar="DATE", help="End at this moment (a bare date means its end, UTC).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "csv"]),
    default="jsonl",
    show_default=True,
    help="JSON Lines, or CSV for a spreadsheet (cells that would run as formulas are escaped).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the signed manifest (schemas/audit-manifest.schema.json)."
)
@_with_store
def audit_export(
    kernel: Ctx, out: str, since: str | None, until: str | None, fmt: str, as_json: bool
) -> None:
    """Write a signed, tamper-evident export of the audit log that a reviewer can verify without ctx.

    Asks for the signing key's passphrase (or reads CTX_KEY_PASSPHRASE); see `ctx keys init`.
    """
    result = kernel.export_audit(
        Path(out), passphrase=lambda: _passphrase(confirm=False), since=since, until=until, fmt=fmt
    )
    if as_json:
        _emit_json(result.to_dict())
        return
    manifest = result.manifest
    _say(
        f"exported {manifest['records']} events (seq {manifest['first_seq']}..{manifest['last_seq']}) "
        f"to {result.records_path}"
    )
    _say(f"manifest {result.manifest_path}, signed with key {manifest['key']['key_id']}")


@audit.command("verify")
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--pubkey",
    type=click.Path(exists=True, dir_okay=False),
    help="The signer's public key (PEM) to trust for FILE or checkpoints; default: your own signing keys.",
)
@click.option(
    "--manifest",
    type=click.Path(exists=True, dir_okay=False),
    help="The export's signed manifest (default: FILE.manifest.json).",
)
@click.option(
    "--checkpoint",
    "checkpoints",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A signed checkpoint or export manifest to check the store's chain against (repeatable).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print JSON (schemas/audit-verify.schema.json; with FILE, schemas/audit-export-verify.schema.json).",
)
@_db_option
@click.pass_context
def audit_verify(
    ctx: click.Context,
    file: str | None,
    pubkey: str | None,
    manifest: str | None,
    checkpoints: tuple[str, ...],
    as_json: bool,
    db_here: str | None,
) -> None:
    """Verify the store's audit log, or with FILE an export: exits 1 naming the first bad row or record.

    Without FILE: recomputes the store's hash chain, checks it against every signed checkpoint
    (the store's checkpoints/ folder, exports, --checkpoint), the schema's triggers and indexes
    against the migrations, and replays the log against every table it describes. With FILE: checks
    the manifest's signature against the trusted key, the records' chain from the manifest's anchor,
    and that the records are the ones the manifest counts.
    """
    if file is None:
        if manifest:
            raise UsageError("--manifest verifies an export: name its FILE")
        _verify_store(ctx, checkpoints, pubkey, as_json, db_here)
        return
    if checkpoints:
        raise UsageError("--checkpoint checks the store's log: leave out FILE")
    found = Ctx.verify_audit_export(
        Path(file),
        pubkey=Path(pubkey) if pubkey else None,
        manifest=Path(manifest) if manifest else None,
    )
    if as_json:
        _emit_json(found.to_dict())
    elif found.ok:
        _say(
            f"export ok: {found.records} records (seq {found.first_seq}..{found.last_seq}), "
            f"anchored at {found.anchor_hash}, last hash {found.last_hash}"
        )
        _say(f"signed by key {found.trusted_key}, trusted from {found.trusted_key_source}")
    if not found.ok:
        raise CtxError(f"export {file} does not verify: {found.problem}")


def _verify_store(
    ctx: click.Context, checkpoints: tuple[str, ...], pubkey: str | None, as_json: bool, db_here: str | None
) -> None:
    kernel = _open(db_here or ctx.find_root().obj.get("db"))
    try:
        report = kernel.verify_audit(
            state=True, checkpoints=[Path(c) for c in checkpoints], pubkey=Path(pubkey) if pubkey else None
        )
    finally:
        kernel.close()
    if as_json:
        _emit_json(report.to_dict())
    elif report.ok:
        _say(f"audit chain ok: {report.rows} rows, last hash {report.last_hash}")
        if report.checkpoint_seq is not None:
            _say(f"matches {report.checkpoints} signed checkpoints (latest at row {report.checkpoint_seq})")
        for note in report.notes:
            _say(f"note: {note}")
    if not report.ok:
        raise CtxError(f"audit log does not verify: {report.problem}")


@audit.command("checkpoint")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Also write the checkpoint here (a file to commit or send); it is always kept in checkpoints/.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the checkpoint (schemas/audit-checkpoint.schema.json)."
)
@_with_store
def audit_checkpoint(kernel: Ctx, out: str | None, as_json: bool) -> None:
    """Sign the audit chain's head with your key, so a later rewrite of the whole log is caught.

    Keeps the signed head in checkpoints/ beside the store and in the store; `ctx audit verify`
    checks the chain against it. Asks for the signing key's passphrase (or reads CTX_KEY_PASSPHRASE).
    """
    result = kernel.checkpoint_audit(
        passphrase=lambda: _passphrase(confirm=False), out=Path(out) if out else None
    )
    if as_json:
        _emit_json(result.to_dict())
        return
    head = result.document["checkpoint"]
    _say(f"signed audit row {head['seq']} (hash {head['hash']}) with key {head['key']['key_id']}")
    for path in result.paths:
        _say(f"wrote {path}")


@cli.group()
def admin() -> None:
    """A team's PostgreSQL store: give each login its role (agent, reviewer or auditor).

    The database keeps the human gate: an agent's login can log and propose but no statement of
    it can ratify, reject, write a decision or close a window.
    """


_ROLE_HELP = {
    "agent": "logs evidence, proposes and withdraws; cannot ratify, reject or retire, even with raw SQL",
    "reviewer": "also ratifies, rejects and retires: a person's login",
    "auditor": "reads everything and writes nothing",
}


def _grant_command(role: str) -> None:
    article = "an" if role[0] in "aeiou" else "a"
    summary = (
        f"Make the login NAME {article} {role}: it {_ROLE_HELP[role]}.\n\n"
        "Prints the SQL as a script to review (run it with psql as the store's owner), or runs it "
        "with --run. NAME is quoted as an identifier, so any name is taken literally."
    )

    @admin.command(f"grant-{role}", help=summary)
    @click.argument("name")
    @click.option(
        "--run", is_flag=True, help="Run the SQL on the store's server (as its owner) instead of printing it."
    )
    @click.option(
        "--create-login",
        is_flag=True,
        help="Create NAME as a login role first (no password: peer or certificate authentication).",
    )
    @click.option(
        "--password",
        "ask_password",
        is_flag=True,
        help="With --run --create-login: ask for the login's password on the terminal (sent hashed).",
    )
    @_db_option
    @click.pass_context
    def grant(
        ctx: click.Context, name: str, run: bool, create_login: bool, ask_password: bool, db_here: str | None
    ) -> None:
        location = _locate(db_here or ctx.find_root().obj.get("db"))
        script = Ctx.grant_script(location, role, name, create_login=create_login)
        if not run:
            if ask_password:
                raise UsageError("--password goes with --run: a printed script never holds a password")
            click.echo(script, nl=False)
            return
        password = None
        if ask_password:
            if not create_login:
                raise UsageError("--password goes with --create-login")
            if not sys.stdin.isatty():
                raise UsageError("--password asks on a terminal: run it on one, or set the password in psql")
            password = click.prompt(
                f"Password for {name}", hide_input=True, confirmation_prompt=True, err=True
            )
        with Ctx.open(location, embedder=None) as kernel:
            kernel.grant_role(role, name, create_login=create_login, password=password)
        _say(f"{name} is now {article} {role} of {paths.display_location(location)}")


for _role in ("agent", "reviewer", "auditor"):
    _grant_command(_role)


@cli.group()
def keys() -> None:
    """The Ed25519 key that signs audit exports (in your user config folder, not the project)."""


@keys.command("init")
@click.option(
    "--force", is_flag=True, help="Replace an existing key (its public half is kept beside the new one)."
)
def keys_init(force: bool) -> None:
    """Create the audit signing key, its private half encrypted with a passphrase.

    The passphrase is asked twice on a terminal, or read from CTX_KEY_PASSPHRASE.
    """
    info = Ctx.create_signing_key(lambda: _passphrase(confirm=True), force=force)
    _say(f"created signing key {info.key_id}")
    _say(f"private key (encrypted): {info.private_path}")
    _say(f"public key: {info.public_path}")


@keys.command("export-public")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["pem", "raw"]),
    default="pem",
    show_default=True,
    help="PEM (SubjectPublicKeyInfo), or raw: the 32-byte key in base64.",
)
def keys_export_public(fmt: str) -> None:
    """Print the public key that verifies your audit exports; give it to the reviewer."""
    info = Ctx.signing_key()
    _say(info.public_pem.rstrip("\n") if fmt == "pem" else info.public_raw)


@cli.group()
def ingest() -> None:
    """Take in agents' session transcripts as evidence."""


@ingest.command("transcript")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="PATH...")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(TRANSCRIPT_FORMATS)),
    help="The transcript format (default: detected from each file).",
)
@click.option("--thinking", is_flag=True, help="Keep the model's reasoning as assistant turns.")
@click.option("--tag", "tags", multiple=True, help="A tag for every turn; repeat for more.")
@click.option("--no-redact", is_flag=True, help="Store secrets (keys, tokens, passwords) as they are.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/ingest.schema.json).")
@_with_store
def ingest_transcript(
    kernel: Ctx,
    paths: tuple[Path, ...],
    fmt: str | None,
    thinking: bool,
    tags: tuple[str, ...],
    no_redact: bool,
    as_json: bool,
) -> None:
    """Log each turn of Claude Code, Codex CLI or aider transcripts as evidence.

    A turn keeps its speaker, session, time and a PATH#Lline source. Tool output is cut to
    2,000 characters and binary blobs are left out. A folder is searched for *.jsonl and
    aider history files. Running it again on the same files adds nothing new.
    """
    report, files, failures = _ingest(kernel, paths, fmt, thinking=thinking, tags=tags, redact=not no_redact)
    if as_json:
        _emit_json({**report.to_dict(), "files": files})
    else:
        for entry in files:
            _say(
                f"{entry['path']}: {entry['format']}, {entry['turns']} turns"
                + (f", {entry['problems']} damaged lines skipped" if entry["problems"] else "")
            )
            for warning in entry["warnings"][: bulk.SHOWN_REJECTIONS]:
                _say(f"  line {warning['line']}: {warning['error']}")
        _say("\n".join(bulk.summary(report, redact=not no_redact)))
        if report.added:
            _say(
                "vectors for the new evidence: recall fills them a few at a time, `ctx reindex` all at "
                "once (on a server, the store's owner runs it)"
            )
    for failure in failures:
        _say(f"ctx: error: {failure}", err=True)
    if report.interrupted:
        sys.exit(130)
    if failures:
        sys.exit(1)


def _compressed_rollout(path: Path) -> bool:
    """A Codex ``*.jsonl.zst`` rollout, unless its plain ``.jsonl`` (which Codex reads first) is there."""
    return path.name.endswith(".jsonl.zst") and not path.with_name(path.name.removesuffix(".zst")).exists()


def _transcript_files(paths: tuple[Path, ...]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and (p.name.endswith((".jsonl", ".chat.history.md")) or _compressed_rollout(p))
            )
        else:
            found.append(path)
    # Absolute, so every turn's PATH#Lline source still points at its file from anywhere.
    return list(dict.fromkeys(p.absolute() for p in found))


def _ingest(
    kernel: Ctx,
    paths: tuple[Path, ...],
    fmt: str | None,
    *,
    thinking: bool,
    tags: tuple[str, ...],
    redact: bool,
) -> tuple[BatchReport, list[dict[str, Any]], list[str]]:
    from ctx_kernel.kernel.capture import transcripts  # noqa: PLC0415 - the parsers load only here

    files = _transcript_files(paths)
    explicit = {p.absolute() for p in paths if not p.is_dir()}
    sizes: dict[Path, int] = {}
    for path in files:
        try:
            with path.open("rb") as handle:
                sizes[path] = count_lines(handle)
        except OSError:
            sizes[path] = 0
    total, offset = BatchReport(), 0
    entries: list[dict[str, Any]] = []
    failures: list[str] = []
    for path in files:
        parsed = transcripts.ParseReport()
        try:
            turns = transcripts.parse(path, fmt, report=parsed, thinking=thinking)
        except UsageError as exc:
            if path in explicit:
                failures.append(exc.message)
            offset += sizes[path]
            continue
        one = BatchReport()
        try:
            bulk.log_items(
                kernel,
                from_turns(turns, tags=tags),
                report=one,
                total_lines=sum(sizes.values()),
                label="ingesting",
                redact=redact,
                origin=str(path),
                line_offset=offset,
                parallel=sizes[path] >= PARALLEL_FROM,
            )
        except UsageError as exc:  # a forced format that the file's lines do not fit
            failures.append(exc.message)
        offset += sizes[path]
        one.lines = parsed.lines
        total.absorb(one)
        entries.append(
            {
                "path": str(path),
                "format": parsed.format,
                "lines": parsed.lines,
                "turns": parsed.turns,
                "problems": parsed.problems,
                "warnings": [{"line": w.line, "error": w.message} for w in parsed.warnings],
            }
        )
        if one.interrupted:
            break
    if not files:
        failures.append("no transcript files found in " + ", ".join(str(p) for p in paths))
    return total, entries, failures


@cli.command()
@click.argument("event", type=click.Choice(["session-start", "session-end"]))
@click.option("--format", "fmt", type=click.Choice(list(TRANSCRIPT_FORMATS)), help="Default: detected.")
@click.option(
    "--budget",
    type=click.IntRange(MIN_BUDGET, MAX_BUDGET),
    default=DEFAULT_BUDGET,
    show_default=True,
    help="session-start: the block's size in tokens.",
)
@_db_option
@click.pass_context
def hook(ctx: click.Context, event: str, fmt: str | None, budget: int, db_here: str | None) -> None:
    """Run from an agent's hooks; a project without a store is skipped with a note (exit 0).

    session-start prints the `ctx inject` block for the session. session-end ingests the
    transcript named in the JSON on stdin. Claude Code and Codex hooks send {"session_id",
    "transcript_path", "cwd", ...}. The store is --db, CTX_DB, else the nearest .ctx/ctx.db
    above the payload's cwd, so the hooks can be installed for every project.
    """
    if event == "session-start":
        _session_start(ctx, budget, db_here)
        return
    payload = _hook_payload()
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        raise UsageError("the hook payload has no transcript_path")
    cwd = payload.get("cwd")
    start = Path(cwd) if isinstance(cwd, str) and Path(cwd).is_dir() else None
    try:
        location = _locate(db_here or ctx.find_root().obj.get("db"), start)
    except CtxError as exc:
        _say(f"ctx: {exc.message}; transcript not ingested", err=True)
        return
    with Ctx.open(location) as kernel:
        report, files, failures = _ingest(
            kernel, (Path(transcript).expanduser(),), fmt, thinking=False, tags=(), redact=True
        )
    if failures:
        raise UsageError(failures[0])
    turns = sum(entry["turns"] for entry in files)
    _say(
        f"ctx: {turns} turns read, {report.added} new evidence texts, "
        f"{report.duplicates} already in the vault",
        err=True,
    )


HOOK_PAYLOAD_BYTES = 1_000_000
HOOK_READ_SECONDS = 5.0


EMPTY_HOOK_PAYLOAD = "the hook payload on stdin is empty"


def _session_start(ctx: click.Context, budget: int, db_here: str | None) -> None:
    payload: dict[str, Any] = {}
    if not sys.stdin.isatty():
        try:
            payload = _hook_payload()
        except UsageError as exc:  # a hook must not stop the session: use the working folder
            if exc.message != EMPTY_HOOK_PAYLOAD:
                _say(f"ctx: {exc.message}; using the working folder", err=True)
    cwd = payload.get("cwd")
    start = Path(cwd) if isinstance(cwd, str) and Path(cwd).is_dir() else None
    try:
        kernel = _open(db_here or ctx.find_root().obj.get("db"), start)
    except CtxError as exc:
        _say(f"ctx: {exc.message}; no decisions injected", err=True)
        return
    with kernel:
        _say(kernel.inject(budget=budget).markdown, nl=False)


def _hook_payload() -> dict[str, Any]:
    """The hook's JSON object from stdin, read until it parses: some hosts never close the pipe."""
    import select  # noqa: PLC0415

    buffer = b""
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):  # not a real stream (embedded use): read it whole
        return _hook_document(sys.stdin.buffer.read(HOOK_PAYLOAD_BYTES + 1))
    deadline = time.monotonic() + HOOK_READ_SECONDS
    while len(buffer) <= HOOK_PAYLOAD_BYTES:
        remaining = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(remaining, 0))[0] if remaining > 0 else []
        chunk = os.read(fd, 65_536) if ready else b""
        buffer += chunk
        try:
            return _hook_document(buffer)
        except UsageError:
            if not chunk:
                raise
    raise UsageError(f"the hook payload is larger than {HOOK_PAYLOAD_BYTES} bytes")


def _hook_document(raw: bytes) -> dict[str, Any]:
    if len(raw) > HOOK_PAYLOAD_BYTES:
        raise UsageError(f"the hook payload is larger than {HOOK_PAYLOAD_BYTES} bytes")
    if not raw.strip():
        raise UsageError(EMPTY_HOOK_PAYLOAD)
    try:
        document = read_json(raw)
    except JSONInputError as exc:
        raise UsageError(f"the hook payload on stdin is not a JSON object: {exc.message}") from None
    if not isinstance(document, dict):
        raise UsageError("the hook payload on stdin is not a JSON object")
    return document


@cli.group("import")
def import_group() -> None:
    """Bring decisions in from other formats."""


@import_group.command("adr")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--reviewer", help="Who ratifies the import (needed with --yes without a terminal).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation (needed without a terminal).")
@click.option(
    "--dry-run", is_flag=True, help="Print the subject and outcome chosen for every file; write nothing."
)
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
@_with_store
def import_adr(
    kernel: Ctx, folder: str, reviewer: str | None, yes: bool, dry_run: bool, as_json: bool
) -> None:
    """Import a folder of ADR Markdown files (adr-tools/Nygard or MADR); re-import is a no-op.

    Each file is kept whole as evidence; its Decision section (or, without one, its whole body) is
    the decision. Set a file's subject with `subject:` front matter after checking --dry-run.
    """
    if dry_run:
        name = reviewer or paths.configured_reviewer() or getpass.getuser()
    else:
        name = _reviewer(kernel, reviewer, yes, "importing decisions")
        _confirm(f"Import the ADRs in {folder} as decisions ratified by {name}?", yes)
    report = kernel.import_adrs(Path(folder), reviewer=name, dry_run=dry_run)
    if as_json:
        _emit_json(report.to_dict())
        return
    if dry_run:
        for entry in report.files:
            _say(f"{entry['path']}  {entry.get('subject') or '-'}  {entry['outcome']}")
    verb = "would import" if dry_run else "imported"
    _say(
        f"{verb} {len(report.decisions)} decisions and {len(report.proposals)} proposals; "
        f"{len(report.unchanged)} already imported" + ("; nothing written (dry run)" if dry_run else "")
    )
    for line in report.skipped:
        _say(f"skipped {line}", err=True)
    for line in report.warnings:
        _say(f"warning: {line}", err=True)


@cli.group("export")
def export_group() -> None:
    """Write decisions out in other formats."""


@export_group.command("adr")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Replace files and links ctx does not own.")
@_with_store
def export_adr(kernel: Ctx, folder: str, force: bool) -> None:
    """Write decisions and pending proposals as ADR files in FOLDER, and a README.md index.

    A file ctx imported is updated in place (same name and number, the team's text kept); a new
    decision gets the next free number in the folder's own naming and layout (Nygard or MADR). A
    file is replaced only if ctx owns it (it carries a ctx-id, or is unchanged since its import);
    any other file, or a link, refuses the export with nothing written, unless --force.
    """
    done = kernel.export_adrs(Path(folder), force=force)
    _say(f"wrote {len(done.written)} files to {folder}; {len(done.unchanged)} already up to date")
    for line in done.warnings:
        _say(f"warning: {line}", err=True)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/status.schema.json).")
@_with_store
def status(kernel: Ctx, as_json: bool) -> None:
    """Show the store at a glance: counts, the queue, vectors, encryption and the last verify."""
    found = kernel.status()
    if as_json:
        _emit_json(found.to_dict())
        return
    model = found.model
    if model.source == "disabled" or model.problem is not None:
        vectors = f"off: {model.problem}"
    else:
        where = f" ({model.folder})" if model.folder else ""
        proof = {True: ", files verified", False: ", not the pinned files", None: ""}[model.verified]
        vectors = f"{model.model} from {model.source}{where}{proof}"
        if found.vector_model and found.vector_model != model.model:
            vectors += f"; the store was embedded with {found.vector_model}: run `ctx reindex`"
    verify = found.last_verify
    if verify is None:
        verified = "never verified: run `ctx audit verify`"
    else:
        verdict = "ok" if verify.ok else f"FAILED: {verify.problem}"
        verified = f"last verified {verify.at[:19]}: {verdict} ({verify.rows} rows)"
    stale = f", {found.stale} stale (over a week)" if found.stale else ""
    for label, value in (
        ("store", f"{found.store} (schema {found.schema_version})"),
        ("evidence", f"{found.evidence} texts" + (", encrypted at rest" if found.encrypted else "")),
        ("kernel", f"{found.current_decisions} current decisions, {found.decisions} in all"),
        ("queue", f"{found.pending} pending{stale}" + ("  (ctx review)" if found.pending else "")),
        ("vectors", vectors),
        ("audit", verified),
    ):
        click.echo(f"{_colour(f'{label:<9}', 'bold')} {text.visible(value)}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schemas/doctor.schema.json).")
@_db_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, db_here: str | None) -> None:
    """Check the install and the store: its backend, the model, integrity, the audit log.

    The backend is the SQLite driver (it loads sqlite-vec), or for a server its version, its
    extensions and the role this login belongs to.

    Each failed check says what to do; exits 1 when any failed.
    """
    from ctx_kernel.kernel.status import doctor as run_checks  # noqa: PLC0415

    kernel, problem = None, None
    try:
        kernel = _open(db_here or ctx.find_root().obj.get("db"))
    except StoreError as exc:
        problem = exc.message
    try:
        report = run_checks(kernel, problem)
    finally:
        if kernel is not None:
            kernel.close()
    if as_json:
        _emit_json(report.to_dict())
    else:
        for check in report.checks:
            mark = _colour("ok  ", "green") if check.ok else _colour("FAIL", "red")
            click.echo(f"{mark} {check.name:<9} {text.visible(check.detail)}")
            if check.fix:
                _say(f"     {'':<9} fix: {check.fix}")
    if not report.ok:
        sys.exit(1)


@cli.command("schema")
@click.argument("name", required=False)
def schema_command(name: str | None) -> None:
    """Print the JSON Schema NAME (e.g. recall, propose-input); without NAME, list the names.

    Every --json output and JSON input of ctx is valid against one of these.
    """
    from ctx_kernel.kernel.contracts import schema_documents  # noqa: PLC0415 - pydantic only for this command

    documents = {filename.removesuffix(".schema.json"): doc for filename, doc in schema_documents().items()}
    if name is None:
        for known in sorted(documents):
            _say(known)
        return
    key = name.removesuffix(".json").removesuffix(".schema")
    if key not in documents:
        raise UsageError(f"no schema {name!r}: `ctx schema` lists them")
    _emit_json(documents[key])


@cli.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script for SHELL (commands, options, subjects, pending ids).

    bash: ctx completion bash >> ~/.bashrc; zsh: ctx completion zsh >> ~/.zshrc;
    fish: ctx completion fish > ~/.config/fish/completions/ctx.fish
    """
    from click.shell_completion import get_completion_class  # noqa: PLC0415

    found = get_completion_class(shell)
    assert found is not None
    click.echo(found(cli, {}, "ctx", "_CTX_COMPLETE").source())


@cli.command("path")
@_db_option
@click.pass_context
def path_command(ctx: click.Context, db_here: str | None) -> None:
    """Print the store this folder uses: its file, or its server URL without user or password.

    Exits 1 when there is none.
    """
    _say(paths.display_location(_locate(db_here or ctx.find_root().obj.get("db"))))


@cli.command("mcp")
@click.option(
    "--agent",
    envvar="CTX_AGENT",
    help="Proposer and evidence author when a call names none (default: CTX_AGENT, else mcp:CLIENT).",
)
@click.option(
    "--session", envvar="CTX_SESSION", help="Session id when a call names none (default: CTX_SESSION)."
)
@_db_option
@click.pass_context
def mcp_server(ctx: click.Context, agent: str | None, session: str | None, db_here: str | None) -> None:
    """Serve the store to an agent over MCP (stdio): log, propose, recall; no tool can ratify.

    Started where there is no store, it still serves: on the first call it looks in the client's
    MCP roots, and while it finds none every tool answers that there is no store and where it
    looked, so a client configured for every project connects everywhere. A store named by --db
    or CTX_DB is the only one served.
    """
    from ctx_kernel.kernel.hosts.mcp import serve  # noqa: PLC0415 - the MCP SDK takes over a second to import

    explicit = db_here or ctx.find_root().obj.get("db")
    named, origin = (explicit, "--db") if explicit else (os.environ.get("CTX_DB") or None, "CTX_DB")
    try:
        kernel = _open(explicit)
    except StoreError as exc:
        message = exc.message
        store = None if named is None or paths.url_scheme(named) else paths.location_file(named)
        if store is not None and not store.exists():
            create = f"ctx init --db {shlex.quote(str(store))}"
            message = f"no ctx store at {store} (named by {origin}): create it with `{create}`"
        _say(f"ctx mcp: {message}; every tool will say so", err=True)
        serve(None, agent=agent, session=session, missing=message, look_in_roots=named is None)
        return
    with kernel:
        _serve_store(kernel, agent, session)


def _serve_store(kernel: Ctx, agent: str | None, session: str | None) -> None:
    if sys.stdin.isatty():
        _say(
            f"ctx mcp: serving {kernel.location} over MCP on standard input; an MCP client starts "
            "this command (see the README). Ctrl+C stops it.",
            err=True,
        )
    from ctx_kernel.kernel.hosts.mcp import serve  # noqa: PLC0415 - the MCP SDK takes over a second to import

    serve(kernel, agent=agent, session=session)


def _run_review(kernel: Ctx, reviewer: str | None) -> None:
    from ctx_kernel.tui.app import make_app  # noqa: PLC0415 - Textual loads only for the app

    if kernel.login is not None:  # the database binds every act to the login
        make_app(kernel, kernel.actor(reviewer, kernel.login, "reviewer"), reviewer_confirmed=True).run()
        return
    name = reviewer or paths.configured_reviewer()
    make_app(kernel, name or getpass.getuser(), reviewer_confirmed=name is not None).run()


@cli.command()
@click.option("--reviewer", help="Your name (default: CTX_REVIEWER or config, else your login name).")
@_with_store
def review(kernel: Ctx, reviewer: str | None) -> None:
    """Open the review app: ratify or reject what agents proposed, browse decisions, evidence, audit."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("ctx review needs a terminal; in scripts use ctx queue, ctx ratify and ctx reject")
    _run_review(kernel, reviewer)


@cli.command()
@click.option(
    "--path",
    "folder",
    type=click.Path(file_okay=False),
    default="ctx-demo",
    show_default=True,
    help="Project folder for the demo store.",
)
@click.option("--no-review", is_flag=True, help="Print the tour only; do not open the review app.")
def demo(folder: str, no_review: bool) -> None:
    """Create a demo project with realistic decisions, evidence and proposals, then open the review app."""
    from ctx_kernel.kernel.demo import build_demo  # noqa: PLC0415

    kernel = build_demo(Path(folder))
    try:
        if not no_review and sys.stdin.isatty() and sys.stdout.isatty():
            _run_review(kernel, None)
            _say(f"demo store: {kernel.location}; reopen it with: cd {folder} && ctx review")
            return
        _say(f"demo store: {kernel.location}\n")
        _say("Current decisions:")
        for decision in kernel.decisions():
            _say("  " + _decision_line(decision).replace("\n", "\n  "))
        _say("\nHistory of auth.tokens:")
        for decision in kernel.history("auth.tokens"):
            _say("  " + _decision_line(decision).replace("\n", "\n  "))
        _say("\nPending proposals:")
        for proposal in kernel.queue():
            _say("  " + _proposal_line(proposal).replace("\n", "\n  "))
        question = "how do we keep users signed in?"
        found = kernel.recall(question, k=3)
        _say(f"\nRecall: {question!r} (vectors {found.vectors.state})")
        for hit in found.decisions:
            _say(f"  {hit.rank}. {hit.decision.subject}: {hit.decision.decision}")
            for related in [*hit.superseded, *hit.conflicts, *hit.pending]:
                _say(f"     ! {related.warning or related.relation}: {related.text}")
        for ev in found.evidence:
            _say(f"  evidence (unratified): {ev.snippet}")
        if found.vectors.note:
            _say(f"  note: {found.vectors.note}")
        report = kernel.verify_audit()
        _say(f"\naudit chain {'ok' if report.ok else 'BROKEN'}: {report.rows} rows")
        _say(f"\nTry: cd {folder} && ctx queue && ctx recall 'auth tokens' && ctx inject")
    finally:
        kernel.close()


def _fail(message: str, code: int) -> NoReturn:
    # The last guard: no error line ever shows a database password.
    _say(f"ctx: error: {paths.redact(message)}", err=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning every expected failure into one line on stderr."""
    try:
        code = cli.main(args=argv, prog_name="ctx", standalone_mode=False)
    except click.exceptions.Abort:
        _fail("aborted, nothing changed", 1)
    except click.exceptions.NoArgsIsHelpError as exc:
        _say(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(2)
    except click.UsageError as exc:
        hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
        _fail(exc.format_message().splitlines()[0] + hint, 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code)
    except CtxError as exc:
        _fail(exc.message.splitlines()[0], exc.exit_code)
    except driver.dbapi.DatabaseError as exc:  # a damaged page met in the middle of a command
        _fail(migrate.database_error(None, exc).message, 1)
    except KeyboardInterrupt:
        _fail("interrupted", 130)
    except BrokenPipeError:
        os._exit(0)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
