"""A viewer served for real: uvicorn on a free loopback port, in the test's event loop, over the
memory of a real repository synced into a real database."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import pytest

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.viewer.guard import RULES
from nexusmem_core.viewer.server import serve

from ..conftest import Repo


@dataclass
class Served:
    url: str  # with the launch's token
    base: str  # http://127.0.0.1:<port>
    token: str
    root: Path

    def client(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base, timeout=10, **kwargs)

    @asynccontextmanager
    async def signed_in(self) -> AsyncIterator[httpx.AsyncClient]:
        """A client holding the cookie, as the browser does after opening the URL."""
        async with self.client() as client:
            answer = await client.get(self.url)
            assert answer.status_code == 303, answer.text
            yield client


async def synced(settings: Settings, repo: Repo) -> None:
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)


@contextmanager
def serving(settings: Settings, root: Path, rules: frozenset[str] = RULES) -> Iterator[Served]:
    """``nexusmem ui`` in a thread of its own, with its own event loop, as a user's would be;
    stopped (every connection closed) on leaving."""
    found: list[str] = []
    failed: list[BaseException] = []
    done = threading.Event()

    async def main() -> None:
        stop = anyio.Event()

        async def watch() -> None:
            while not done.is_set():
                await anyio.sleep(0.02)
            stop.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            await serve(
                settings,
                root,
                port=0,
                open_browser=False,
                ready=found.append,
                rules=rules,
                stop=stop,
            )
            tasks.cancel_scope.cancel()

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as err:  # shown by the test that waits for the server
            failed.append(err)

    thread = threading.Thread(target=run, name="viewer", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not found and not failed and time.monotonic() < deadline:
        time.sleep(0.01)
    if failed:
        raise failed[0]
    assert found, "the viewer did not start within 20 s"
    parts = urlsplit(found[0])
    token = parse_qs(parts.query)["token"][0]
    try:
        yield Served(found[0], f"{parts.scheme}://{parts.netloc}", token, root)
    finally:
        done.set()
        thread.join(20)
        assert not thread.is_alive(), "the viewer did not stop"
        if failed:
            raise failed[0]


@pytest.fixture
async def viewer(settings: Settings, repo: Repo) -> AsyncIterator[Served]:
    await synced(settings, repo)
    with serving(settings, repo.path) as served:
        yield served
