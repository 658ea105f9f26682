"""The open engines of a long-running process (the MCP server, the web viewer), by repository:
each opened on first use and closed with the process.
"""

from __future__ import annotations

import os
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from .engine import Engine, open_engine, read_project
from .errors import NotInitialisedError, StoreError
from .files import obstacle
from .paths import DB_FILE, workspace_dir

if TYPE_CHECKING:
    from .config import Settings

__all__ = ["EnginePool"]


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
            path = workspace_dir((await read_project(self.settings, root))[0].root) / DB_FILE
            if create or not path.is_file() or obstacle(path) is None:
                raise
            engine = await stack.enter_async_context(
                open_engine(self.settings, root, read_only=True)
            )
            read_only = True
        self.stack.push_async_callback(stack.aclose)  # idempotent: a closed stack is empty
        return _Opened(engine, stack, _file_identity(engine.db.path), read_only)
