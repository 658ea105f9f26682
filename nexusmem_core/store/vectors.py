"""Vectors in sqlite-vec: one ``vec0`` table partitioned by project, so k-NN is exact per
project, beside an ``embeddings`` table that records each vector's model and source text.

Only one model's vectors exist at a time: when the configured model changes, the table is
dropped and rebuilt (vectors from two models are never ranked together). Unchanged text is
never embedded again: a node is pending only when it has no vector for the current model, or
its content hash moved since.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from ..errors import StoreError
from . import sketches
from .db import Database

__all__ = [
    "Pending",
    "VectorCoverage",
    "backfill_sketches",
    "coverage",
    "delete",
    "embedded_among",
    "has_vectors",
    "knn",
    "pending",
    "prepare",
    "prune_orphans",
    "store",
]

TABLE = "nodes_vec"
EMBED_CHARS = 2000  # title and the head of the body: enough for meaning, bounded for speed


def _blob(vector: list[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


@dataclass
class Pending:
    seq: int
    project_id: str
    text: str
    content_hash: str


async def _table_dims(db: Database) -> int | None:
    row = await db.fetchone("select sql from sqlite_master where name = ?", (TABLE,))
    if row is None:
        return None
    sql = row[0]
    return int(sql.split("float[", 1)[1].split("]", 1)[0])


async def prepare(db: Database, model: str) -> str | None:
    """Drop the vectors of any other model (in the caller's transaction); say so if it did."""
    rows = await db.fetchall(
        "select model, count(*) from embeddings where model != ? group by model", (model,)
    )
    if not rows:
        return None
    await db.execute(f"drop table if exists {TABLE}")
    await db.execute("delete from embeddings")
    old = ", ".join(f"{m} ({n} vectors)" for m, n in rows)
    return f"embedding model changed from {old} to {model}: re-embedding everything"


async def pending(db: Database, model: str, limit: int) -> list[Pending]:
    """Nodes without a current vector for ``model``, oldest rows first."""
    rows = await db.fetchall(
        "select n.seq, n.project_id, n.title, n.body, n.content_hash from nodes n "
        "left join embeddings e on e.seq = n.seq and e.model = ? "
        "and e.content_hash = n.content_hash where e.seq is null order by n.seq limit ?",
        (model, limit),
    )
    return [
        Pending(seq, pid, f"{title}\n{body}"[:EMBED_CHARS], digest)
        for seq, pid, title, body, digest in rows
    ]


async def store(db: Database, model: str, items: list[Pending], vectors: list[list[float]]) -> None:
    """Write one batch of vectors (inside the caller's transaction)."""
    dims = len(vectors[0])
    existing = await _table_dims(db)
    if existing is not None and existing != dims:
        # Same model name, new dimension (a re-pulled model): its old vectors are not comparable.
        await db.execute(f"drop table {TABLE}")
        await db.execute("delete from embeddings")
        existing = None
    if existing is None:
        await db.execute(
            f"create virtual table {TABLE} using vec0(project_id text partition key, "
            f"embedding float[{dims}] distance_metric=cosine)"
        )
    seqs = [item.seq for item in items]
    marks = ",".join("?" * len(seqs))
    await db.execute(f"delete from {TABLE} where rowid in ({marks})", seqs)
    await db.executemany(
        f"insert into {TABLE}(rowid, project_id, embedding) values (?, ?, ?)",
        [(i.seq, i.project_id, _blob(v)) for i, v in zip(items, vectors, strict=True)],
    )
    now = int(time.time())
    await db.executemany(
        "insert into embeddings (seq, model, dims, content_hash, embedded_at, bits, i8) "
        "values (?, ?, ?, ?, ?, ?, ?) on conflict(seq) do update set model = excluded.model, "
        "dims = excluded.dims, content_hash = excluded.content_hash, "
        "embedded_at = excluded.embedded_at, bits = excluded.bits, i8 = excluded.i8",
        [
            (i.seq, model, dims, i.content_hash, now, bits, i8)
            for i, (bits, i8) in zip(items, sketches.encode(vectors), strict=True)
        ],
    )


async def backfill_sketches(db: Database, batch: int = 2_000) -> int:
    """Sketch the vectors embedded before schema v9 (inside the caller's transaction): read
    them from sqlite-vec in one pass. Returns how many; 0 when every vector has its sketch."""
    if not db.vectors.loaded or not await _has_table(db):
        return 0
    if not await db.fetchone("select 1 from embeddings where bits is null limit 1"):
        return 0
    done = 0
    async with db.conn.execute(
        f"select v.rowid, v.embedding from {TABLE} v join embeddings e on e.seq = v.rowid "
        "where e.bits is null"
    ) as cursor:
        while rows := list(await cursor.fetchmany(batch)):
            dims = len(rows[0][1]) // 4
            vectors = [list(struct.unpack(f"{dims}f", blob)) for _, blob in rows]
            await db.executemany(
                "update embeddings set bits = ?, i8 = ? where seq = ?",
                [
                    (b, q, seq)
                    for (seq, _), (b, q) in zip(rows, sketches.encode(vectors), strict=True)
                ],
            )
            done += len(rows)
    return done


async def prune_orphans(db: Database) -> int:
    """Forget the vectors of nodes that no longer exist (inside the caller's transaction)."""
    orphans = [
        s
        for (s,) in await db.fetchall(
            "select seq from embeddings where seq not in (select seq from nodes)"
        )
    ]
    for start in range(0, len(orphans), 500):
        batch = orphans[start : start + 500]
        marks = ",".join("?" * len(batch))
        if await _table_dims(db) is not None:
            await db.execute(f"delete from {TABLE} where rowid in ({marks})", batch)
        await db.execute(f"delete from embeddings where seq in ({marks})", batch)
    return len(orphans)


async def embedded_among(db: Database, model: str, seqs: list[int]) -> set[int]:
    """Which of ``seqs`` have a current vector from ``model``."""
    if not seqs:
        return set()
    marks = ",".join("?" * len(seqs))
    rows = await db.fetchall(
        f"select e.seq from embeddings e join nodes n on n.seq = e.seq "
        f"and n.content_hash = e.content_hash where e.model = ? and e.seq in ({marks})",
        (model, *seqs),
    )
    return {int(seq) for (seq,) in rows}


async def has_vectors(db: Database, model: str) -> bool:
    return (
        await db.fetchone("select 1 from embeddings where model = ? limit 1", (model,)) is not None
    )


async def knn(
    db: Database, project_id: str, vector: list[float], k: int
) -> list[tuple[int, float]]:
    """The ``k`` nearest nodes of one project: (seq, cosine distance), nearest first. Exact
    (sqlite-vec) up to ``sketches.EXACT_UP_TO`` vectors, approximate beyond (store/sketches.py)."""
    sketch = await sketches.current(db)
    if sketch is not None:
        return await sketches.nearest(db, sketch, project_id, vector, k)
    return [
        (int(seq), float(d))
        for seq, d in await db.fetchall(
            f"select rowid, distance from {TABLE} where embedding match ? and k = ? "
            "and project_id = ? order by distance",
            (_blob(vector), k, project_id),
        )
    ]


@dataclass
class VectorCoverage:
    model: str
    embedded: int
    pending: int


async def coverage(db: Database, model: str) -> VectorCoverage:
    (total,) = await db.fetchone("select count(*) from nodes") or (0,)
    (done,) = await db.fetchone(
        "select count(*) from embeddings e join nodes n on n.seq = e.seq "
        "and n.content_hash = e.content_hash where e.model = ?",
        (model,),
    ) or (0,)
    return VectorCoverage(model, done, total - done)


async def _has_table(db: Database) -> bool:
    return bool(await db.fetchone("select 1 from sqlite_master where name = ?", (TABLE,)))


async def delete(db: Database, seqs: list[int], *, check_only: bool = False) -> int:
    """Delete the vectors of nodes ``seqs`` (inside the caller's transaction); return how many.

    Refuses, before deleting anything, when some of them have vectors and this connection
    cannot reach the sqlite-vec table: a removed node's vector must not outlive it.
    ``check_only`` makes that check and deletes nothing.
    """
    table = await _has_table(db)
    batches = [seqs[i : i + 500] for i in range(0, len(seqs), 500)]
    if table and not db.vectors.loaded:
        for batch in batches:
            marks = ",".join("?" * len(batch))
            if await db.fetchone(f"select 1 from embeddings where seq in ({marks}) limit 1", batch):
                raise StoreError(
                    f"{db.path}: these nodes have vectors, and deleting them needs sqlite-vec, "
                    f"which is not loaded ({db.vectors.reason}); make it loadable (unset "
                    "NEXUSMEM_VECTOR=off) and run the command again"
                )
    if check_only:
        return 0
    removed = 0
    for batch in batches:
        marks = ",".join("?" * len(batch))
        if table and db.vectors.loaded:
            await db.execute(f"delete from {TABLE} where rowid in ({marks})", batch)
        removed += await db.execute(f"delete from embeddings where seq in ({marks})", batch)
    return removed
