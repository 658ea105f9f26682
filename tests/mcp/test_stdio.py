"""Over a real stdio subprocess: ``python -m nexusmem_mcp`` as a client launches it, and as
raw bytes that no SDK client would send."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from jsonschema.validators import validator_for
from mcp import Client, StdioServerParameters
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ListRootsResult, Root

from ..conftest import Repo
from .wire import INITIALIZE, INITIALIZE_WITH_ROOTS, INITIALIZED, Wire, tool_call


async def test_stdio_server_answers_and_keeps_stdout_clean(repo: Repo, home: Path):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nexusmem_mcp"],
        cwd=str(repo.path),
        env={**os.environ, "NEXUSMEM_HOME": str(home), "NEXUSMEM_LOG_LEVEL": "DEBUG"},
    )
    plain = home.parent / "plain"
    plain.mkdir()
    async with Client(params) as client:
        assert client.server_info.name == "nexusmem"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        synced = await client.call_tool("sync_project", {})
        assert not synced.is_error, synced.content
        result = await client.call_tool("search_memory", {"query": "retry budget"})
        status = await client.call_tool("get_status", {})
        elsewhere = await client.call_tool("get_status", {"project_root": str(plain)})
    # Any stray print on stdout would have broken the JSON-RPC stream before this point.
    assert "fix: raise the retry budget" in result.content[0].text
    for name, answer in [
        ("sync_project", synced),
        ("search_memory", result),
        ("get_status", status),
    ]:
        schema = tools[name].output_schema
        assert schema is not None
        assert not list(validator_for(schema)(schema).iter_errors(answer.structured_content))
    assert elsewhere.is_error and elsewhere.content[0].text.endswith(
        "is not inside a git repository: pass project_root, the path of a git repository"
    )


async def test_over_stdio_the_clients_roots_choose_and_bound_the_repository(
    repo: Repo, make_repo, home: Path, tmp_path: Path
):
    notes, other = tmp_path / "notes", make_repo("other")
    notes.mkdir()

    async def roots(_ctx: object) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=notes.as_uri()), Root(uri=repo.path.as_uri())])

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nexusmem_mcp"],
        cwd=str(tmp_path),  # no repository: the roots decide
        env={**os.environ, "NEXUSMEM_HOME": str(home)},
    )
    async with Client(params, list_roots_callback=roots) as client:
        tools = (await client.list_tools()).tools
        synced = await client.call_tool("sync_project", {})
        outside = await client.call_tool("sync_project", {"project_root": str(other.path)})
        budget = await client.call_tool("search_memory", {"query": "retry", "budget": 10})
    assert all(t.output_schema for t in tools)
    assert not synced.is_error and synced.structured_content["root"] == str(repo.path.resolve())
    assert outside.is_error and f"project_root {other.path} is outside" in outside.content[0].text
    assert not (other.path / ".nexusmem").exists()
    assert budget.content[0].text == (
        "Error executing tool search_memory: budget: must be between 50 and 200000"
    )


@asynccontextmanager
async def raw_server(repo: Repo, home: Path, initialize: bytes = INITIALIZE) -> AsyncIterator[Wire]:
    """``python -m nexusmem_mcp`` in ``repo``, initialised with ``initialize``; its stderr goes
    to a file in home."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "server.log", "wb") as log:
        process = await anyio.open_process(
            [sys.executable, "-m", "nexusmem_mcp"],
            cwd=repo.path,
            env={**os.environ, "NEXUSMEM_HOME": str(home)},
            stderr=log,
        )
        async with process:
            wire = Wire(process)
            # A hang guard, not a speed test: an unanswered request fails here instead of hanging.
            with anyio.fail_after(60):
                await wire.send(initialize)
                assert "result" in await wire.reply(1)
                await wire.send(INITIALIZED)
                yield wire
            await process.stdin.aclose()  # EOF: the server stops


async def test_a_lone_surrogate_in_an_argument_is_answered_and_the_connection_lives_on(
    repo: Repo, home: Path
):
    async with raw_server(repo, home) as wire:
        await wire.send(tool_call(2, "sync_project", b"{}"))
        assert not (await wire.reply(2))["result"]["isError"]
        # JSON's escape for half a UTF-16 pair, alone: the SDK's parser refuses it.
        await wire.send(tool_call(3, "search_memory", b'{"query":"retry \\ud800 budget"}'))
        odd = await wire.reply(3)
        await wire.send(tool_call(4, "search_memory", b'{"query":"retry budget"}'))
        normal = await wire.reply(4)
    assert not odd["result"]["isError"], odd
    assert "Relevant history for: retry \ufffd budget" in odd["result"]["content"][0]["text"]
    assert "fix: raise the retry budget" in normal["result"]["content"][0]["text"]


async def test_a_line_that_is_not_a_message_gets_a_json_rpc_error(repo: Repo, home: Path):
    async with raw_server(repo, home) as wire:
        await wire.send(b'{"jsonrpc":"2.0","id":7,"method":123}')
        invalid = await wire.reply(7)
        await wire.send(b'{"jsonrpc":"2.0","id":8,"method":"ping"')  # cut short: no id to read
        cut = await wire.reply(None)
        await wire.send(b'{"jsonrpc":"2.0","id":9,"method":"ping"}')
        ping = await wire.reply(9)
    assert invalid["error"]["code"] == INVALID_REQUEST
    assert cut["error"]["code"] == PARSE_ERROR
    assert ping["result"] == {}


async def test_a_client_that_never_answers_roots_is_answered_after_a_few_seconds(
    repo: Repo, home: Path
):
    async with raw_server(repo, home, INITIALIZE_WITH_ROOTS) as wire:
        await wire.send(tool_call(2, "sync_project", b"{}"))
        asked = await wire.request("roots/list")  # and never answered
        synced = await wire.reply(2)
        await wire.send(tool_call(3, "get_status", b"{}"))
        status = await wire.reply(3)
    assert "id" in asked
    assert not synced["result"]["isError"], synced
    assert status["result"]["structuredContent"]["root"] == str(repo.path.resolve())
    log = (home / "server.log").read_text()
    assert log.count("mcp_roots_unavailable") == 1, log


async def test_a_client_that_answers_roots_with_an_error_is_served_from_the_working_directory(
    repo: Repo, home: Path
):
    async with raw_server(repo, home, INITIALIZE_WITH_ROOTS) as wire:
        await wire.send(tool_call(2, "sync_project", b"{}"))
        asked = await wire.request("roots/list")
        await wire.send(
            b'{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}'
            % json.dumps(asked["id"]).encode()
        )
        synced = await wire.reply(2)
    assert not synced["result"]["isError"], synced
    assert synced["result"]["structuredContent"]["root"] == str(repo.path.resolve())


async def test_a_request_with_an_id_that_is_no_string_or_integer_is_answered(
    repo: Repo, home: Path
):
    answers = []
    async with raw_server(repo, home) as wire:
        for odd in [b"10.5", b"{}", b"null", b"true", b"[1]", b"1e3"]:
            await wire.send(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % odd)
            answers.append(await wire.reply(None))
        # An odd id only inside the arguments is no odd request.
        await wire.send(tool_call(5, "search_memory", b'{"query":"\\"id\\": 1.5 retry"}'))
        search = await wire.reply(5)
        await wire.send(b'{"jsonrpc":"2.0","id":"six","method":"ping"}')
        ping = await wire.reply("six")
    assert [a["error"]["code"] for a in answers] == [INVALID_REQUEST] * 6, answers
    assert all("id must be a string or an integer" in a["error"]["message"] for a in answers)
    assert "result" in search and ping["result"] == {}
