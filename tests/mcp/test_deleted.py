"""A memory database deleted while the MCP server runs: never a traceback, never an empty
answer presented as real, never a write into the deleted file."""

from __future__ import annotations

import shutil

from mcp import Client

from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo


async def test_a_deleted_database_is_reported_and_sync_builds_it_again(
    settings: Settings, repo: Repo
):
    root = {"project_root": str(repo.path)}
    db = repo.path / ".nexusmem" / "memory.db"
    async with Client(build_server(settings)) as client:
        assert not (await client.call_tool("sync_project", root)).is_error
        before = await client.call_tool("search_memory", {"query": "retry budget", **root})
        assert before.structured_content["results"]
        for suffix in ("", "-wal", "-shm"):
            db.with_name(db.name + suffix).unlink(missing_ok=True)

        search = await client.call_tool("search_memory", {"query": "retry budget", **root})
        status = await client.call_tool("get_status", root)
        for result in (search, status):
            assert result.is_error
            (text,) = [c.text for c in result.content]
            assert f"the memory database {db} was deleted while the server ran" in text
            assert "call sync_project" in text and "Traceback" not in text
        assert not db.exists()  # a read-only call does not create anything

        synced = await client.call_tool("sync_project", root)
        assert not synced.is_error, synced.content
        assert synced.structured_content["commits"] == 4  # everything, into a new file
        after = await client.call_tool("search_memory", {"query": "retry budget", **root})
    assert not after.is_error and after.structured_content["results"]
    assert db.is_file()


async def test_a_deleted_workspace_is_set_up_again_by_sync(settings: Settings, repo: Repo):
    root = {"project_root": str(repo.path)}
    async with Client(build_server(settings)) as client:
        assert not (await client.call_tool("sync_project", root)).is_error
        shutil.rmtree(repo.path / ".nexusmem")
        recent = await client.call_tool("list_recent_memory", root)
        assert recent.is_error and "was deleted while the server ran" in recent.content[0].text
        assert not (await client.call_tool("sync_project", root)).is_error
        status = await client.call_tool("get_status", root)
    assert status.structured_content["by_kind"]["git_commit"] == 4
    assert (repo.path / ".nexusmem" / "config.json").is_file()
