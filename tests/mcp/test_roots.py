"""The client's roots: the first in a git repository is the project, and no tool works on a
project_root outside them. A client that offers no roots names any repository, as before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client
from mcp_types import ListRootsResult, Root

from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo
from .test_server import LEAST_ARGUMENTS


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


async def test_every_tool_refuses_a_project_root_outside_the_roots(server, make_repo):
    mine, other = make_repo("mine"), make_repo("other")
    other.commit("feat: elsewhere", {"x.py": "x = 1\n"})
    async with Client(server, list_roots_callback=offering(mine.path)) as client:
        results = {
            name: await client.call_tool(name, {**arguments, "project_root": str(other.path)})
            for name, arguments in LEAST_ARGUMENTS.items()
        }
    for name, result in results.items():
        assert result.is_error, name
        assert result.content[0].text == (
            f"Error executing tool {name}: project_root {other.path} is outside the client's "
            f"roots ({mine.path}): pass a path inside one of them, or omit project_root"
        )
    assert not (other.path / ".nexusmem").exists()  # sync_project set nothing up there


async def test_a_link_out_of_the_roots_is_outside_them(server, repo: Repo, tmp_path: Path):
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "link").symlink_to(repo.path)
    async with Client(server, list_roots_callback=offering(root)) as client:
        result = await client.call_tool("sync_project", {"project_root": str(root / "link")})
    assert result.is_error and "is outside the client's roots" in result.content[0].text
    assert not (repo.path / ".nexusmem").exists()


async def test_a_project_root_inside_a_root_is_used(server, repo: Repo):
    async with Client(server, list_roots_callback=offering(repo.path.parent)) as client:
        synced = await client.call_tool("sync_project", {"project_root": str(repo.path)})
    assert not synced.is_error, synced.content
    assert synced.structured_content["commits"] == 4
