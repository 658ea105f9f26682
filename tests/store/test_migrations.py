"""The migrated schema is pinned; migrating twice is a no-op; the file is WAL."""

from __future__ import annotations

from pathlib import Path

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.store.db import open_database
from nexusmem_core.store.migrations import _V1_FTS, MIGRATIONS, _statements, migrate
from nexusmem_core.store.nodes import refresh_names

from ..conftest import Repo

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
    "agent_notes",
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
    "names",
]

EXPECTED_INDEXES = {
    "nodes_project_kind",
    "nodes_project_source_ref",
    "nodes_supersedes",
    "node_files_path",
    "embeddings_model",
    "links_dst",
    "nodes_command_hash",
    "nodes_error_sig",
    "nodes_failed_commands",
    "nodes_project_created",
    "import_edges_dst",
    "project_aliases_project",
    "embeddings_unsketched",
    "word_tops_seq",
    "agent_notes_told",
    "nodes_timeline",
}


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
        indexes = {
            name
            for (name,) in await db.fetchall(
                "select name from sqlite_master where type = 'index' and sql is not null"
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
    assert indexes == EXPECTED_INDEXES
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
        await db.execute("insert into links values ('a', 'b', 'signature', 'p', 0)")  # v17
        await db.execute("insert into links values ('a', 'b', 'trace', 'p', 0)")
        await db.execute("delete from nodes where id = 'b'")
        assert await db.fetchall("select * from links") == []  # still cascades


# What v14 replaced: the word index of three columns, and the word lists' trigger on them.
_BEFORE_NAMES = f"""
drop trigger nodes_ai;
drop trigger nodes_ad;
drop trigger nodes_au;
drop trigger word_tops_rewritten;
drop table nodes_fts;
alter table nodes drop column names;
{_V1_FTS}
insert into nodes_fts(nodes_fts) values ('rebuild');
create trigger word_tops_rewritten after update of title, body, paths on nodes
when old.seq <= (select upto from word_top_state) begin
    delete from word_tops where seq = old.seq;
    insert into word_top_late(seq) values (old.seq);
end;
delete from schema_migrations where version = 14;
delete from cursors where source = 'names';
"""


async def test_a_memory_from_before_names_splits_its_commits_on_the_next_sync(
    settings: Settings, repo: Repo
):
    """v14 gives the word index a names column (retrieval/names.py): the commits an older
    version stored are split by the first sync after the upgrade, once."""
    sha = repo.commit(
        "Catch only subclasses of Exception\n\n"
        "On the hosted runtime DeadlineExceededErrors can occur anywhere.\n"
    )
    question = "is the deadline exceeded error caught?"
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        for statement in _statements(_BEFORE_NAMES):  # the file as v13 left it
            await engine.db.execute(statement)
    async with open_engine(settings, repo.path) as engine:  # migrated to v14 on opening
        (names,) = await engine.db.fetchone("select names from nodes where ref = ?", (sha,))
        assert names == ""  # the column is there, not filled in yet
        report = await handlers.sync(engine, embed=False)
        (names,) = await engine.db.fetchone("select names from nodes where ref = ?", (sha,))
        found = await handlers.search(engine, question, vector=False)
        (rule,) = await engine.db.fetchone("select value from cursors where source = 'names'")
        async with engine.db.transaction():
            again = await refresh_names(engine.db, engine.project_id)
    assert report.commits == 0  # nothing new to walk: the split came from the stored nodes
    assert names == "deadline exceeded errors"
    assert found.results[0].ref == sha
    assert rule == "1"
    assert again == 0  # once: the rule is recorded, nothing is split again


# What v16 replaced: a node's files keyed by its id.
_FILES_BY_ID = """
create table node_files_v15 (
    node_id text not null references nodes(id) on delete cascade,
    path    text not null,
    primary key (node_id, path)
) without rowid;
insert into node_files_v15 select n.id, f.path from node_files f join nodes n on n.seq = f.node_seq;
drop table node_files;
alter table node_files_v15 rename to node_files;
create index node_files_path on node_files(path);
delete from schema_migrations where version = 16;
"""


async def test_a_memory_from_before_files_by_seq_keeps_every_nodes_files(
    settings: Settings, repo: Repo
):
    """v16 keys a node's files by its seq: every (node, path) pair an older memory held is
    there after the upgrade, and a file still finds its commits."""
    async with open_engine(settings, repo.path, create=True) as engine:
        await handlers.sync(engine, embed=False)
        before = await engine.db.fetchall(_PAIRS)
        for statement in _statements(_FILES_BY_ID):  # the file as v15 left it
            await engine.db.execute(statement)
        columns = [row[1] for row in await engine.db.fetchall("pragma table_info(node_files)")]
        assert columns == ["node_id", "path"]
    async with open_engine(settings, repo.path) as engine:  # migrated to v16 on opening
        columns = [row[1] for row in await engine.db.fetchall("pragma table_info(node_files)")]
        after = await engine.db.fetchall(_PAIRS)
        assert await engine.db.fetchall("pragma foreign_key_check") == []
        (deleted,) = await engine.db.fetchone("select node_seq from node_files limit 1")
        await engine.db.execute("delete from nodes where seq = ?", (deleted,))
        left = await engine.db.fetchone(
            "select count(*) from node_files where node_seq = ?", (deleted,)
        )
    assert columns == ["node_seq", "path"]
    assert after == before and len(before) > 3
    assert left == (0,)  # a node's files still go with it


_PAIRS = "select n.id, f.path from node_files f join nodes n on n.seq = f.node_seq order by 1, 2"
