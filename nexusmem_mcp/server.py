"""The MCP server: build it, give it a lifespan that owns the open engines, serve stdio.

The lifespan does no work up front (no sync, no model call), so ``initialize`` is answered at
once; engines are opened on first use, per repository, and closed when the server stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    InputRequiredResult,
    NotificationParams,
    SetLevelRequestParams,
)
from pydantic import ValidationError

from nexusmem_core.config import settings_from_env
from nexusmem_core.errors import NexusMemError
from nexusmem_core.logging import configure_logging

from .errors import refused, said
from .notify import LogLevels
from .pool import AppContext, EnginePool
from .resources import RESOURCE_NOT_FOUND, reading
from .roots import ROOTS_TIMEOUT, ClientRoots

if TYPE_CHECKING:
    from nexusmem_core.config import Settings

__all__ = ["AppContext", "EnginePool", "NexusMemServer", "build_server", "main", "serve"]

INSTRUCTIONS = """\
NexusMem remembers what happened in a git repository: every commit and the patch of each
changed file, and the documentation's sections. Before you debug, change or explain code,
call search_memory with the question in plain words: it returns the most relevant history,
ranked and packed into a token budget. Call sync_project after new commits.
"""


class NexusMemServer(MCPServer[AppContext]):
    """An MCPServer whose failed tool calls say what went wrong in one line, in MCP's words.

    The SDK hides the text of any exception a tool raises but ToolError, and answers arguments
    that fail validation with pydantic's (several lines and a URL). Here, once for every tool,
    the project's errors are worded for the client and refused arguments named one by one.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[AppContext, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self._tool_manager.get_tool(name) is None:  # the protocol's code, not a tool result
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as err:
            cause = err.__cause__
            if isinstance(cause, NexusMemError):
                raise ToolError(f"Error executing tool {name}: {said(cause)}") from cause
            # Arguments are validated before the tool runs, and refused as a ToolError; a
            # ValidationError under an UnexpectedToolError is a result that broke its schema.
            if isinstance(cause, ValidationError) and not isinstance(err, UnexpectedToolError):
                schema = next(t.input_schema for t in await self.list_tools() if t.name == name)
                raise ToolError(f"Error executing tool {name}: {refused(cause, schema)}") from cause
            raise

    async def read_resource(
        self, uri: Any, context: Context[AppContext, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        # A fixed resource gets no context from the SDK; ours need it to ask for the roots.
        token = reading.set(context)
        try:
            return await super().read_resource(uri, context)
        except ResourceNotFoundError as err:  # the SDK says -32602; the protocol, -32002
            raise MCPError(RESOURCE_NOT_FOUND, str(err), {"uri": str(uri)}) from err
        finally:
            reading.reset(token)


def build_server(settings: Settings, *, roots_timeout: float = ROOTS_TIMEOUT) -> NexusMemServer:
    """The server with its tools and resources; nothing is opened until it runs.
    ``roots_timeout``: how long a client has to answer ``roots/list`` (``roots``)."""
    from . import tools
    from .hygiene import register_hygiene
    from .resources import register_resources

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        async with AsyncExitStack() as stack:
            pool = EnginePool(settings, stack)
            roots = ClientRoots(roots_timeout)
            yield AppContext(settings=settings, pool=pool, roots=roots, log_levels=log_levels)

    log_levels = LogLevels()
    server = NexusMemServer(
        "nexusmem", instructions=INSTRUCTIONS, lifespan=lifespan, version=_version()
    )
    tools.register(server, settings)
    register_hygiene(server, settings)
    register_resources(server)
    # No prompts: unregistered, prompts/list and prompts/get are "method not found" (-32601)
    # and the capability is not declared.
    for method in ("prompts/list", "prompts/get"):
        server._lowlevel_server._request_handlers.pop(method, None)
    # Registered here rather than in the constructor, which warns that roots are deprecated
    # in 2026-07-28: clients of the protocol versions before it still send this notification.
    server._lowlevel_server.add_notification_handler(
        "notifications/roots/list_changed", NotificationParams, _roots_changed
    )
    # Declares the logging capability: warnings reach the client as notifications/message
    # (notify.py). Added here, as the roots notification is: the constructor's way warns.
    server._lowlevel_server.add_request_handler(
        "logging/setLevel", SetLevelRequestParams, log_levels.set_level
    )
    return server


async def _roots_changed(ctx: Any, _: NotificationParams) -> None:
    app = cast(AppContext, ctx.lifespan_context)
    app.roots.changed(ctx.session)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nexusmem")
    except PackageNotFoundError:
        return "0+unknown"


async def serve(settings: Settings) -> None:
    """Serve MCP over stdio until the client goes away."""
    from nexusmem_core.store import sketches

    from .stdio import serve_stdio

    server = build_server(settings)
    # After the server exists: MCPServer configures stdlib logging in its constructor.
    configure_logging(settings.log_level)
    sketches.keep_warm()  # a server answers many searches: stale sign pages are read anyway
    await serve_stdio(server)  # not run_stdio_async: it leaves some requests unanswered


def main() -> None:
    settings = settings_from_env()
    anyio.run(serve, settings)
