"""The MCP server: build it, give it a lifespan that owns the open engines, serve stdio.

The lifespan does no work up front (no sync, no model call), so ``initialize`` is answered at
once; engines are opened on first use, per repository, and closed when the server stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.logging import configure_logging

__all__ = ["AppContext", "EnginePool", "build_server", "main", "serve"]

INSTRUCTIONS = """\
NexusMem remembers what happened in a git repository: every commit and the patch of each
changed file, and the documentation's sections. Before you debug, change or explain code,
call search_memory with the question in plain words: it returns the most relevant history,
ranked and packed into a token budget. Call sync_project after new commits.
"""


@dataclass
class EnginePool:
    """Open engines by repository path, opened on first use, closed with the server."""

    settings: Settings
    stack: AsyncExitStack
    engines: dict[str, Engine] = field(default_factory=dict)
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def get(self, root: Path, *, create: bool = False) -> Engine:
        key = str(root.expanduser().resolve())
        async with self.lock:
            if key not in self.engines:
                engine = await self.stack.enter_async_context(
                    open_engine(self.settings, root, create=create)
                )
                self.engines[key] = engine
            return self.engines[key]


@dataclass
class AppContext:
    settings: Settings
    pool: EnginePool


def build_server(settings: Settings) -> MCPServer[AppContext]:
    """The server with its tools and resources; nothing is opened until it runs."""
    from . import tools
    from .hygiene import register_hygiene

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncIterator[AppContext]:
        async with AsyncExitStack() as stack:
            yield AppContext(settings=settings, pool=EnginePool(settings, stack))

    server: MCPServer[AppContext] = MCPServer(
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
    server = build_server(settings)
    # After the server exists: MCPServer configures stdlib logging in its constructor.
    configure_logging(settings.log_level)
    await server.run_stdio_async()


def main() -> None:
    settings = Settings.from_env()
    anyio.run(serve, settings)
