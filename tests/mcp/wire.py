"""Raw JSON-RPC lines to and from a ``python -m nexusmem_mcp`` process, with no SDK between:
the stdio tests send what no SDK client would, and bench/ times the server without the
client's own imports in the way."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["INITIALIZE", "INITIALIZED", "INITIALIZE_WITH_ROOTS", "Wire", "spawned", "tool_call"]

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}'
)
# A client of the protocol before 2026-07-28 that offers roots: the server asks it for them.
INITIALIZE_WITH_ROOTS = INITIALIZE.replace(b'"capabilities":{}', b'"capabilities":{"roots":{}}')
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def tool_call(request_id: int, tool: str, arguments: bytes) -> bytes:
    """A ``tools/call`` request line; ``arguments`` is the JSON object as bytes."""
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
        % (request_id, tool.encode(), arguments)
    )


class Wire:
    """Raw JSON-RPC lines to and from a server process, with nothing between."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.stdin = process.stdin
        self.stdout = BufferedByteReceiveStream(process.stdout)

    async def send(self, line: bytes) -> None:
        await self.stdin.send(line + b"\n")

    async def reply(self, request_id: object) -> dict[str, Any]:
        """The reply to ``request_id``, skipping anything the server sends before it."""
        while True:
            message = await self.receive()
            if "method" not in message and message.get("id") == request_id:
                return message

    async def request(self, method: str) -> dict[str, Any]:
        """The next request (or notification) for ``method`` the server sends, skipping the
        rest."""
        while True:
            message = await self.receive()
            if message.get("method") == method:
                return message

    async def receive(self) -> dict[str, Any]:
        """The next message the server sends."""
        message: dict[str, Any] = json.loads(await self.stdout.receive_until(b"\n", 1 << 24))
        return message


@asynccontextmanager
async def spawned(argv: list[str], cwd: Path, home: Path) -> AsyncIterator[Wire]:
    """A server process started in ``cwd`` with ``NEXUSMEM_HOME=home`` (its stderr in
    ``home/server.log``), not yet initialised. Left by an exception, it is killed: a server
    that never answered may never read its EOF either; left normally, its stdin is closed."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "server.log", "wb") as log:
        process = await anyio.open_process(
            argv, cwd=cwd, env={**os.environ, "NEXUSMEM_HOME": str(home)}, stderr=log
        )
    async with process:
        try:
            yield Wire(process)
        except BaseException:
            process.kill()
            raise
        assert process.stdin is not None
        await process.stdin.aclose()
