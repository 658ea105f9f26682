"""The MCP server: build it, give it a lifespan that owns the open engines, serve stdio.

The lifespan does no work up front (no sync, no model call), so ``initialize`` is answered at
once; engines are opened on first use, per repository, and closed when the server stops.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult
from pydantic import ValidationError

from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine, read_project
from nexusmem_core.errors import NexusMemError, NotInitialisedError, StoreError
from nexusmem_core.files import obstacle
from nexusmem_core.logging import configure_logging
from nexusmem_core.paths import DB_FILE, workspace_dir

from .errors import refused, said

__all__ = ["AppContext", "EnginePool", "NexusMemServer", "build_server", "main", "serve"]

INSTRUCTIONS = """\
NexusMem remembers what happened in a git repository: every commit and the patch of each
changed file, and the documentation's sections. Before you debug, change or explain code,
call search_memory with the question in plain words: it returns the most relevant history,
ranked and packed into a token budget. Call sync_project after new commits.
"""


@dataclass
class _Opened:
    engine: Engine
    stack: AsyncExitStack  # closes this engine alone
    file: tuple[int, int] | None  # (device, inode) of the database file when it was opened
    read_only: bool  # opened read-only: its file system would not take writes then


def _file_identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


@dataclass
class EnginePool:
    """Open engines by repository path, opened on first use, closed with the server.

    Before each use, the database file is checked to be the one the engine opened. A deleted
    file is still readable (and writable) through the open connection, but whatever is written
    there disappears with the last handle: so a deleted database closes its engine, and a
    read-only call says the memory was deleted, while ``sync_project`` builds a new one. A
    file put in its place is opened anew.

    A database that cannot be written (a read-only mount, a full disk) is opened read-only, so
    searches still answer; writes say why they cannot be made, and once they can, the engine
    is opened for writing again.
    """

    settings: Settings
    stack: AsyncExitStack
    engines: dict[str, _Opened] = field(default_factory=dict)
    deleted: dict[str, Path] = field(default_factory=dict)  # key -> the database that was
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def get(self, root: Path, *, create: bool = False) -> Engine:
        key = str(root.expanduser().resolve())
        async with self.lock:
            held = self.engines.get(key)
            if held is not None and self._stale(held, create):
                del self.engines[key]
                await held.stack.aclose()
                if not held.engine.db.path.exists():
                    self.deleted[key] = held.engine.db.path
            if key in self.deleted and not create:
                raise NotInitialisedError(
                    f"the memory database {self.deleted[key]} was deleted while the server "
                    "ran (with the reviews and forgotten values it held)"
                )
            if key not in self.engines:
                self.engines[key] = await self._open(root, create)
                self.deleted.pop(key, None)
            return self.engines[key].engine

    @staticmethod
    def _stale(held: _Opened, create: bool) -> bool:
        """Deleted or replaced; or read-only, when a write is asked for or could now be made."""
        if _file_identity(held.engine.db.path) != held.file:
            return True
        return held.read_only and (create or obstacle(held.engine.db.path) is None)

    async def _open(self, root: Path, create: bool) -> _Opened:
        stack = AsyncExitStack()
        try:
            engine = await stack.enter_async_context(
                open_engine(self.settings, root, create=create)
            )
            read_only = False
        except StoreError:
            path = workspace_dir((await read_project(root))[0].root) / DB_FILE
            if create or not path.is_file() or obstacle(path) is None:
                raise
            engine = await stack.enter_async_context(
                open_engine(self.settings, root, read_only=True)
            )
            read_only = True
        self.stack.push_async_callback(stack.aclose)  # idempotent: a closed stack is empty
        return _Opened(engine, stack, _file_identity(engine.db.path), read_only)


@dataclass
class AppContext:
    settings: Settings
    pool: EnginePool


class NexusMemServer(MCPServer[AppContext]):
    """An MCPServer whose failed tool calls say what went wrong in one line, in MCP's words.

    The SDK hides the text of any exception a tool raises but ToolError, and answers arguments
    that fail validation with pydantic's (several lines and a URL). Here, once for every tool,
    the project's errors are worded for the client and refused arguments named one by one.
    """

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[AppContext, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
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


def build_server(settings: Settings) -> NexusMemServer:
    """The server with its tools and resources; nothing is opened until it runs."""
    from . import tools
    from .hygiene import register_hygiene

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        async with AsyncExitStack() as stack:
            yield AppContext(settings=settings, pool=EnginePool(settings, stack))

    server = NexusMemServer(
        "nexusmem", instructions=INSTRUCTIONS, lifespan=lifespan, version=_version()
    )
    tools.register(server, settings)
    register_hygiene(server, settings)
    return server


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
    settings = Settings.from_env()
    anyio.run(serve, settings)
