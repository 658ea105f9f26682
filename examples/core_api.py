"""Use NexusMem as a library: sync a repository and ask it a question.

python examples/core_api.py [REPO] [QUESTION]
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.render import render_search


async def main(repo: Path, question: str) -> None:
    settings = Settings.from_env()
    async with open_engine(settings, repo, create=True) as engine:
        report = await handlers.sync(engine)
        print(
            f"synced {report.commits} commit(s), {report.diffs} diff(s), "
            f"{report.docs_sections} doc section(s)"
        )
        response = await handlers.search(engine, question, budget=800)
    print(render_search(response))
    for result in response.results[:3]:
        print(f"{result.score:.4f}  {result.kind:<12} {result.ref}")


if __name__ == "__main__":
    repo = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    question = sys.argv[2] if len(sys.argv) > 2 else "why was this changed"
    anyio.run(main, repo, question)
