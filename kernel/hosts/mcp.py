"""``ctx mcp``: a Model Context Protocol server over stdio, a thin host over the facade.

Agents log evidence, propose decisions and read the kernel through it. No tool ratifies,
rejects, retires or edits a decision, or withdraws a proposal this server did not make: those
are a person's acts (``ctx review``, ``ctx ratify``). The CLI imports this module only inside
``ctx mcp``, because the SDK takes over a second to import.

Tool arguments are validated against the ``*-input`` models of :mod:`kernel.contracts` (their
JSON Schemas are the tools' input schemas). A result is compact text by default
(:mod:`kernel.hosts.mcp_text`); with ``format: "json"`` it is the CLI's ``--json`` object as
structured content. A refused call is a tool error carrying the CLI's one-line message.

Started where there is no store, the server asks the client for its roots on the first tool call
and serves the store it finds there; a store named by ``--db`` or ``CTX_DB`` is never replaced.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from functools import cache, partial
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import anyio
import anyio.to_thread
from mcp import MCPDeprecationWarning, types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError

from ctx_kernel.kernel import contracts, paths, text
from ctx_kernel.kernel.capture.json_input import JSONInputError, read_json
from ctx_kernel.kernel.errors import CtxError, StoreError
from ctx_kernel.kernel.facade import Ctx
from ctx_kernel.kernel.hosts import mcp_text
from ctx_kernel.kernel.hosts.operations import TOOLS, Caller, Operation

INSTRUCTIONS = """\
ctx holds this project's decisions, ratified by people, and an evidence vault of raw notes.
Call inject_context at the start of a session, and recall (or get_decision) before changing \
something a decision may cover: decisions marked superseded must not be applied, evidence is \
unratified. log_evidence keeps a fact worth remembering; propose_decision queues a decision \
for a person to ratify. A decision marked "may be stale" governs code that changed: check it, then \
propose a replacement, or propose_decision with reconfirms (and your reasons and evidence) to ask a \
person to re-confirm it. No tool can ratify, reject, retire or re-confirm: only a person does. \
Results are compact text (ids or handles, one line each, warnings): recall and search answer with an \
index, timeline tells what came before and after a handle, show expands an id, a handle or a unique \
prefix, and format "json" returns the full object."""

# Seconds to let the model finish loading at shutdown, so no thread is killed mid-import.
WARM_JOIN_SECONDS = 30
# What every tool answers when there is no store to serve (and none in the client's roots).
NO_STORE = "no ctx store here: run `ctx init`"
# Seconds to wait for the client's answer to roots/list before serving without a store.
ROOTS_TIMEOUT_SECONDS = 10


class Host:
    """One open store served to one MCP client; facade calls run one at a time on a worker thread."""

    def __init__(self, ctx: Ctx, *, agent: str | None = None, session: str | None = None) -> None:
        self.ctx = ctx
        self.agent = agent
        self.session = session
        # Read once here: on a server a query, which the tool threads then need not make.
        self.login = ctx.login
        self._warm_thread: threading.Thread | None = None

    def caller(self, client_name: str | None) -> Caller:
        """The default name: ``--agent`` / ``CTX_AGENT``, else ``mcp:`` and the client's own name."""
        name = self.agent or (f"mcp:{client_name}" if client_name else "mcp")
        if self.login is not None:  # on a server every act is the login's (the database checks)
            name = self.ctx.actor(self.agent, self.login, "agent")
        return Caller(name[: text.MAX_NAME_CHARS], self.session, via="mcp")

    def start_warming(self) -> None:
        """Load the embedding model in the background, so the first recall does not wait for it."""
        self._warm_thread = threading.Thread(target=self._warm, name="ctx-warm", daemon=True)
        self._warm_thread.start()

    def _warm(self) -> None:
        try:
            self.ctx.warm()
        except Exception as exc:  # recall reports vectors off on its own; say why here too
            print(f"ctx mcp: could not load the embedding model: {exc}", file=sys.stderr)

    def stop_warming(self) -> None:
        """Wait for the model to finish loading (an interpreter exiting mid-import can crash)."""
        if self._warm_thread is not None:
            self._warm_thread.join(WARM_JOIN_SECONDS)

    def call(self, operation: Operation, arguments: BaseModel, caller: Caller) -> dict[str, Any]:
        """Run a tool on this store: its JSON answer, valid against the operation's result schema."""
        return self.serve(operation, arguments, caller)[0]

    def serve(
        self, operation: Operation, arguments: BaseModel, caller: Caller
    ) -> tuple[dict[str, Any], str | None]:
        """Run a tool and, for a tool that reads, record what it served (``ctx audit served``):
        its JSON answer, and the line it carries when the record could not be written."""
        args = operation.arguments(**arguments.model_dump(exclude={"format"}))
        result = operation.run(self.ctx, args, caller)
        note = None
        if operation.tool is not None and not operation.tool.writes:
            note = self.ctx.served.record(
                host=caller.via,
                agent=caller.name,
                session=caller.session,
                operation=operation.name,
                arguments=args,
                result=result,
            )
        return operation.answer(args, result), note

    def respond(self, operation: Operation, arguments: BaseModel, caller: Caller) -> types.CallToolResult:
        """Run a tool, record what it served, and shape its answer; an index names its records by
        handle (one store query)."""
        data, note = self.serve(operation, arguments, caller)
        output = getattr(arguments, "format", "text")
        index = mcp_text.INDEXES.get(operation.result)
        if output == "text" and index is not None:
            shown = index(data, self.ctx.handles(mcp_text.index_ids(data)))
            result = types.CallToolResult(content=[types.TextContent(type="text", text=shown)])
        else:
            result = result_for(operation, data, output)
        if note is not None:  # the served log could not record this answer: say so, still answer
            result.content.append(types.TextContent(type="text", text=f"ctx: note: {note}"))
        return result


UNKNOWN_TOOL_HINT = (
    "ratifying, rejecting and retiring decisions are a person's acts, and so is re-confirming one "
    "(ctx review, or ctx ratify and ctx reconfirm in a shell); this server's tools are "
)


@cache
def _schemas() -> dict[str, dict[str, Any]]:
    return contracts.schema_documents()


def tool_definitions() -> list[types.Tool]:
    """Every tool as ``tools/list`` describes it, with its input schema from ``schemas/``.

    No tool declares an output schema: a client must then find structured content in every
    result, and the default text form carries none (clients that get both show the structured
    content, which would defeat the short text). ``format: "json"`` returns structured content
    valid against ``schemas/<result>.schema.json``, named in the description.
    """
    documents = _schemas()
    tools = []
    for operation in TOOLS.values():
        tool = operation.tool
        assert tool is not None  # TOOLS holds the operations the server offers
        schema = contracts.tool_input_schema(operation.arguments)
        tools.append(
            types.Tool(
                name=tool.name,
                title=tool.title,
                description=f"{tool.description} Compact text by default; format json returns the object "
                f"of schemas/{operation.result}.schema.json.",
                input_schema=documents[f"{schema}.schema.json"],
                annotations=types.ToolAnnotations(
                    title=tool.title,
                    read_only_hint=not tool.writes,
                    destructive_hint=False,
                    idempotent_hint=tool.idempotent,
                    open_world_hint=False,
                ),
            )
        )
    return tools


def tool_error(message: str) -> types.CallToolResult:
    """A refused call: the one-line message the CLI prints after ``ctx: error:``."""
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


class ToolArgumentError(Exception):
    """Arguments that do not match the tool's input schema."""


def _integral_floats_as_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _integral_floats_as_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral_floats_as_ints(item) for item in value]
    return value


def parse_arguments(operation: Operation, arguments: dict[str, Any] | None) -> BaseModel:
    """The call's arguments as the tool's input model, or a one-line ToolArgumentError."""
    try:
        # Strict JSON validation accepts what the schema accepts: no "5" for an integer. JSON
        # Schema counts 5.0 as an integer, and strict pydantic does not, so integral floats go in
        # as ints (a number field takes an int as well).
        document = json.dumps(_integral_floats_as_ints(arguments or {}))
        return contracts.TOOL_INPUTS[operation.arguments].model_validate_json(document, strict=True)
    except ValidationError as exc:
        name = operation.tool.name if operation.tool is not None else operation.name
        raise ToolArgumentError(f"invalid arguments for {name}: {contracts.first_problem(exc)}") from None


def _client_name(context: ServerRequestContext[Any]) -> str | None:
    params = context.session.client_params
    return params.client_info.name if params is not None and params.client_info is not None else None


def result_for(operation: Operation, data: dict[str, Any], output: str) -> types.CallToolResult:
    """A tool's answer: the compact text alone, or the JSON as text and as structured content."""
    if output == "text":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=mcp_text.RENDERERS[operation.result](data))]
        )
    # The Markdown block is what an agent reads at session start; the JSON is in structuredContent.
    shown = data["markdown"] if operation.result == "inject" else json.dumps(data, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=shown)], structured_content=data)


def root_folders(roots: types.ListRootsResult) -> list[Path]:
    """The local folders among the client's roots (``file://`` URIs), in the client's order."""
    folders = []
    for root in roots.roots:
        url = urlparse(str(root.uri))
        if url.scheme == "file" and url.netloc in ("", "localhost"):
            folders.append(Path(url2pathname(unquote(url.path))))
    return folders


class Stores:
    """The server's store: opened at start, found later in the client's roots, or missing.

    ``find`` is None when ``--db`` or ``CTX_DB`` named the store: the roots are then never asked.
    """

    def __init__(
        self,
        host: Host | None,
        missing: str,
        find: Callable[[list[Path]], Host | None] | None = None,
    ) -> None:
        self.host = host
        self.missing = missing
        self._find = find
        self._lock = anyio.Lock()

    async def current(
        self, context: ServerRequestContext[Any], limiter: anyio.CapacityLimiter
    ) -> Host | None:
        """The host to serve this call, asking the client for its roots once when there is none."""
        async with self._lock:
            if self.host is not None or self._find is None:
                return self.host
            find, self._find = self._find, None
            folders = await _client_roots(context)
            if folders:
                self.host = await anyio.to_thread.run_sync(find, folders, limiter=limiter)
                if self.host is None:
                    shown = ", ".join(str(folder) for folder in folders)
                    self.missing = f"{self.missing.rstrip('.')}; none in the client's roots either ({shown})"
            return self.host


async def _client_roots(context: ServerRequestContext[Any]) -> list[Path]:
    """The client's root folders, or none when it has no roots capability or does not answer."""
    if not context.session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability())):
        return []
    with anyio.move_on_after(ROOTS_TIMEOUT_SECONDS):
        try:
            # The 2026-07-28 protocol revision deprecates roots; clients that declare the
            # capability speak an earlier one, where roots are how they name their projects.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                return root_folders(await context.session.list_roots())
        except Exception as exc:  # an error reply or a closed back channel: serve without a store
            print(f"ctx mcp: the client's roots could not be read: {exc}", file=sys.stderr)
    return []


def make_server(
    host: Host | None,
    *,
    missing: str = NO_STORE,
    find: Callable[[list[Path]], Host | None] | None = None,
) -> tuple[Server[Any], Stores]:
    """The MCP server for ``host``: lists the tools and runs each call on one worker thread.

    Without a host (no store where the client started it) the first call looks in the client's
    roots with ``find``; while there is still none every tool answers ``missing``, so a client
    configured for every folder connects and the agent reads why nothing is there.
    """
    # One facade call at a time: the store is one SQLite connection (and one transaction state).
    limiter = anyio.CapacityLimiter(1)
    stores = Stores(host, missing, find)

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_definitions())

    async def call_tool(
        context: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        operation = TOOLS.get(params.name)
        if operation is None:
            return tool_error(f"unknown tool {params.name!r}: {UNKNOWN_TOOL_HINT}{', '.join(TOOLS)}")
        try:
            arguments = parse_arguments(operation, params.arguments)
            serving = await stores.current(context, limiter)
            if serving is None:
                return tool_error(stores.missing)
            caller = serving.caller(_client_name(context))
            return await anyio.to_thread.run_sync(
                partial(serving.respond, operation, arguments, caller), limiter=limiter
            )
        except ToolArgumentError as exc:
            return tool_error(str(exc))
        except CtxError as exc:
            return tool_error(exc.message.splitlines()[0])
        except Exception as exc:
            # A bug, not bad input: keep serving, report it in one line, the traceback on stderr.
            traceback.print_exc(file=sys.stderr)
            return tool_error(f"internal error: {type(exc).__name__}: {exc}".splitlines()[0])

    server = Server(
        "ctx",
        version=version("ctx-kernel"),
        title="ctx decision kernel",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
    return server, stores


def unreadable_reply(error: Exception) -> types.JSONRPCError:
    """The JSON-RPC error that answers a line the SDK could not read as a message.

    The id is the request's when the line is JSON with an id (a lone surrogate escape, say, which
    the SDK's parser refuses), else null, as JSON-RPC 2.0 says for a message whose id is unknown.
    """
    problems = error.errors() if isinstance(error, ValidationError) else []
    parse_failed = not problems or any(p["type"] == "json_invalid" for p in problems)
    if not problems:
        reason = f"{type(error).__name__}: {error}"
    elif parse_failed or not problems[0]["loc"]:
        reason = problems[0]["msg"]
    else:
        reason = f"{problems[0]['loc'][-1]}: {problems[0]['msg']}"
    document = problems[0].get("input") if problems else None
    if isinstance(document, str | bytes):
        try:
            document = read_json(document)
        except JSONInputError:
            document = None
        else:
            try:
                json.dumps(document, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                reason += " (a \\u escape of half a surrogate pair is not Unicode text)"
    request_id = document.get("id") if isinstance(document, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    code, label = (
        (types.PARSE_ERROR, "Parse error") if parse_failed else (types.INVALID_REQUEST, "Invalid request")
    )
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=types.ErrorData(code=code, message=f"{label}: {reason}".splitlines()[0]),
    )


class _AnswerUnreadable:
    """The stdio read stream, answering each line the SDK could not read with a JSON-RPC error.

    The SDK passes such a line to the server as an exception, which the server only logs: the
    client would wait for a reply that never comes.
    """

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream

    @property
    def last_context(self) -> Any:
        """The sender context of the last message, as the SDK's context-aware streams keep it."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        """The next message that parsed; the others are answered on the way."""
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            try:
                reply = unreadable_reply(item)
            except Exception as exc:  # whatever the line held, it gets an answer and the server goes on
                error = types.ErrorData(code=types.PARSE_ERROR, message=f"Parse error: {type(exc).__name__}")
                reply = types.JSONRPCError(jsonrpc="2.0", id=None, error=error)
            await self._write.send(SessionMessage(reply))

    async def aclose(self) -> None:
        """Close the underlying stream."""
        await self._inner.aclose()

    def __aiter__(self) -> _AnswerUnreadable:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _AnswerUnreadable:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


def serve(
    ctx: Ctx | None,
    *,
    agent: str | None = None,
    session: str | None = None,
    missing: str = "",
    look_in_roots: bool = False,
) -> None:
    """Serve MCP over standard input and output until the client closes them.

    With no store (``ctx`` None) every tool answers ``missing``; with ``look_in_roots`` the
    first call first looks for a store in the client's roots and serves it if there is one.
    """
    host = Host(ctx, agent=agent, session=session) if ctx is not None else None
    if host is not None:
        host.start_warming()
    opened: list[Host] = []

    def find(folders: list[Path]) -> Host | None:
        for folder in folders:
            try:
                found = Ctx.open(paths.find_store(None, folder))
            except paths.UnapprovedStoreError as exc:
                print(f"ctx mcp: {exc.message}", file=sys.stderr)
                continue
            except StoreError:
                continue
            print(f"ctx mcp: serving {found.location}, found in the client's root {folder}", file=sys.stderr)
            opened.append(Host(found, agent=agent, session=session))
            opened[-1].start_warming()
            return opened[-1]
        return None

    server, _stores = make_server(host, missing=missing or NO_STORE, find=find if look_in_roots else None)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(
                _AnswerUnreadable(read_stream, write_stream),
                write_stream,
                server.create_initialization_options(),
            )

    try:
        anyio.run(run)
    finally:
        if host is not None:
            host.stop_warming()
        for found_host in opened:
            found_host.stop_warming()
            found_host.ctx.close()
