"""Move one project's memory to another project id, inside the caller's transaction.

Node ids are ``sha256(project id, kind, natural key)``, so a new project id means a new id for
every node, and every table that names a node by id follows: ``links`` (both ends),
``contradictions`` (both), ``nodes.supersedes`` and ``sessions.node_id``. Every table with a
``project_id`` column moves too, found by looking, so a table added later is not left behind.
Rows stay where they are (``seq`` is kept), so the FTS indexes, ``embeddings`` and
``node_files`` (which names a node by its seq) need nothing but a duplicate's files moved;
the sqlite-vec table is partitioned by project, and its rows are moved to the new partition.

Where the new id already has a node for the same event (it was synced under the new id before
the carry-over), that node is kept, takes the old one's judgements when it has none, and the
old one goes. Foreign keys are checked at commit (``defer_foreign_keys``): in between, a child
row may already name a node id its node does not have yet.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..models import node_id
from . import vectors
from .db import Database

__all__ = ["rekey"]

BATCH = 2000
CACHE_KIB = 262_144  # a page cache of up to 256 MiB while the ids are rewritten
_ID = re.compile(r"^[0-9a-f]{64}$")
# (table, column) of every reference to a node id. A primary key that would collide with a
# row already there (a duplicate event) keeps that row: ``or ignore``, then the rest go.
# ``node_files`` names a node by its seq, which a move keeps: only a duplicate's go over to
# the node they duplicate (:func:`_follow_files`).
_NODE_REFS = (
    ("links", "src"),
    ("links", "dst"),
    ("contradictions", "old_id"),
    ("contradictions", "new_id"),
)
# Tables moved by hand (nodes, projects), or not ours to touch (virtual tables' shadows).
_SKIP = ("nodes", "projects", "project_aliases")
_SHADOWS = ("nodes_fts", "nodes_cjk", "nodes_vec", "passages_vec", "sqlite_")


async def rekey(db: Database, old: str, new: str, name: str, root: str, origin: str | None) -> int:
    """Move everything project ``old`` holds to project ``new``; return the nodes moved."""
    # Every node id changes to another random hash: the id index is rewritten in random
    # order, which the default 2 MB page cache turns into 30 s at 100k nodes.
    async with db.page_cache(CACHE_KIB):
        return await _move(db, old, new, name, root, origin)


async def _move(db: Database, old: str, new: str, name: str, root: str, origin: str | None) -> int:
    await db.execute("pragma defer_foreign_keys = on")
    await db.execute(
        "insert into projects (id, name, root, origin, created_at) "
        "select ?, ?, ?, ?, created_at from projects where id = ? "
        "on conflict(id) do update set created_at = min(projects.created_at, excluded.created_at)",
        (new, name, root, origin, old),
    )
    await _build_map(db, old, new)
    await _merge_duplicates(db)
    await _follow_files(db)
    for table, column in _NODE_REFS:
        await _follow(db, table, column)
    await _rename(db, "nodes", "supersedes")
    await _rename(db, "sessions", "node_id")
    # The duplicates' vectors become orphans, which the next embedding pass removes.
    await db.execute(
        "delete from nodes where id in (select r.old from temp.rekey r where r.duplicate)"
    )
    moved = await db.execute(
        "update nodes set id = (select r.new from temp.rekey r where r.old = nodes.id), "
        "project_id = ? where project_id = ?",
        (new, old),
    )
    await _move_vectors(db, old, new)
    for table in await _project_tables(db):
        await db.execute(
            f"update or ignore {table} set project_id = ? where project_id = ?", (new, old)
        )
        await db.execute(f"delete from {table} where project_id = ?", (old,))
    await _follow_audit(db, new)
    await db.execute("delete from projects where id = ?", (old,))
    await db.execute("drop table temp.rekey")
    await db.execute("pragma defer_foreign_keys = off")  # checked at commit all the same
    return moved


async def _build_map(db: Database, old: str, new: str) -> None:
    """``temp.rekey``: each node's old id, new id, and whether the new id is taken already."""
    await db.execute("drop table if exists temp.rekey")
    await db.execute(
        "create temp table rekey (old text primary key, new text not null, seq integer not null, "
        "duplicate integer not null default 0)"
    )
    last = -1
    while True:
        rows = await db.fetchall(
            "select seq, id, kind, ref from nodes where project_id = ? and seq > ? "
            "order by seq limit ?",
            (old, last, BATCH),
        )
        if not rows:
            break
        await db.executemany(
            "insert into temp.rekey (old, new, seq) values (?, ?, ?)",
            [(nid, node_id(new, kind, ref), seq) for seq, nid, kind, ref in rows],
        )
        last = rows[-1][0]
    await db.execute("create index temp.rekey_new on rekey(new)")
    await db.execute("create index temp.rekey_seq on rekey(seq)")
    await db.execute("update temp.rekey set duplicate = 1 where new in (select id from main.nodes)")


async def _merge_duplicates(db: Database) -> None:
    """A node already under the new id keeps its own judgement, else takes the old node's."""
    await db.execute(
        "update nodes set trust = (select o.trust from temp.rekey r join nodes o on o.id = r.old "
        "where r.new = nodes.id) where trust = 'candidate' and id in "
        "(select r.new from temp.rekey r join nodes o on o.id = r.old "
        "where r.duplicate and o.trust != 'candidate')"
    )
    await db.execute(
        "update nodes set supersedes = (select o.supersedes from temp.rekey r "
        "join nodes o on o.id = r.old where r.new = nodes.id) where supersedes is null and id in "
        "(select r.new from temp.rekey r join nodes o on o.id = r.old "
        "where r.duplicate and o.supersedes is not null)"
    )


async def _follow_files(db: Database) -> None:
    """A duplicate's files go to the node it duplicates (its own go with it)."""
    await db.execute(
        "update or ignore node_files set node_seq = (select n.seq from temp.rekey r "
        "join nodes n on n.id = r.new where r.seq = node_files.node_seq) "
        "where node_seq in (select seq from temp.rekey where duplicate)"
    )
    await db.execute(
        "delete from node_files where node_seq in (select seq from temp.rekey where duplicate)"
    )


async def _follow(db: Database, table: str, column: str) -> None:
    """Point ``table.column`` at the new ids; a row that would duplicate one there goes."""
    await db.execute(
        f"update or ignore {table} set {column} = "
        f"(select r.new from temp.rekey r where r.old = {table}.{column}) "
        f"where {column} in (select old from temp.rekey)"
    )
    await db.execute(f"delete from {table} where {column} in (select old from temp.rekey)")


async def _rename(db: Database, table: str, column: str) -> None:
    """Point ``table.column`` at the new ids, where nothing can collide."""
    await db.execute(
        f"update {table} set {column} = "
        f"(select r.new from temp.rekey r where r.old = {table}.{column}) "
        f"where {column} in (select old from temp.rekey)"
    )


async def _move_vectors(db: Database, old: str, new: str) -> None:
    """Vectors live in a partition per project: move them, a batch at a time. Without
    sqlite-vec loaded they cannot be moved; their nodes are embedded again instead."""
    if not await db.fetchone("select 1 from sqlite_master where name = ?", (vectors.TABLE,)):
        return
    if not db.vectors.loaded:
        await db.execute(
            "delete from embeddings where seq in (select seq from temp.rekey where not duplicate)"
        )
        return
    passages = bool(
        await db.fetchone("select 1 from sqlite_master where name = ?", (vectors.PASSAGE_TABLE,))
    )
    last = -1
    while True:
        seqs = [
            s
            for (s,) in await db.fetchall(
                "select seq from temp.rekey where not duplicate and seq > ? order by seq limit ?",
                (last, BATCH),
            )
        ]
        if not seqs:
            return
        last = seqs[-1]
        await _move_rows(db, vectors.TABLE, seqs, old, new)
        if passages:
            await _move_rows(db, vectors.PASSAGE_TABLE, vectors.passage_ids(seqs), old, new)


async def _move_rows(db: Database, table: str, rowids: list[int], old: str, new: str) -> None:
    for start in range(0, len(rowids), BATCH):
        batch = rowids[start : start + BATCH]
        marks = ",".join("?" * len(batch))
        rows = await db.fetchall(
            f"select rowid, embedding from {table} where rowid in ({marks}) and project_id = ?",
            (*batch, old),
        )
        if rows:
            await db.execute(
                f"delete from {table} where rowid in ({','.join('?' * len(rows))})",
                [r[0] for r in rows],
            )
            await db.executemany(
                f"insert into {table}(rowid, project_id, embedding) values (?, ?, ?)",
                [(rowid, new, blob) for rowid, blob in rows],
            )


async def _project_tables(db: Database) -> list[str]:
    """Every ordinary table with a ``project_id`` column, but those moved by hand."""
    tables = []
    for (table,) in await db.fetchall(
        "select name from sqlite_master where type = 'table' order by name"
    ):
        if table in _SKIP or table.startswith(_SHADOWS):
            continue
        columns = {row[1] for row in await db.fetchall(f"pragma table_info({table})")}
        if "project_id" in columns:
            tables.append(table)
    return tables


async def _follow_audit(db: Database, pid: str) -> None:
    """Audit rows name the nodes they judged (review, mark-stale): rename those ids too, so
    the trail still leads to the nodes."""
    for row_id, detail in await db.fetchall(
        "select id, detail from audit where project_id = ?", (pid,)
    ):
        try:
            data = json.loads(detail)
        except ValueError:
            continue
        renamed = await _rename_ids(db, data)
        if renamed != data:
            await db.execute(
                "update audit set detail = ? where id = ?",
                (json.dumps(renamed, sort_keys=True), row_id),
            )


async def _rename_ids(db: Database, value: Any) -> Any:
    if isinstance(value, str) and _ID.match(value):
        row = await db.fetchone("select new from temp.rekey where old = ?", (value,))
        return row[0] if row else value
    if isinstance(value, list):
        return [await _rename_ids(db, v) for v in value]
    if isinstance(value, dict):
        return {k: await _rename_ids(db, v) for k, v in value.items()}
    return value
