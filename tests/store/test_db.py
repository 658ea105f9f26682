"""The connection factory: every connection zeroes what it deletes."""

from __future__ import annotations

from pathlib import Path

from nexusmem_core.store.db import open_database


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
