"""The client's roots: the first in a git repository is the project."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client
from mcp_types import ListRootsResult, Root

from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo


@pytest.fixture
def server(settings: Settings):
    return build_server(settings)


def offering(*paths: Path) -> Callable[..., object]:
    """A client's roots callback offering ``paths``, in order."""

    async def roots(_ctx: object) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in paths])

    return roots


async def test_the_first_root_in_a_git_repository_is_the_project(
    server, repo: Repo, tmp_path: Path
):
    notes = tmp_path / "notes"
    notes.mkdir()
    async with Client(server, list_roots_callback=offering(notes, repo.path)) as client:
        synced = await client.call_tool("sync_project", {})
        assert not synced.is_error, synced.content
        status = await client.call_tool("get_status", {})
    assert status.structured_content["root"] == str(repo.path.resolve())
    assert not (notes / ".nexusmem").exists()


async def test_a_root_below_a_repositorys_top_stands_for_the_repository(server, repo: Repo):
    src = repo.path / "src"
    async with Client(server, list_roots_callback=offering(src)) as client:
        synced = await client.call_tool("sync_project", {})
        inside = await client.call_tool("get_status", {"project_root": str(repo.path)})
    assert synced.structured_content["root"] == str(repo.path.resolve())
    assert inside.structured_content["by_kind"]["git_commit"] == 4


async def test_roots_with_no_repository_name_project_root_and_the_roots(server, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    async with Client(server, list_roots_callback=offering(a, b)) as client:
        result = await client.call_tool("get_status", {})
    assert result.is_error
    assert result.content[0].text == (
        f"Error executing tool get_status: none of the client's roots is in a git repository "
        f"({a}, {b}): pass project_root, the path of a git repository inside one of them"
    )
