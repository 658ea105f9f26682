"""The MCP server through the SDK's own client, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema.validators import validator_for
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND, ListRootsResult, Root

from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo


@pytest.fixture
def server(settings: Settings):
    return build_server(settings)


async def test_tools_are_listed_with_model_facing_docs(server):
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {
        "search_memory",
        "sync_project",
        "get_status",
        "list_recent_memory",
        "list_stale",
        "list_contradictions",
        "mark_stale",
        "review_memory",
        "forget_memory",
    }
    assert tools["forget_memory"].annotations.destructive_hint is True
    assert tools["list_stale"].annotations.read_only_hint is True
    assert tools["review_memory"].annotations.read_only_hint is False
    assert tools["search_memory"].annotations.read_only_hint is True
    assert tools["sync_project"].annotations.read_only_hint is False
    assert "token budget" in tools["search_memory"].description
    assert "query" in tools["search_memory"].input_schema["required"]


async def test_sync_initialises_then_search_returns_text_and_structure(server, repo: Repo):
    async with Client(server) as client:
        synced = await client.call_tool("sync_project", {"project_root": str(repo.path)})
        assert not synced.is_error, synced.content
        assert synced.structured_content["commits"] == 4
        result = await client.call_tool(
            "search_memory",
            {
                "query": "why was the retry budget raised",
                "project_root": str(repo.path),
                "budget": 500,
            },
        )
    assert not result.is_error
    text = result.content[0].text
    assert text.startswith("Relevant history for: why was the retry budget raised")
    assert "[observed] [backfilled] fix: raise the retry budget" in text
    data = result.structured_content
    assert data["budget"] == 500 and data["tokens_used"] <= 500
    assert data["results"][0]["kind"] in {"git_commit", "file_diff"}
    assert (repo.path / ".nexusmem" / "memory.db").is_file()


async def test_project_root_defaults_to_the_clients_root(server, repo: Repo):
    async def roots(_ctx):
        return ListRootsResult(roots=[Root(uri=repo.path.as_uri())])

    async with Client(server, list_roots_callback=roots) as client:
        synced = await client.call_tool("sync_project", {})
        assert not synced.is_error, synced.content
        status = await client.call_tool("get_status", {})
    assert status.structured_content["root"] == str(repo.path.resolve())
    assert status.structured_content["by_kind"]["git_commit"] == 4


async def test_project_root_defaults_to_the_working_directory(
    server, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(repo.path)
    async with Client(server) as client:
        await client.call_tool("sync_project", {})
        recent = await client.call_tool("list_recent_memory", {"limit": 3})
    assert "docs: explain the architecture" in recent.content[0].text


async def test_errors_come_back_as_tool_errors(server, tmp_path: Path, repo: Repo):
    async with Client(server) as client:
        missing = await client.call_tool("get_status", {"project_root": str(tmp_path / "nope")})
        uninit = await client.call_tool(
            "search_memory", {"query": "x", "project_root": str(repo.path)}
        )
        bad = await client.call_tool(
            "search_memory", {"query": "x", "project_root": str(repo.path), "budget": 1}
        )
    assert missing.is_error and "does not exist" in missing.content[0].text
    assert uninit.is_error and "call sync_project" in uninit.content[0].text
    assert bad.is_error


# The fewest arguments each tool that takes project_root needs besides it.
LEAST_ARGUMENTS: dict[str, dict[str, object]] = {
    "search_memory": {"query": "x"},
    "sync_project": {},
    "get_status": {},
    "list_recent_memory": {},
    "list_stale": {},
    "list_contradictions": {},
    "mark_stale": {"old_id": "a", "new_id": "b"},
    "review_memory": {"node_id": "a", "verdict": "verify"},
    "forget_memory": {"value": "x"},
}


async def test_every_tool_returns_structure_its_output_schema_describes(server, repo: Repo):
    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        results = {"sync_project": await client.call_tool("sync_project", root)}
        found = await client.call_tool("search_memory", {"query": "retry budget", **root})
        first = found.structured_content["results"][0]["id"]
        recent = await client.call_tool("list_recent_memory", root)
        latest = recent.structured_content["nodes"][0]["id"]
        arguments = {
            **LEAST_ARGUMENTS,
            "mark_stale": {"old_id": first, "new_id": latest},
            "review_memory": {"node_id": first, "verdict": "verify"},
        }
        for name, args in arguments.items():
            if name not in results:
                results[name] = await client.call_tool(name, {**args, **root})
    assert set(results) == set(tools)
    for name, result in results.items():
        assert not result.is_error, (name, result.content)
        schema = tools[name].output_schema
        assert schema is not None and schema["type"] == "object", name
        validator = validator_for(schema)(schema)
        assert not list(validator.iter_errors(result.structured_content)), name
    nodes = recent.structured_content["nodes"]
    assert len(nodes) == 13 and all(n["title"] in recent.content[0].text for n in nodes)


@pytest.mark.parametrize("root", ["/tmp/x\x00y", "/tmp/x\ud800y"], ids=["nul", "surrogate"])
async def test_a_project_root_no_path_can_hold_is_a_one_line_tool_error(server, root: str):
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools if "project_root" in t.input_schema["properties"]} == set(
            LEAST_ARGUMENTS
        )
        results = {
            name: await client.call_tool(name, {**arguments, "project_root": root})
            for name, arguments in LEAST_ARGUMENTS.items()
        }
    for name, result in results.items():
        text = result.content[0].text
        assert result.is_error, name
        assert f"project_root {root!r} contains" in text, text
        assert text.endswith("pass the repository's real path") and "\n" not in text


async def test_a_client_root_no_path_can_hold_is_a_tool_error(server):
    async def roots(_ctx):
        return ListRootsResult(roots=[Root(uri="file:///tmp/x%00y")])

    async with Client(server, list_roots_callback=roots) as client:
        status = await client.call_tool("get_status", {})
    assert status.is_error
    assert "project_root (the client's root) '/tmp/x\\x00y' contains a NUL byte" in (
        status.content[0].text
    )


async def test_resources_expose_status_and_nodes(
    server, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(repo.path)
    async with Client(server) as client:
        await client.call_tool("sync_project", {})
        status = await client.read_resource("nexusmem://status")
        nodes = await client.call_tool("search_memory", {"query": "retry budget"})
        node_id = nodes.structured_content["results"][0]["id"]
        node = await client.read_resource(f"nexusmem://node/{node_id}")
    assert json.loads(status.contents[0].text)["nodes"] == 13
    detail = json.loads(node.contents[0].text)
    assert detail["id"] == node_id and detail["body"] and detail["files"]


async def test_all_projects_search_over_mcp(server, make_repo):
    a, b = make_repo("uploader"), make_repo("web")
    a.commit("fix: raise the retry budget", {"r.py": "R = 5\n"})
    b.commit("feat: retry login", {"l.py": "x = 1\n"})
    async with Client(server) as client:
        for r in (a, b):
            await client.call_tool("sync_project", {"project_root": str(r.path)})
        result = await client.call_tool("search_memory", {"query": "retry", "all_projects": True})
    assert sorted(result.structured_content["projects"]) == ["uploader", "web"]
    assert "[uploader]" in result.content[0].text and "[web]" in result.content[0].text


async def test_search_memory_can_be_held_to_bm25(server, repo: Repo):
    async with Client(server) as client:
        synced = await client.call_tool("sync_project", {"project_root": str(repo.path)})
        assert "vectors: off: Ollama is not reachable" in synced.content[0].text
        result = await client.call_tool(
            "search_memory",
            {"query": "retry budget", "project_root": str(repo.path), "vector": False},
        )
    assert result.structured_content["vector"] == "off"
    assert all(r["arms"] == ["bm25"] for r in result.structured_content["results"])


async def test_a_failure_found_by_search_brings_its_fix(server, repo: Repo, home: Path):
    from ..test_shell_sync import log_command

    log_command(home, "npm whoami", repo.path, 1, 1_767_400_000.0)
    log_command(home, "npm whoami", repo.path, 0, 1_767_400_100.0)
    async with Client(server) as client:
        synced = await client.call_tool(
            "sync_project", {"project_root": str(repo.path), "link_failures": True}
        )
        assert synced.structured_content["linked_retry"] == 1
        result = await client.call_tool(
            "search_memory", {"query": "why did npm whoami fail", "project_root": str(repo.path)}
        )
        status = await client.call_tool("get_status", {"project_root": str(repo.path)})
    first, second = result.structured_content["results"][:2]
    assert first["title"] == "you: npm whoami  (exit 1)" and first["link"] is None
    assert (second["link"], second["fix_for"]) == ("retry", first["id"])
    assert "(exit 0)  -- linked as the fix" in result.content[0].text
    assert status.structured_content["chains"]["retry"] == 1


async def test_forget_is_a_dry_run_until_confirmed(server, repo: Repo):
    async with Client(server) as client:
        await client.call_tool("sync_project", {"project_root": str(repo.path)})
        args = {"value": "S3 timed out", "project_root": str(repo.path)}
        dry = await client.call_tool("forget_memory", args)
        assert not dry.is_error and dry.structured_content["applied"] is False
        assert "confirm: true" in dry.content[0].text
        found = await client.call_tool(
            "search_memory", {"query": "S3 timed out", "project_root": str(repo.path)}
        )
        assert found.structured_content["results"]  # still there after the dry run
        done = await client.call_tool("forget_memory", {**args, "confirm": True})
        assert done.structured_content["applied"] is True
        assert done.structured_content["matched"] >= 1
        gone = await client.call_tool(
            "search_memory", {"query": "S3 timed out", "project_root": str(repo.path)}
        )
    assert all("S3 timed out" not in r["summary"] for r in gone.structured_content["results"])


async def test_review_and_mark_stale_through_mcp(server, repo: Repo):
    async with Client(server) as client:
        await client.call_tool("sync_project", {"project_root": str(repo.path)})
        hits = await client.call_tool(
            "search_memory", {"query": "BM25 offline", "project_root": str(repo.path)}
        )
        doc = next(r for r in hits.structured_content["results"] if r["kind"] == "doc_section")
        reviewed = await client.call_tool(
            "review_memory",
            {"node_id": doc["id"][:10], "verdict": "reject", "project_root": str(repo.path)},
        )
        assert reviewed.structured_content["trust"] == "rejected"
        commits = await client.call_tool(
            "search_memory", {"query": "architecture", "project_root": str(repo.path)}
        )
        newer = next(r for r in commits.structured_content["results"] if r["kind"] == "git_commit")
        marked = await client.call_tool(
            "mark_stale",
            {"old_id": doc["id"], "new_id": newer["id"], "project_root": str(repo.path)},
        )
        assert marked.structured_content["changed"] is True
        again = await client.call_tool(
            "search_memory", {"query": "BM25 offline", "project_root": str(repo.path)}
        )
        stale = await client.call_tool(
            "list_stale", {"project_root": str(repo.path), "min_age_days": 1}
        )
        open_ = await client.call_tool("list_contradictions", {"project_root": str(repo.path)})
    same = next(r for r in again.structured_content["results"] if r["id"] == doc["id"])
    assert same["trust"] == "rejected" and same["superseded"] is True
    assert "[rejected]" in again.content[0].text and "[superseded]" in again.content[0].text
    assert not stale.is_error and "candidates" in stale.structured_content
    assert open_.structured_content["suggestions"] == []


async def test_the_deny_list_resource_masks_what_was_forgotten(
    server, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(repo.path)
    async with Client(server) as client:
        await client.call_tool("sync_project", {})
        await client.call_tool("forget_memory", {"value": "S3 timed out", "confirm": True})
        await client.call_tool(
            "forget_memory", {"value": "back(off|up)", "regex": True, "confirm": True}
        )
        deny = await client.read_resource("nexusmem://deny-list")
        stale = await client.read_resource("nexusmem://stale")
    text = deny.contents[0].text
    entries = json.loads(text)["entries"]
    assert [e["kind"] for e in entries] == ["literal", "regex"]
    assert "S3 timed out" not in text and "back(off|up)" not in text
    assert entries[0]["length"] == len("S3 timed out")
    assert "candidates" in json.loads(stale.contents[0].text)


async def test_search_memory_echoes_a_long_query_within_its_budget(server, repo: Repo):
    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        await client.call_tool("sync_project", root)
        result = await client.call_tool(
            "search_memory", {"query": "retry budget " * 8000, "budget": 200, **root}
        )
    data = result.structured_content
    assert data["query"].endswith("...") and len(data["query"]) < 400
    assert data["tokens_used"] <= 200
    assert len(result.content[0].text) < 200 * 4


async def test_list_recent_memory_knows_every_kind_and_names_them_for_a_wrong_one(
    server, repo: Repo
):
    from nexusmem_core.models import NODE_KINDS

    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        await client.call_tool("sync_project", root)
        wrong = await client.call_tool("list_recent_memory", {"kind": "commit", **root})
        docs = await client.call_tool("list_recent_memory", {"kind": "doc_section", **root})
    schema = tools["list_recent_memory"].input_schema["properties"]["kind"]
    listed = [v for option in schema["anyOf"] for v in option.get("enum", [])]
    assert listed == list(NODE_KINDS) and {"shell_command", "github_thread"} <= set(listed)
    text = wrong.content[0].text
    assert wrong.is_error and "\n" not in text
    assert "kind: 'commit' is not a kind of node" in text
    assert all(kind in text for kind in NODE_KINDS)
    assert not docs.is_error and "(doc_section " in docs.content[0].text


async def test_all_projects_search_reads_only_the_projects_inside_the_clients_roots(
    server, make_repo
):
    a, b = make_repo("uploader"), make_repo("web")
    a.commit("fix: raise the retry budget", {"r.py": "R = 5\n"})
    b.commit("feat: retry login", {"l.py": "x = 1\n"})
    async with Client(server) as client:  # no roots: both are set up
        for r in (a, b):
            await client.call_tool("sync_project", {"project_root": str(r.path)})

    async def roots(_ctx):
        return ListRootsResult(roots=[Root(uri=a.path.as_uri())])

    async with Client(server, list_roots_callback=roots) as client:
        result = await client.call_tool("search_memory", {"query": "retry", "all_projects": True})
    assert result.structured_content["projects"] == ["uploader"]
    assert "[uploader]" in result.content[0].text and "[web]" not in result.content[0].text
    assert result.structured_content["skipped"] == [
        "1 registered project(s) outside the folders this search may read"
    ]


async def test_status_text_names_the_servers_tools_not_the_clis_commands(server, repo: Repo):
    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        await client.call_tool("sync_project", root)
        repo.commit("fix: one more", {"more.py": "x = 2\n"})  # HEAD moves past the memory
        status = await client.call_tool("get_status", root)
    text = status.content[0].text
    assert "(HEAD has moved: call sync_project)" in text
    # What a tool can do is named as the tool; `nexusmem hook install` has none, and stays.
    assert "nexusmem sync" not in text and "nexusmem stale" not in text, text


async def test_the_sdks_wrapper_of_a_resolved_argument_is_built_once(server, repo: Repo):
    """Each tool call's roots come wrapped in ``AcceptedElicitation[Any]``; pydantic keeps that
    class only while something refers to it, and building it again cost ~1 ms of every call.
    It must outlive a garbage collection between two calls."""
    import gc
    from typing import Any

    from mcp.server.mcpserver import AcceptedElicitation

    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        assert not (await client.call_tool("sync_project", root)).is_error
        first = id(AcceptedElicitation[Any])
        gc.collect()
        assert not (await client.call_tool("search_memory", {"query": "retry", **root})).is_error
        assert id(AcceptedElicitation[Any]) == first


async def test_every_tool_has_a_title_a_flowing_description_and_honest_hints(server):
    async with Client(server, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        capabilities = client.server_capabilities
    for tool in tools:
        assert tool.title and tool.title[0].isupper(), tool.name
        assert tool.description and "\n " not in tool.description, tool.name
    sync = next(tool for tool in tools if tool.name == "sync_project")
    assert sync.annotations.open_world_hint is True  # its github argument reads GitHub
    assert capabilities.prompts is None  # no prompts, none declared


async def test_an_unknown_tool_or_prompt_is_a_protocol_error_with_its_code(server):
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as tool:
            await client.call_tool("no_such_tool", {})
        with pytest.raises(MCPError) as prompt:
            await client.get_prompt("anything")
    assert tool.value.error.code == INVALID_PARAMS
    assert tool.value.error.message == "Unknown tool: no_such_tool"
    assert prompt.value.error.code == METHOD_NOT_FOUND


async def test_each_search_result_is_named_alike_in_the_text_and_the_structure(server, repo: Repo):
    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        await client.call_tool("sync_project", root)
        result = await client.call_tool("search_memory", {"query": "retry budget", **root})
    headers = [line for line in result.content[0].text.splitlines() if line.startswith("- ")]
    found = result.structured_content["results"]
    assert len(headers) == len(found) > 1
    commits = 0
    for header, data in zip(headers, found, strict=True):
        assert data["short_id"] == data["id"][:12]
        named = f"{data['short_id']} commit {data['sha']}" if data["sha"] else data["short_id"]
        assert f" {named} [" in header, (header, data)
        commits += data["kind"] == "git_commit"
        assert data["sha"] is None or data["ref"].startswith(data["sha"])
    assert commits and all(d["sha"] for d in found if d["kind"] == "git_commit")
    schema = tools["search_memory"].output_schema
    assert not list(validator_for(schema)(schema).iter_errors(result.structured_content))
    assert {"short_id", "sha"} <= set(schema["$defs"]["FoundResult"]["properties"])
