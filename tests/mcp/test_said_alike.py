"""What the MCP tools say in text matches the CLI's lines: totals, not limits; the sync line;
commits a rebase left behind (issue 51)."""

from __future__ import annotations

import json
import re

import pytest
from mcp import Client

from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo


@pytest.fixture
def server(settings: Settings):
    return build_server(settings)


async def test_list_stale_says_how_many_exist_beside_the_ones_listed(
    server, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(repo.path)  # the resource reads the server's working directory
    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        assert not (await client.call_tool("sync_project", root)).is_error
        one = await client.call_tool("list_stale", {**root, "min_age_days": 1, "limit": 1})
        every = await client.call_tool("list_stale", {**root, "min_age_days": 1})
        resource = await client.read_resource("nexusmem://stale")
    lines = one.content[0].text.splitlines()
    assert len(lines) == 2 and one.structured_content["total"] == 4  # the fixture's doc sections
    assert lines[1] == (
        "the oldest 1 of 4 non-observed nodes older than 1 days with nothing confirming them: "
        "a larger limit shows more"
    )
    assert every.content[0].text.splitlines()[-1].startswith("4 non-observed nodes older than")
    assert json.loads(resource.contents[0].text)["total"] == 4


async def test_sync_project_says_the_clis_sync_line_and_what_a_rebase_left(server, repo: Repo):
    root = {"project_root": str(repo.path)}
    async with Client(server) as client:
        first = await client.call_tool("sync_project", root)
        again = await client.call_tool("sync_project", root)
        repo.git("commit", "-q", "--amend", "-m", "docs: explain the architecture, reworded")
        rebased = await client.call_tool("sync_project", root)
        status = await client.call_tool("get_status", root)
    line, vectors = first.content[0].text.splitlines()
    assert vectors.startswith("vectors: off: Ollama is not reachable")  # searches use BM25
    assert re.fullmatch(
        r"synced project in \d+\.\d\ds \(the whole history read\): 4 commits, 5 file diffs, "
        r"\d+ doc sections written",
        line,
    ), line
    assert re.fullmatch(
        r"synced project in \d+\.\d\ds: nothing new", again.content[0].text.split("\n")[0]
    )
    assert "(s)" not in line and "\x1b" not in line
    waiting = (
        "1 commit a rewrite (a rebase) left behind still show in answers beside their new "
        "copies: pruned 14 days after, or now with the CLI's "
        "`nexusmem sync --prune-unreachable --yes`"
    )
    assert rebased.content[0].text.splitlines()[-1] == f"rewritten: {waiting}"
    assert f"\nrewritten  {waiting}\n" in status.content[0].text, status.content[0].text
    assert status.structured_content["unreachable_waiting"] == 1
