"""The migrated schema is pinned; migrating twice is a no-op; the file is WAL."""

from __future__ import annotations

from pathlib import Path

from nexusmem_core.store.db import open_database
from nexusmem_core.store.migrations import MIGRATIONS, migrate

EXPECTED_TABLES = {
    "schema_migrations",
    "projects",
    "nodes",
    "node_files",
    "cursors",
    "doc_files",
    "nodes_fts",
    "embeddings",
    "links",
    "audit",
    "tombstones",
    "deny_list",
    "source_files",
    "sessions",
    "import_edges",
    "nodes_cjk",
    "contradictions",
    "project_aliases",
    "vec_generation",
    "vec_sketch_pages",
    "vec_sketch_dirty",
    "word_tops",
    "word_top_tokens",
    "word_top_state",
    "word_top_late",
    "compaction_due",
}
EXPECTED_NODE_COLUMNS = [
    "seq",
    "id",
    "project_id",
    "kind",
    "source",
    "ref",
    "grp",
    "title",
    "body",
    "paths",
    "ts",
    "created_at",
    "signal",
    "provenance",
    "trust",
    "supersedes",
    "content_hash",
    "meta",
    "cjk",
]


async def test_schema_is_pinned(tmp_path: Path):
    async with open_database(tmp_path / "m.db") as db:
        tables = {
            name
            for (name,) in await db.fetchall(
                "select name from sqlite_master "
                "where type = 'table' and name not like 'nodes_fts_%' "
                "and name not like 'nodes_cjk_%'"
            )
        }
        columns = [row[1] for row in await db.fetchall("pragma table_info(nodes)")]
        triggers = {
            name
            for (name,) in await db.fetchall(
                "select name from sqlite_master where type = 'trigger'"
            )
        }
        versions = [v for (v,) in await db.fetchall("select version from schema_migrations")]
        (mode,) = await db.fetchone("pragma journal_mode")
    assert tables == EXPECTED_TABLES
    assert columns == EXPECTED_NODE_COLUMNS
    assert triggers == {
        "nodes_ai",
        "nodes_ad",
        "nodes_au",
        "nodes_cjk_ai",
        "nodes_cjk_ad",
        "nodes_cjk_au",
        "embeddings_added",
        "embeddings_replaced",
        "embeddings_removed",
        "embeddings_page_added",
        "embeddings_page_replaced",
        "embeddings_page_removed",
        "word_tops_rewritten",
        "word_tops_removed",
        "word_tops_reused",
    }
    assert versions == [v for v, _, _ in MIGRATIONS]
    assert mode == "wal"


async def test_migrating_again_applies_nothing(tmp_path: Path):
    async with open_database(tmp_path / "m.db") as db:
        assert await migrate(db) == []


async def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path):
    import pytest

    from nexusmem_core.errors import StoreError

    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"bad\.db"):
        async with open_database(bad):
            pass
    assert bad.read_bytes() == b"this is not sqlite" * 100


async def test_readers_ask_for_a_sync_when_the_schema_is_behind(tmp_path: Path):
    import sqlite3

    import pytest

    from nexusmem_core.errors import StoreError

    path = tmp_path / "m.db"
    async with open_database(path):
        pass
    latest = MIGRATIONS[-1][0]
    with sqlite3.connect(path) as raw:
        raw.execute("update schema_migrations set version = -1 where version = ?", (latest,))
    with pytest.raises(StoreError, match="run a sync to upgrade it"):
        async with open_database(path, read_only=True):
            pass
    with sqlite3.connect(path) as raw:
        raw.execute("update schema_migrations set version = 999 where version = -1")
    with pytest.raises(StoreError, match="newer NexusMem"):
        async with open_database(path):
            pass


async def test_links_take_the_github_kinds_and_still_cascade(tmp_path: Path) -> None:
    """v6 rebuilds the links table to widen its kinds; its foreign keys still cascade."""
    path = tmp_path / "memory.db"
    async with open_database(path) as db:
        await db.execute("insert into projects values ('p', 'p', '/p', null, 0)")
        for name in ("a", "b"):
            await db.execute(
                "insert into nodes (id, project_id, kind, source, ref, title, body, created_at, "
                "signal, provenance, content_hash) values (?, 'p', 'shell_command', 'shell:hook', "
                "?, ?, '', 0, 0.5, 'observed', '')",
                (name, name, name),
            )
        await db.execute("insert into links values ('a', 'b', 'retry', 'p', 0)")
        await db.execute("insert into links values ('a', 'b', 'closes', 'p', 0)")
        await db.execute("delete from nodes where id = 'b'")
        assert await db.fetchall("select * from links") == []  # still cascades
