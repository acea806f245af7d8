"""Drive `ctx mcp` processes with the MCP SDK's own stdio client, from synchronous tests."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client, types

CTX = str(Path(sys.executable).parent / "ctx")
CLIENT = types.Implementation(name="pytest-agent", version="1.0")


def server_params(db: Path, env: dict[str, str], *extra: str) -> StdioServerParameters:
    """Start the installed console script, as an MCP client configured with `ctx mcp` would."""
    return StdioServerParameters(command=CTX, args=["mcp", "--db", str(db), *extra], env=env)


def roots_callback(folders: list[Path]) -> Any:
    """A client's ``roots/list`` handler answering with these folders as ``file://`` roots."""

    async def list_roots(_context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[types.Root(uri=folder.as_uri(), name=folder.name) for folder in folders]
        )

    return list_roots


@asynccontextmanager
async def connect(
    params: StdioServerParameters, errlog: TextIO, roots: list[Path] | None = None
) -> AsyncIterator[ClientSession]:
    """A started server and an initialised client session to it; with ``roots``, a client that has them."""
    callback = roots_callback(roots) if roots is not None else None
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write, client_info=CLIENT, list_roots_callback=callback) as session,
    ):
        await session.initialize()
        yield session


class Agent:
    """One `ctx mcp` process and a client session to it, run on a portal's event loop thread."""

    def __init__(
        self, params: StdioServerParameters, errlog: TextIO, roots: list[Path] | None = None
    ) -> None:
        self._params = params
        self._errlog = errlog
        self._roots = roots
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._session_cm: AbstractContextManager[ClientSession] | None = None
        self.portal: BlockingPortal
        self.session: ClientSession

    def __enter__(self) -> Agent:
        self._portal_cm = start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        # The session enters and exits in one task on the portal's loop, as anyio requires.
        self._session_cm = self.portal.wrap_async_context_manager(
            connect(self._params, self._errlog, self._roots)
        )
        self.session = self._session_cm.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._session_cm is not None and self._portal_cm is not None
        try:
            self._session_cm.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def tools(self) -> list[types.Tool]:
        """``tools/list``."""
        return self.portal.call(self.session.list_tools).tools

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        """``tools/call``; the SDK checks a successful result against the tool's output schema."""
        result = self.portal.call(self.session.call_tool, name, arguments)
        assert isinstance(result, types.CallToolResult)
        return result

    def call_json(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        """``tools/call`` asking for the JSON form (structured content and the JSON as text)."""
        return self.call(name, {**(arguments or {}), "format": "json"})


def text_of(result: types.CallToolResult) -> str:
    """A successful text-form result: one text block and no structured content."""
    assert not result.is_error, result.content
    assert result.structured_content is None
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


def error_text(result: types.CallToolResult) -> str:
    """The one line of a tool error."""
    assert result.is_error, f"expected a tool error, got {result.structured_content!r}"
    assert result.structured_content is None
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    text = result.content[0].text
    assert text and "\n" not in text and "Traceback" not in text, text
    return text
