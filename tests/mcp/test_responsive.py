"""While a search runs, the server stays the client's: it answers ``ping``, serves other calls,
and a ``notifications/cancelled`` for the search stops the server waiting for it.

The search is made to block where a hostile question used to hold the server (the parse of its
text), on an event the test releases: no timing decides what happens first.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.retrieval import search as pipeline
from nexusmem_mcp.server import build_server

from ..conftest import Repo
from .wire import INITIALIZE, INITIALIZED, spawned, tool_call

# A hang guard, not a speed test: a step that never comes fails the test instead of hanging it.
HANG = 60
# Long enough to be parsed off the event loop (pipeline.PARSED_HERE), as a pasted log is.
STUCK = "stuck retry budget " + "x" * pipeline.PARSED_HERE


class StuckParse:
    """``parse_query`` that blocks on ``release`` for the question ``STUCK`` alone."""

    def __init__(self) -> None:
        self.real = pipeline.parse_query
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def __call__(self, text: str) -> Any:
        if text == STUCK:
            self.entered.set()
            self.release.wait(HANG)
            self.finished.set()
        return self.real(text)


@pytest.fixture
def stuck(monkeypatch: pytest.MonkeyPatch) -> StuckParse:
    parse = StuckParse()
    monkeypatch.setattr(pipeline, "parse_query", parse)
    return parse


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> dict[str, anyio.Event]:
    """An event per question, set when the server's search for it is over, however it ended."""
    events: dict[str, anyio.Event] = {}
    real = handlers.search

    async def watched(engine: Any, query: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return await real(engine, query, *args, **kwargs)
        finally:
            events.setdefault(query, anyio.Event()).set()

    monkeypatch.setattr(handlers, "search", watched)
    return events


# Clients on the stdio protocol (2025-06-18) ping; the SDK warns that the newest one has none.
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_running_search_leaves_ping_and_other_calls_answered_and_can_be_cancelled(
    settings: Settings, repo: Repo, stuck: StuckParse, settled: dict[str, anyio.Event]
):
    root = str(repo.path)
    async with Client(build_server(settings), mode="legacy") as client:
        assert not (await client.call_tool("sync_project", {"project_root": root})).is_error
        answered: list[Any] = []
        done = settled.setdefault(STUCK, anyio.Event())

        async def ask() -> None:
            arguments = {"query": STUCK, "project_root": root, "vector": False}
            answered.append(await client.call_tool("search_memory", arguments))

        with anyio.fail_after(HANG):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                assert await anyio.to_thread.run_sync(stuck.entered.wait, HANG)
                await client.send_ping()
                other = await client.call_tool(
                    "search_memory", {"query": "retry budget", "project_root": root}
                )
                assert not stuck.finished.is_set() and not answered  # still running
                tg.cancel_scope.cancel()  # the client sends notifications/cancelled
            await done.wait()  # the server stopped waiting for it...
            assert not stuck.finished.is_set()  # ...while its parse is still stuck
            after = await client.call_tool(
                "search_memory", {"query": "retry budget", "project_root": root}
            )
        stuck.release.set()
    assert not answered
    for result in (other, after):
        assert not result.is_error and "fix: raise the retry budget" in result.content[0].text


PING = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}'
CANCEL = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}'

# The server as a client launches it, with the parse of a question that starts "stuck " made
# to block until the test writes to a FIFO: the one change a subprocess can be given.
SERVE_STUCK = """
import sys
from nexusmem_core.retrieval import search as pipeline
real = pipeline.parse_query
def stuck(text):
    if text.startswith("stuck "):
        with open(sys.argv[1]) as fifo:
            fifo.read()
    return real(text)
pipeline.parse_query = stuck
from nexusmem_mcp.server import main
main()
"""


async def test_over_stdio_a_blocked_search_leaves_ping_and_other_calls_answered(
    repo: Repo, home: Path, tmp_path: Path
):
    release = tmp_path / "release"
    os.mkfifo(release)
    seen: list[dict[str, Any]] = []

    async def until(request_id: int) -> dict[str, Any]:
        while not any(m.get("id") == request_id and "method" not in m for m in seen):
            seen.append(json.loads(await wire.stdout.receive_until(b"\n", 1 << 24)))
        return next(m for m in seen if m.get("id") == request_id and "method" not in m)

    argv = [sys.executable, "-c", SERVE_STUCK, str(release)]
    async with spawned(argv, repo.path, home) as wire:
        with anyio.fail_after(HANG):
            await wire.send(INITIALIZE)
            await until(1)
            await wire.send(INITIALIZED)
            await wire.send(tool_call(2, "sync_project", b"{}"))
            assert "result" in await until(2)
            arguments = json.dumps({"query": STUCK})
            await wire.send(tool_call(3, "search_memory", arguments.encode()))
            await wire.send(PING % 4)
            await wire.send(tool_call(5, "search_memory", b'{"query": "retry budget"}'))
            assert (await until(4))["result"] == {}
            assert "fix: raise the retry budget" in json.dumps(await until(5))
            await wire.send(CANCEL % 3)
            await wire.send(PING % 6)
            await until(6)
            await anyio.to_thread.run_sync(release.write_text, "")  # the parse goes on
            await wire.send(PING % 7)
            await until(7)
    assert not [m for m in seen if m.get("id") == 3]  # a cancelled request is never answered
