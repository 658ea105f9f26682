"""Once over a real stdio subprocess: ``python -m nexusmem_mcp`` as a client launches it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from ..conftest import Repo


async def test_stdio_server_answers_and_keeps_stdout_clean(repo: Repo, home: Path):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nexusmem_mcp"],
        cwd=str(repo.path),
        env={**os.environ, "NEXUSMEM_HOME": str(home), "NEXUSMEM_LOG_LEVEL": "DEBUG"},
    )
    async with Client(params) as client:
        assert client.server_info.name == "nexusmem"
        synced = await client.call_tool("sync_project", {})
        assert not synced.is_error, synced.content
        result = await client.call_tool("search_memory", {"query": "retry budget"})
    # Any stray print on stdout would have broken the JSON-RPC stream before this point.
    assert "fix: raise the retry budget" in result.content[0].text
