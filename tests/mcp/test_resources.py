"""Resources read the repository the tools do (the client's roots, then the working
directory), take the ids text output shows, and fail with MCP's error codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo
from .test_roots import offering

FIXED = ["nexusmem://status", "nexusmem://stale", "nexusmem://deny-list"]


@pytest.fixture
def server(settings: Settings):
    return build_server(settings)


async def test_resources_read_the_clients_root_not_the_servers_directory(
    server, repo: Repo, make_repo, monkeypatch: pytest.MonkeyPatch
):
    other = make_repo("other")
    other.commit("feat: elsewhere", {"x.py": "x = 1\n"})
    monkeypatch.chdir(other.path)  # started in another repository
    async with Client(server, mode="legacy", list_roots_callback=offering(repo.path)) as client:
        await client.call_tool("sync_project", {})
        await client.call_tool("sync_project", {"project_root": str(other.path)})
        read = {uri: await client.read_resource(uri) for uri in FIXED}
        tool = await client.call_tool("get_status", {})
    status = json.loads(read["nexusmem://status"].contents[0].text)
    assert status == tool.structured_content
    assert status["root"] == str(repo.path.resolve())
    assert "candidates" in json.loads(read["nexusmem://stale"].contents[0].text)
    assert json.loads(read["nexusmem://deny-list"].contents[0].text) == {"entries": []}


async def test_outside_a_repository_a_resource_says_what_to_do_without_project_root(
    server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.chdir(plain)
    failures = []
    async with Client(server) as client:
        for uri in FIXED:
            with pytest.raises(MCPError) as failed:
                await client.read_resource(uri)
            failures.append(failed.value)
    for failure in failures:
        assert failure.error.data == {"uri": failure.error.data["uri"]}
        assert "is not inside a git repository" in failure.error.message
        assert "offer the repository as a root" in failure.error.message
        assert not failure.error.message.endswith("pass project_root, the path of a git repository")


async def test_roots_with_no_repository_are_named_by_a_resource(server, tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    async with Client(server, mode="legacy", list_roots_callback=offering(notes)) as client:
        with pytest.raises(MCPError) as failed:
            await client.read_resource("nexusmem://status")
    assert failed.value.error.message == (
        f"none of the client's roots is in a git repository ({notes}): add the repository to "
        "them, or read it with a tool's project_root"
    )


async def test_a_node_is_read_by_the_id_text_shows_its_whole_id_or_a_prefix(
    server, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(repo.path)
    async with Client(server) as client:
        await client.call_tool("sync_project", {})
        recent = await client.call_tool("list_recent_memory", {"limit": 1})
        whole = recent.structured_content["nodes"][0]["id"]
        shown = whole[:12]
        assert f" {shown})" in recent.content[0].text  # the id the text shows
        read = {
            length: json.loads(
                (await client.read_resource(f"nexusmem://node/{whole[:length]}")).contents[0].text
            )
            for length in (64, 12, 4)
        }
    assert {detail["id"] for detail in read.values()} == {whole}


async def test_a_missing_node_or_resource_is_resource_not_found(
    server, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(repo.path)
    async with Client(server) as client:
        await client.call_tool("sync_project", {})
        failures = {}
        for uri in ["nexusmem://node/" + "f" * 12, "nexusmem://nothing", "nexusmem://node/xyz"]:
            with pytest.raises(MCPError) as failed:
                await client.read_resource(uri)
            failures[uri] = failed.value.error
    assert failures["nexusmem://node/" + "f" * 12].code == -32002
    assert failures["nexusmem://nothing"].code == -32002
    assert failures["nexusmem://node/xyz"].code == INVALID_PARAMS
    assert "node_id: give a node id" in failures["nexusmem://node/xyz"].message


async def test_every_resource_and_template_has_a_title_and_a_one_paragraph_description(server):
    async with Client(server) as client:
        fixed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
    assert {r.uri for r in fixed} == set(FIXED)
    for item in [*fixed, *templates]:
        assert item.title and item.title[0].isupper(), item
        assert item.description and "\n        " not in item.description, item
