"""Progress and warnings a sync sends the client, through the SDK's own client in-process."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import LoggingLevel, LoggingMessageNotificationParams

from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo, changed
from ..fake_ollama import FakeOllama


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        fake.mode = "malformed"  # there, but its replies cannot be read: vectors are skipped
        yield fake


class Heard:
    """What the client was sent besides the result."""

    def __init__(self) -> None:
        self.progress: list[tuple[float, float | None, str | None]] = []
        self.logs: list[LoggingMessageNotificationParams] = []

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)


async def test_a_sync_reports_its_progress_when_the_client_asks(settings: Settings, repo: Repo):
    heard, root = Heard(), {"project_root": str(repo.path)}
    async with Client(build_server(settings)) as client:
        synced = await client.call_tool("sync_project", root, progress_callback=heard.on_progress)
        again = await client.call_tool("get_status", root)
    assert not synced.is_error and not again.is_error
    values = [value for value, _, _ in heard.progress]
    assert values == sorted(set(values)), heard.progress  # MCP: it grows with each one
    messages = [message or "" for _, _, message in heard.progress]
    assert "commits: 4" in messages, messages
    assert any(message.startswith("diffs: ") for message in messages), messages


async def test_a_syncs_warnings_reach_the_client_at_the_level_it_asked_for(
    settings: Settings, repo: Repo, ollama: FakeOllama
):
    server = build_server(changed(settings, ollama_host=ollama.url, embed_model=ollama.model))
    heard, root = Heard(), {"project_root": str(repo.path)}
    async with Client(server, mode="legacy", logging_callback=heard.on_log) as client:
        assert client.server_capabilities.logging is not None
        synced = await client.call_tool("sync_project", {**root, "rebuild": True})
        warned = list(heard.logs)
        await _set_level(client, "error")
        await client.call_tool("sync_project", {**root, "rebuild": True})
    assert not synced.is_error
    assert [log.level for log in warned] == ["warning"], warned
    assert str(warned[0].data).startswith("vectors: skipped: ") and warned[0].logger == "nexusmem"
    assert heard.logs == warned  # above the level set: nothing more


async def test_on_the_2026_protocol_warnings_go_to_a_request_that_opted_in(
    settings: Settings, repo: Repo, ollama: FakeOllama
):
    server = build_server(changed(settings, ollama_host=ollama.url, embed_model=ollama.model))
    heard, root = Heard(), {"project_root": str(repo.path)}
    async with Client(server, logging_callback=heard.on_log, log_level="warning") as client:
        await client.call_tool("sync_project", root)
    assert [str(log.data)[:18] for log in heard.logs] == ["vectors: skipped: "]


async def _set_level(client: Client, level: LoggingLevel) -> None:
    with warnings.catch_warnings():  # deprecated from 2026-07-28; this client speaks an older one
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.set_logging_level(level)
