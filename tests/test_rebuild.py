"""`sync --rebuild` costs what a first sync of the same repository costs."""

from __future__ import annotations

from typing import Any

from nexusmem_core import handlers, walker
from nexusmem_core.engine import Engine
from nexusmem_core.models import Node
from nexusmem_core.store.nodes import upsert_nodes

from .conftest import BASE_TS, Repo, run_cli
from .test_walker import long_history

STEPS = 1000  # SQLite virtual-machine instructions between two calls of the counter


async def work_of(engine: Engine, **options: Any) -> int:
    """The SQLite instructions a sync runs on the engine's connection, in thousands: the
    database's share of its cost, counted the same on a busy machine as on an idle one."""
    counted = [0]

    def tick() -> int:
        counted[0] += 1
        return 0  # go on

    await engine.db.run(lambda conn: conn.set_progress_handler(tick, STEPS))
    try:
        await handlers.sync(engine, embed=False, **options)
    finally:
        await engine.db.run(lambda conn: conn.set_progress_handler(None, STEPS))
    return counted[0]


async def test_a_rebuild_does_the_database_work_of_a_first_sync(engine: Engine, repo: Repo):
    # Under walker.MIN_COMMITS: the whole walk is written on this connection, where it is counted.
    long_history(repo, 1500)
    first = await work_of(engine)
    rebuilt = await work_of(engine, rebuild=True)
    # A rebuild deletes what it writes again (about as much work as writing it: the word
    # index and the links are undone row by row), and carries the record times over. That
    # is twice a first sync's database work, and stays twice: a scan per node when the
    # record times came back made it 15x here, and more the longer the history.
    assert rebuilt < 2.5 * first, (first, rebuilt)
    assert await engine.db.fetchone("select count(*) from nodes") > (1500,)
    # Emptied at once, not row by row: the word indexes still hold exactly the rows there are.
    for table in ("nodes_fts", "nodes_cjk"):
        await engine.db.execute(f"insert into {table}({table}) values ('integrity-check')")


async def test_a_rebuild_that_keeps_session_summaries_keeps_them_searchable(
    engine: Engine, repo: Repo
):
    await handlers.sync(engine, embed=False)
    summary = Node(
        project_id=engine.project_id,
        kind="session_summary",
        source="session",
        ref="session-1",
        title="Session: the quokka migration",
        body="We moved the quokka tables.",
        ts=BASE_TS,
        signal=0.6,
        provenance="derived",
    )
    await upsert_nodes(engine.db, [summary])
    await handlers.sync(engine, embed=False, rebuild=True)
    for table in ("nodes_fts", "nodes_cjk"):
        await engine.db.execute(f"insert into {table}({table}) values ('integrity-check')")
    found = await handlers.search(engine, "quokka")
    assert [r.kind for r in found.results] == ["session_summary"]


def test_a_rebuild_starts_its_walk_before_the_imports_as_a_first_sync_does(repo: Repo):
    long_history(repo, walker.PRESTART_COMMITS)
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "--no-embed", "-C", str(repo.path)).returncode == 0
    assert walker.prestart(repo.path) is None  # a later sync walks only what is new
    child = walker.prestart(repo.path, rebuild=True)
    assert child is not None
    walker.stop(child)
