"""The connection factory: every connection zeroes what it deletes, and a file that holds no
NexusMem memory is named for what it is."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from nexusmem_core.errors import StoreError
from nexusmem_core.store.db import open_database
from nexusmem_core.store.migrations import LATEST, schema_version


async def test_every_connection_zeroes_what_it_deletes(tmp_path: Path):
    path = tmp_path / "m.db"
    async with open_database(path) as db:
        assert await db.fetchone("pragma secure_delete") == (1,)
        await db.execute("create table t (x text)")
        async with db.transaction():
            await db.execute("insert into t values (?)", ("plum-heron-" * 400,))
        async with db.transaction():
            await db.execute("delete from t")
        await db.fetchone("pragma wal_checkpoint(TRUNCATE)")
        assert b"plum-heron-" not in path.read_bytes()  # no VACUUM ran: zeroed as freed
    async with open_database(path, read_only=True) as db:
        assert await db.fetchone("pragma secure_delete") == (1,)


async def test_an_empty_file_is_called_empty_and_a_write_builds_memory_in_it(tmp_path: Path):
    path = tmp_path / "memory.db"
    path.write_bytes(b"")
    with pytest.raises(StoreError, match=r"memory.db is empty: .*run a sync") as err:
        async with open_database(path, read_only=True):
            pass
    assert "older NexusMem" not in str(err.value) and path.stat().st_size == 0
    # Each adapter names its own way out: the CLI's command, the MCP server's tool.
    assert err.value.worded("run `nexusmem sync`", "`nexusmem query`").endswith(
        "run `nexusmem sync` for that repository to build it"
    )
    assert "call sync_project for" in err.value.worded("call sync_project", "search_memory")
    async with open_database(path) as db:
        assert await schema_version(db) == LATEST


async def test_another_programs_database_is_refused_and_left_as_it_was(tmp_path: Path):
    path = tmp_path / "memory.db"
    with sqlite3.connect(path) as conn:
        conn.execute("create table notes (body text)")
        conn.execute("insert into notes values ('mine')")
    conn.close()
    for read_only in (True, False):
        with pytest.raises(StoreError, match=r"is not a NexusMem database .*move it aside"):
            async with open_database(path, read_only=read_only):
                pass
    with sqlite3.connect(path) as conn:
        names = [n for (n,) in conn.execute("select name from sqlite_master")]
        assert names == ["notes"] and conn.execute("select body from notes").fetchall() == [
            ("mine",)
        ]
    conn.close()


def test_opening_memory_loads_sqlite_vec_without_importing_numpy(tmp_path: Path):
    """sqlite-vec's package imports numpy when it is there (it always is: the vector arm's
    sketches need it), 0.1 s that a BM25 query or a hook paid for nothing. The extension is
    loaded from the package's folder instead."""
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from nexusmem_core.store.db import open_database\n"
        "async def main():\n"
        "    async with open_database(Path(sys.argv[1])) as db:\n"
        "        await db.execute('create table t (v float)')\n"
        "        row = await db.fetchone('select vec_version()')\n"
        "        print(db.vectors.loaded, row[0].startswith('v'))\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'sqlite_vec')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
    )
    assert out.stdout.split("\n")[:2] == ["True True", "[]"], out.stdout + out.stderr


async def test_a_bulk_commit_is_checkpointed_beside_what_follows_it(tmp_path: Path):
    """``checkpoint_aside``: the commit returns without copying its WAL into the database;
    the copy runs in a thread once asked for, and is done when the block is left."""
    path = tmp_path / "m.db"

    def rows_in_the_file_alone() -> int:
        copy = tmp_path / "file-alone.db"  # the database file without its WAL
        copy.write_bytes(path.read_bytes())
        with closing(sqlite3.connect(copy)) as conn:
            tables = conn.execute("select count(*) from sqlite_master where name = 't'")
            if tables.fetchone() == (0,):
                return 0
            return int(conn.execute("select count(*) from t").fetchone()[0])

    async with open_database(path) as db:
        await db.execute("create table t (x text)")
        await db.fetchone("pragma wal_checkpoint(TRUNCATE)")
        async with db.checkpoint_aside() as checkpoint:
            assert await db.fetchone("pragma wal_autocheckpoint") == (0,)
            async with db.transaction():  # ~6 MB: past the 1,000 pages of an autocheckpoint
                await db.executemany("insert into t values (?)", [("x" * 3000,)] * 2000)
            assert rows_in_the_file_alone() == 0  # committed to the WAL only
            checkpoint()
            await db.execute("select 1")  # the block goes on meanwhile
        assert rows_in_the_file_alone() == 2000
        assert await db.fetchone("pragma wal_autocheckpoint") == (1000,)
        assert await db.fetchone("select count(*) from t") == (2000,)
