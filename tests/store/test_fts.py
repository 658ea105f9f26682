"""The FTS layer: terms that cannot change the ranking are not searched."""

from __future__ import annotations

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.store.fts import informative_terms


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
