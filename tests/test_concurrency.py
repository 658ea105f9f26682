"""Two writers on one memory: whoever comes second waits its turn and then does the right
thing. Found by the stress and crash harnesses (``tests/stress.py``, ``bench/``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from nexusmem_core import handlers
from nexusmem_core import sync as sync_module
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine
from nexusmem_core.store import db as db_module
from nexusmem_core.store.nodes import get_cursor

from .conftest import Repo, run_cli

# The store's own SQLite: two copies of SQLite in one process on one file release each
# other's POSIX locks, and the second one's close deletes the first one's WAL under it.
sqlite = db_module.sqlite_module()


def _write_lock_free(path: Path) -> bool:
    conn = sqlite.connect(str(path), timeout=0, isolation_level=None)
    try:
        conn.execute("begin immediate")
        conn.execute("rollback")
        return True
    except sqlite.OperationalError:
        return False
    finally:
        conn.close()


async def test_a_sync_that_waited_for_another_does_not_walk_the_history_again(
    engine: Engine, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    await handlers.sync(engine)
    read_repo = sync_module.read_repo
    landed: list[str] = []

    async def someone_slips_in(root: Path):
        found = await read_repo(root)
        # Whenever another process can commit and sync between this sync reading HEAD and
        # taking the write lock, it does (a post-commit `sync --auto` racing a plain one).
        if not landed and _write_lock_free(engine.db.path):
            landed.append(repo.commit("fix: lands while a sync waits", {"late.txt": "late\n"}))
            done = run_cli("sync", "-q", "-C", str(repo.path))
            assert done.returncode == 0, done.stderr
        return found

    monkeypatch.setattr(sync_module, "read_repo", someone_slips_in)
    report = await handlers.sync(engine)

    # Read before the lock, HEAD was older than the other sync's cursor: that looked like a
    # rewritten history, so the whole of it was walked again and the cursor went backwards.
    assert not report.full_walk
    head = repo.git("rev-parse", "HEAD").strip()
    assert await get_cursor(engine.db, engine.project_id, "git") == head


async def test_a_writer_waits_for_a_transaction_longer_than_the_busy_timeout(
    settings: Settings, engine: Engine, repo: Repo, monkeypatch: pytest.MonkeyPatch
):
    await handlers.sync(engine)
    # The first sync of a 30,000-commit history held the write lock for over 20 s here, and a
    # sync started meanwhile failed after busy_timeout (15 s) with "is busy". Shortened:
    monkeypatch.setattr(db_module, "BUSY_TIMEOUT_MS", 50)
    holder = sqlite.connect(str(engine.db.path), isolation_level=None, check_same_thread=False)
    holder.execute("begin immediate")
    order: list[str] = []

    def commit() -> None:
        order.append("lock released")
        holder.execute("commit")

    release = threading.Timer(0.5, commit)  # ten busy timeouts later
    repo.commit("fix: waits for its turn", {"turn.txt": "turn\n"})
    release.start()
    try:
        async with open_engine(settings, repo.path) as second:
            report = await handlers.sync(second)
            order.append("synced")
    finally:
        release.join()
        holder.close()
    assert report.commits == 1
    assert order == ["lock released", "synced"]  # it waited, rather than failing or skipping
