"""What a client reads when a tool call fails: one line in MCP's words, naming the tool's own
parameters and tools, never the CLI's flags and commands nor pydantic's text."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from mcp import Client

from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo, run_cli

CLI_WORDS = ("-C <", "-C ", "--", "nexusmem init", "`nexusmem")


@pytest.fixture
def server(settings: Settings):
    return build_server(settings)


def one_line(result) -> str:
    assert result.is_error, result.content
    (text,) = [c.text for c in result.content]
    assert "\n" not in text and "Traceback" not in text, text
    assert not [word for word in CLI_WORDS if word in text], text
    return text


async def test_a_path_that_is_no_repository_names_project_root(server, tmp_path: Path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "file").write_text("x")
    async with Client(server) as client:
        results = {
            why: await client.call_tool("get_status", {"project_root": str(tmp_path / name)})
            for why, name in [
                ("does not exist", "nope"),
                ("is not inside a git repository", "plain"),
                ("is not a directory", "file"),
            ]
        }
    for why, result in results.items():
        text = one_line(result)
        assert why in text and text.endswith("pass project_root, the path of a git repository")


async def test_the_working_directory_outside_a_repository_names_project_root(
    server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    async with Client(server) as client:
        text = one_line(await client.call_tool("list_recent_memory", {}))
    assert f"{tmp_path} is not inside a git repository: pass project_root" in text


async def test_a_repository_with_no_memory_says_to_call_sync_project(server, repo: Repo):
    async with Client(server) as client:
        result = await client.call_tool("get_status", {"project_root": str(repo.path)})
    text = one_line(result)
    assert text.endswith(
        "has no NexusMem memory yet: call sync_project to build it from the repository"
    )


async def test_arguments_the_core_refuses_are_named_as_the_tool_names_them(server, repo: Repo):
    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        await client.call_tool("sync_project", root)
        as_of = await client.call_tool(
            "search_memory", {"query": "retry", "as_of": "last tuesday", **root}
        )
        empty = await client.call_tool("forget_memory", {"value": "", "regex": True, **root})
        lines = await client.call_tool("forget_memory", {"value": "a\nb", **root})
        node = await client.call_tool(
            "review_memory", {"node_id": "zz", "verdict": "verify", **root}
        )
    assert "as_of: 'last tuesday' is not a date" in one_line(as_of)
    assert "the regular expression is empty" in one_line(empty)
    assert "forget each line on its own, or a regular expression" in one_line(lines)
    assert "'zz' is not a node id" in one_line(node)


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("search_memory", {"query": "x", "budget": 10}, "budget: must be between 50 and 200000"),
        ("search_memory", {"query": "x", "budget": "lots"}, "budget: must be a whole number"),
        ("search_memory", {}, "query: is required"),
        ("list_recent_memory", {"limit": -1}, "limit: must be between 1 and 500"),
        ("list_stale", {"min_age_days": 0}, "min_age_days: must be between 1 and 3650"),
        (
            "review_memory",
            {"node_id": "abcd", "verdict": "maybe"},
            "verdict: must be one of 'verify', 'reject' or 'clear'",
        ),
        (
            "forget_memory",
            {"value": "x", "confirm": "perhaps"},
            "confirm: must be true or false",
        ),
    ],
)
async def test_arguments_out_of_range_or_of_the_wrong_type_get_one_line(
    server, repo: Repo, tool: str, arguments: dict[str, object], said: str
):
    async with Client(server) as client:
        result = await client.call_tool(tool, {"project_root": str(repo.path), **arguments})
    text = one_line(result)
    assert text == f"Error executing tool {tool}: {said}"
    assert "pydantic" not in text and "validation error" not in text


async def test_a_database_to_rebuild_says_to_call_sync_project(server, repo: Repo):
    """The store's way out (move the file aside and build memory anew) is the CLI's command
    over the CLI, and sync_project here."""
    at = ("-C", str(repo.path))
    assert run_cli("init", *at).returncode == 0
    db = repo.path / ".nexusmem" / "memory.db"
    for name in ("memory.db-wal", "memory.db-shm"):
        (db.parent / name).unlink(missing_ok=True)
    db.unlink()
    with sqlite3.connect(db) as conn:  # someone else's database where memory should be
        conn.execute("create table invoices (id integer primary key)")
    conn.close()
    async with Client(server) as client:
        foreign = one_line(await client.call_tool("get_status", {"project_root": str(repo.path)}))
    assert foreign.endswith("move it aside, then call sync_project to build memory there")
    assert "run `nexusmem sync` to build memory there" in run_cli("status", *at).stderr

    db.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)  # damaged past its header
    async with Client(server) as client:
        damaged = one_line(await client.call_tool("get_status", {"project_root": str(repo.path)}))
    assert "move the file aside and call sync_project to build memory anew" in damaged
    assert "move the file aside and run `nexusmem sync`" in run_cli("status", *at).stderr


@pytest.mark.parametrize(
    ("tool", "name", "value"),
    [
        ("forget_memory", "confirm", "true"),
        ("forget_memory", "confirm", "t"),
        ("forget_memory", "confirm", 1),
        ("forget_memory", "regex", "yes"),
        ("forget_memory", "ignore_case", "false"),
        ("sync_project", "rebuild", "yes"),
        ("sync_project", "rebuild", "true"),
        ("search_memory", "all_projects", "true"),
    ],
)
async def test_a_boolean_given_as_a_string_or_number_is_refused_and_nothing_is_done(
    server, repo: Repo, tool: str, name: str, value: object
):
    least = {"forget_memory": {"value": "S3 timed out"}, "search_memory": {"query": "retry"}}
    arguments = {"project_root": str(repo.path), **least.get(tool, {}), name: value}
    async with Client(server) as client:
        await client.call_tool("sync_project", {"project_root": str(repo.path)})
        result = await client.call_tool(tool, arguments)
        after = await client.call_tool(
            "search_memory", {"query": "S3 timed out", "project_root": str(repo.path)}
        )
    assert one_line(result) == f"Error executing tool {tool}: {name}: must be true or false"
    assert "S3 timed out" in after.content[0].text  # nothing was forgotten


async def test_every_tool_parameter_is_described(server):
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
    undescribed = [
        f"{tool.name}.{name}"
        for tool in tools
        for name, schema in tool.input_schema["properties"].items()
        if not schema.get("description")
    ]
    assert undescribed == []


async def test_the_cores_ways_out_are_the_tools_words(server, repo: Repo):
    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        await client.call_tool("sync_project", root)
        recent = await client.call_tool("list_recent_memory", {"limit": 1, **root})
        node = recent.structured_content["nodes"][0]["id"][:12]
        itself = await client.call_tool("mark_stale", {"old_id": node, "new_id": node, **root})
        dry = await client.call_tool("forget_memory", {"value": "RETRY_BUDGET", **root})
        done = await client.call_tool(
            "forget_memory", {"value": "RETRY_BUDGET", "confirm": True, **root}
        )
        search = await client.call_tool("search_memory", {"query": "retry", **root})
    assert one_line(itself).endswith("mark_stale: new_id: a node cannot supersede itself")
    assert dry.content[0].text.endswith("call again with confirm: true to forget it")
    assert "--yes" not in dry.content[0].text
    assert "export the deny list with the CLI, `nexusmem forget --export FILE`" in (
        done.content[0].text
    )
    # A data field, the same for every caller: it names no command of either adapter.
    vector = search.structured_content["vector"]
    assert vector.startswith("off: nothing embedded with ") and "nexusmem" not in vector
