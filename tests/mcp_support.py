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


@asynccontextmanager
async def connect(params: StdioServerParameters, errlog: TextIO) -> AsyncIterator[ClientSession]:
    """A started server and an initialised client session to it."""
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write, client_info=CLIENT) as session,
    ):
        await session.initialize()
        yield session


class Agent:
    """One `ctx mcp` process and a client session to it, run on a portal's event loop thread."""

    def __init__(self, params: StdioServerParameters, errlog: TextIO) -> None:
        self._params = params
        self._errlog = errlog
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._session_cm: AbstractContextManager[ClientSession] | None = None
        self.portal: BlockingPortal
        self.session: ClientSession

    def __enter__(self) -> Agent:
        self._portal_cm = start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        # The session enters and exits in one task on the portal's loop, as anyio requires.
        self._session_cm = self.portal.wrap_async_context_manager(connect(self._params, self._errlog))
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


def error_text(result: types.CallToolResult) -> str:
    """The one line of a tool error."""
    assert result.is_error, f"expected a tool error, got {result.structured_content!r}"
    assert result.structured_content is None
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    text = result.content[0].text
    assert text and "\n" not in text and "Traceback" not in text, text
    return text
