"""Drive NexusMem's MCP server the way an agent does: launch it over stdio, call its tools.

python examples/mcp_client.py [REPO] [QUESTION]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters


async def main(repo: Path, question: str) -> None:
    # The SDK passes a launched server only a safe subset of the environment; NexusMem's
    # own variables (NEXUSMEM_HOME, NEXUSMEM_LOG_LEVEL) are passed on explicitly.
    env = {k: v for k, v in os.environ.items() if k.startswith("NEXUSMEM_")}
    server = StdioServerParameters(command=sys.executable, args=["-m", "nexusmem_mcp"], env=env)
    async with Client(server) as client:
        tools = await client.list_tools()
        print("tools:", ", ".join(sorted(t.name for t in tools.tools)))
        synced = await client.call_tool("sync_project", {"project_root": str(repo)})
        print(synced.content[0].text)
        found = await client.call_tool(
            "search_memory", {"query": question, "project_root": str(repo), "budget": 600}
        )
        print(found.content[0].text)
        print("structured results:", len(found.structured_content["results"]))


if __name__ == "__main__":
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    question = sys.argv[2] if len(sys.argv) > 2 else "why was this changed"
    anyio.run(main, repo, question)
