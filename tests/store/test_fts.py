"""The FTS layer: terms that cannot change the ranking are not searched."""

from __future__ import annotations

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.models import Node
from nexusmem_core.store.fts import bm25_candidates, informative_terms
from nexusmem_core.store.nodes import upsert_nodes


async def test_terms_in_more_than_half_the_rows_are_dropped(settings: Settings, make_repo):
    repo = make_repo("common")
    for i in range(6):
        repo.commit(f"feat: widget step {i}", {f"w{i}.txt": "widget\n"})
    repo.commit("fix: widget overflow on resize", {"o.txt": "y\n"})
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        assert await informative_terms(engine.db, ["widget", "overflow"]) == ["overflow"]
        assert await informative_terms(engine.db, ["widget"]) == ["widget"]
        assert await informative_terms(engine.db, ["widget", "absent"]) == ["widget", "absent"]
        response = await handlers.search(engine, "widget overflow")
    assert response.results[0].title == "fix: widget overflow on resize"


async def test_a_term_counts_most_in_the_title_then_the_body_then_the_paths(
    settings: Settings, make_repo
):
    repo = make_repo("weights")
    repo.commit("chore: start", {"a.txt": "a\n"})
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine)
        pid = engine.project_id

        def node(ref: str, title: str, body: str, path: str) -> Node:
            return Node(
                pid, "doc_section", "docs", ref, title, body, 1, 0.5, "authored", None, [path]
            )

        async with engine.db.transaction():
            await upsert_nodes(
                engine.db,
                [
                    node("paths", "plain notes", "plain text here", "src/zephyr.py"),
                    node("body", "plain notes", "zephyr text here", "src/a.py"),
                    node("title", "zephyr notes", "plain text here", "src/a.py"),
                ],
            )
        found = await bm25_candidates(engine.db, '"zephyr"', pid)
    assert [c.ref for c in found] == ["title", "body", "paths"]
