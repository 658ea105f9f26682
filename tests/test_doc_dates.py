"""A doc section's date is the last commit that touched its file, whatever the walk read."""

from __future__ import annotations

import os

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine

from .conftest import BASE_TS, DAY, Repo


def old_docs_then_code(repo: Repo) -> dict[str, int]:
    """Two doc files last changed on days 1 and 2, then a week of code commits that touch
    neither; their files' mtimes are the day the test ran. The docs' commit times, by path."""
    repo.commit("docs: guide", {"docs/guide.md": "# Guide\n\nRead me.\n\n## Why\n\nBecause.\n"})
    guide = repo.clock
    repo.commit("docs: notes", {"NOTES.rst": "Notes\n=====\n\nOld notes.\n"})
    notes = repo.clock
    for day in range(7):
        repo.commit(f"fix: case {day}", {"src/app.py": f"value = {day}\n"})
    return {"docs/guide.md": guide, "NOTES.rst": notes}


async def section_dates(engine: Engine) -> dict[str, set[int]]:
    rows = await engine.db.fetchall("select grp, ts from nodes where kind = 'doc_section'")
    dates: dict[str, set[int]] = {}
    for path, ts in rows:
        dates.setdefault(path, set()).add(ts)
    return dates


async def test_since_dates_docs_it_did_not_walk_by_their_last_commit(settings: Settings, make_repo):
    repo = make_repo("old-docs")
    dated = old_docs_then_code(repo)
    since = f"@{BASE_TS + 4 * DAY}"  # after both docs' commits
    async with open_engine(settings, repo.path, create=True) as engine:
        report = await handlers.sync(engine, since=since, embed=False)
        assert report.commits == 6  # the walk stopped before the docs' commits
        assert await section_dates(engine) == {path: {ts} for path, ts in dated.items()}


async def test_a_plain_sync_dates_docs_by_their_last_commit_too(settings: Settings, make_repo):
    repo = make_repo("old-docs")
    dated = old_docs_then_code(repo)
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        assert await section_dates(engine) == {path: {ts} for path, ts in dated.items()}


async def test_a_doc_no_commit_holds_yet_is_dated_by_its_file(settings: Settings, make_repo):
    repo = make_repo("staged-doc")
    old_docs_then_code(repo)
    repo.write("docs/new.md", "# New\n\nNot committed yet.\n")
    repo.git("add", "docs/new.md")  # tracked: read as a doc file, but in no commit
    os.utime(repo.path / "docs/new.md", (BASE_TS + 30 * DAY, BASE_TS + 30 * DAY))
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, since=f"@{BASE_TS + 4 * DAY}", embed=False)
        assert (await section_dates(engine))["docs/new.md"] == {BASE_TS + 30 * DAY}
