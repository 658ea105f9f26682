"""MCP resources: the memory's status, stale candidates, the deny list, and one node.

A resource takes no ``project_root``: it reads the repository a tool called without one would,
the first of the client's roots in a git repository, else the server's working directory
(``roots.resource_path``). The SDK gives a fixed resource no context to ask the client with, so
the server hands each read its context (``reading``). Failures are MCP errors: a node that is
not there is -32002 (resource not found), an id that cannot be one -32602, and the rest say
what to do in the words of resources (no ``project_root`` to pass).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar, cast

from mcp.server.mcpserver import Context, ListRoots, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, ListRootsResult

from nexusmem_core import handlers
from nexusmem_core.errors import NexusMemError, UsageError
from nexusmem_core.textguard import json_safe

from .errors import said_to_reader
from .roots import resource_path
from .tools import flowing

if TYPE_CHECKING:
    from nexusmem_core.engine import Engine

    from .pool import AppContext

__all__ = ["RESOURCE_NOT_FOUND", "reading", "register_resources"]

RESOURCE_NOT_FOUND = -32002  # the code the protocol's resources page gives a missing resource

_F = TypeVar("_F", bound=Callable[..., Any])

# The context of the resources/read being served, set by ``NexusMemServer.read_resource``.
reading: ContextVar[Context[Any, Any] | None] = ContextVar("reading", default=None)


def register_resources(server: MCPServer[Any]) -> None:
    """Add NexusMem's resources to ``server``."""

    def resource(uri: str, title: str) -> Callable[[_F], _F]:
        def add(fn: _F) -> _F:
            description = flowing(fn.__doc__)
            return server.resource(
                uri, title=title, description=description, mime_type="application/json"
            )(fn)

        return add

    @resource("nexusmem://status", "Memory status")
    async def status() -> str:
        """What the repository's memory holds: node counts by kind, the date range, the last
        sync, and whether vector search is available."""
        async with _engine("nexusmem://status") as engine:
            found = await handlers.status(engine)
        return json.dumps(found.to_dict(), indent=2)

    @resource("nexusmem://stale", "Stale candidates")
    async def stale() -> str:
        """Claims that may be out of date (older than 45 days, nothing newer confirms them),
        the first 50, oldest first."""
        async with _engine("nexusmem://stale") as engine:
            report = await handlers.stale(engine, 45, 50)
        return json_safe(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))

    @resource("nexusmem://deny-list", "Deny list")
    async def deny_list() -> str:
        """What was forgotten, literal values and patterns masked (kind, length, reason,
        date only)."""
        async with _engine("nexusmem://deny-list") as engine:
            entries = await handlers.deny_list(engine, show_patterns=False)
        return json.dumps({"entries": entries}, indent=2, ensure_ascii=False)

    @resource("nexusmem://node/{node_id}", "Remembered node")
    async def node(node_id: str, ctx: Context) -> str:
        """One remembered node in full (its text, files, provenance, links and metadata), by
        the id search results and lists show (12 characters), the whole id, or a unique
        prefix of at least 4."""
        uri = f"nexusmem://node/{node_id}"
        async with _engine(uri, ctx) as engine:
            found = await handlers.node_detail(engine, node_id)
        if found is None:
            raise MCPError(
                RESOURCE_NOT_FOUND,
                f"no node {node_id} in the memory of {engine.repo.root}",
                {"uri": uri},
            )
        return json_safe(json.dumps(found, indent=2, ensure_ascii=False))


@asynccontextmanager
async def _engine(uri: str, ctx: Context[Any, Any] | None = None) -> AsyncIterator[Engine]:
    """The open engine of the repository a resource reads; the project's errors, here or in
    the body, as MCP errors."""
    ctx = ctx or reading.get()
    if ctx is None:  # read outside a request (MCPServer.read_resource called directly)
        raise MCPError(INTERNAL_ERROR, "resources are read within a request")
    app = cast("AppContext", ctx.request_context.lifespan_context)
    roots = await app.roots.of(ctx)
    if isinstance(roots, ListRoots):  # 2026-07-28: a resource read cannot ask for them
        roots = ListRootsResult(roots=[])
    try:
        yield await app.pool.get(await resource_path(roots))
    except ToolError as err:  # the roots hold no repository
        raise MCPError(INTERNAL_ERROR, str(err), {"uri": uri}) from err
    except UsageError as err:
        raise MCPError(INVALID_PARAMS, str(err), {"uri": uri}) from err
    except NexusMemError as err:
        raise MCPError(INTERNAL_ERROR, said_to_reader(err), {"uri": uri}) from err
