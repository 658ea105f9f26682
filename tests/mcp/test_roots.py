"""The client's roots: the first in a git repository is the project, and no tool works on a
project_root outside them. A client that offers no roots names any repository, as before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp_types import METHOD_NOT_FOUND, ErrorData, ListRootsResult, Root

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


# Clients of the protocol versions before 2026-07-28 answer roots/list as a request of its own,
# in the middle of a tool call: the three ways one can misbehave, and the one it should behave.


def silent(asked: list[object]) -> Callable[..., object]:
    """A roots callback that never answers: the client offers roots and goes quiet."""

    async def roots(_ctx: object) -> ListRootsResult:
        asked.append(None)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return roots


async def test_a_client_that_never_answers_roots_is_served_as_one_without_roots(
    settings: Settings, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(repo.path)
    server = build_server(settings, roots_timeout=0.2)
    asked: list[object] = []
    async with Client(server, mode="legacy", list_roots_callback=silent(asked)) as client:
        with anyio.fail_after(30):  # a hang guard: before the timeout, this waited for ever
            synced = await client.call_tool("sync_project", {})
            status = await client.call_tool("get_status", {})
    assert not synced.is_error, synced.content
    assert status.structured_content["root"] == str(repo.path.resolve())
    assert len(asked) == 1  # asked once: the second call did not wait again


async def test_a_client_that_answers_roots_with_an_error_is_served_as_one_without_roots(
    server, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    async def refusing(_ctx: object) -> ErrorData:
        return ErrorData(code=METHOD_NOT_FOUND, message="Method not found")

    monkeypatch.chdir(repo.path)
    async with Client(server, mode="legacy", list_roots_callback=refusing) as client:
        synced = await client.call_tool("sync_project", {})
    assert not synced.is_error, synced.content
    assert synced.structured_content["root"] == str(repo.path.resolve())


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_roots_are_asked_once_and_again_after_the_client_says_they_changed(server, make_repo):
    first, second = make_repo("first"), make_repo("second")
    first.commit("feat: one", {"a.py": "a = 1\n"})
    second.commit("feat: two", {"b.py": "b = 1\n"})
    offered, asked = [first.path], []

    async def roots(_ctx: object) -> ListRootsResult:
        asked.append(list(offered))
        return ListRootsResult(roots=[Root(uri=path.as_uri()) for path in offered])

    async with Client(server, mode="legacy", list_roots_callback=roots) as client:
        before = [await client.call_tool("sync_project", {}) for _ in range(3)]
        offered[:] = [second.path]
        await client.session.send_roots_list_changed()
        with anyio.fail_after(10):
            while True:  # the notification is handled apart from the calls: wait for it
                after = await client.call_tool("sync_project", {})
                if after.structured_content["root"] == str(second.path.resolve()):
                    break
                await anyio.sleep(0.01)
    assert {r.structured_content["root"] for r in before} == {str(first.path.resolve())}
    assert asked[0] == [first.path] and asked[-1] == [second.path]
    assert len([a for a in asked if a == [first.path]]) == 1
