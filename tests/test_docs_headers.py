"""The result headers the docs show are the ones the code prints: ``- DATE ID12 [commit
SHA7] [tags] title`` (render.handle), so a reader can take the id to ``review`` or a tool."""

from __future__ import annotations

import re
from pathlib import Path

from mcp import Client

from nexusmem_core.config import Settings
from nexusmem_core.render import SHORT_ID, SHORT_SHA
from nexusmem_mcp.server import build_server

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A line of a sample that begins a result: a dash at the margin, then a date.
HEADER = re.compile(r"^- (?:\d{4}-\d{2}-\d{2}|date unknown) ")
NAMED = re.compile(
    rf"^- (?:\d{{4}}-\d{{2}}-\d{{2}}|date unknown) [0-9a-f]{{{SHORT_ID}}}"
    rf"(?: commit [0-9a-f]{{{SHORT_SHA}}})? \["
)


def _sample_headers() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        fenced = False
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif fenced and HEADER.match(line):
                found.append((f"{page.relative_to(ROOT)}:{n}", line))
    return found


def test_every_result_header_in_the_docs_names_its_node_as_the_code_does():
    headers = _sample_headers()
    pages = {where.split(":")[0] for where, _ in headers}
    assert {"docs/retrieval.md", "docs/mcp.md", "docs/agent-hooks.md"} <= pages, pages
    unnamed = [f"{where}: {line}" for where, line in headers if not NAMED.match(line)]
    assert not unnamed, "\n".join(unnamed)


def test_a_commits_header_in_the_docs_names_its_sha():
    pages = {where.split(":")[0] for where, line in _sample_headers() if " commit " in line}
    assert {"docs/retrieval.md", "docs/mcp.md"} <= pages, pages  # their samples are commits


async def test_search_memorys_description_gives_the_header_with_its_id(settings: Settings):
    async with Client(build_server(settings)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    described = tools["search_memory"].description or ""
    assert 'begins with a "- DATE ID [commit SHA] [tags] title" line' in described, described
