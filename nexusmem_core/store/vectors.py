"""Vectors in sqlite-vec: one ``vec0`` table partitioned by project, so k-NN is exact per
project, beside an ``embeddings`` table that records each vector's model and source text.

An embedding model reads the head of a text (all-minilm: 256 tokens, ~1,000 characters of
prose), so one vector per node stands for a long section's first paragraphs only: a release's
section lists forty changes, a question names three from its middle. A long node (anything but
a file diff, whose text is code) is also embedded as *passages*: windows of ``PASSAGE_CHARS``
of its body after the head, each under its title, at most ``PASSAGES`` of them, in a second
``vec0`` table (``passages_vec``, rowid ``seq * SLOTS + n``). A node's distance to the query is
the least of its vectors'. They follow the node's own vector: written, replaced and deleted
with it, and current exactly when it is (``embeddings`` records both).

Only one model's vectors exist at a time: when the configured model changes, the table is
dropped and rebuilt (vectors from two models are never ranked together). Unchanged text is
never embedded again: a node is pending only when it has no vector for the current model, or
its content hash moved since.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass, field

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
    "passage_ids",
    "passages",
    "pending",
    "prepare",
    "prune_orphans",
    "store",
    "texts",
]

TABLE = "nodes_vec"
PASSAGE_TABLE = "passages_vec"
EMBED_CHARS = 2000  # title and the head of the body: enough for meaning, bounded for speed
HEAD_CHARS = 800  # of the body, read into the node's own vector with its title
PASSAGE_CHARS = 800  # one passage of the body after the head, under the node's title
OVERLAP = 100  # characters each passage repeats of the one before, so no sentence is cut off
PASSAGES = 7  # at most, after the head: ~5,000 characters of body in all
SLOTS = PASSAGES + 1  # passage rowids: seq * SLOTS + 1 .. seq * SLOTS + PASSAGES
NO_PASSAGES = frozenset(("file_diff",))


def _blob(vector: list[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


@dataclass
class Pending:
    seq: int
    project_id: str
    text: str
    content_hash: str
    passages: list[str] = field(default_factory=list)


def passages(kind: str, title: str, body: str) -> list[str]:
    """The passages of a node after its head (none for a short one), each under its title."""
    if kind in NO_PASSAGES or len(body) <= HEAD_CHARS + OVERLAP:
        return []
    out: list[str] = []
    start = HEAD_CHARS - OVERLAP
    while start < len(body) - OVERLAP and len(out) < PASSAGES:
        end = start + PASSAGE_CHARS
        window = body[start:end]
        if end < len(body) and " " in window:  # end on a word, not inside one
            window = window[: window.rfind(" ")]
        if not body[start - 1].isspace() and " " in window:  # and start on one
            window = window[window.find(" ") + 1 :]
        out.append(f"{title}\n{window.strip()}")
        start = end - OVERLAP
    return out


def passage_ids(seqs: list[int]) -> list[int]:
    return [seq * SLOTS + n for seq in seqs for n in range(1, SLOTS)]


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
    await db.execute(f"drop table if exists {PASSAGE_TABLE}")
    await db.execute("delete from embeddings")
    old = ", ".join(f"{m} ({n} vectors)" for m, n in rows)
    return f"embedding model changed from {old} to {model}: re-embedding everything"


async def pending(db: Database, model: str, limit: int) -> list[Pending]:
    """Nodes without a current vector for ``model``, oldest rows first."""
    rows = await db.fetchall(
        "select n.seq, n.project_id, n.kind, n.title, n.body, n.content_hash from nodes n "
        "left join embeddings e on e.seq = n.seq and e.model = ? "
        "and e.content_hash = n.content_hash where e.seq is null order by n.seq limit ?",
        (model, limit),
    )
    return [
        Pending(seq, pid, f"{title}\n{body}"[:EMBED_CHARS], digest, passages(kind, title, body))
        for seq, pid, kind, title, body, digest in rows
    ]


def texts(items: list[Pending]) -> list[str]:
    """What to embed for ``items``: each node's text, then its passages."""
    return [text for item in items for text in (item.text, *item.passages)]


async def store(
    db: Database, model: str, items: list[Pending], embedded: list[list[float]]
) -> None:
    """Write one batch of vectors (inside the caller's transaction): ``embedded`` holds one
    vector for each of :func:`texts` of ``items``, in that order."""
    wanted = len(texts(items))
    if len(embedded) != wanted:
        raise StoreError(f"{len(embedded)} vectors for {wanted} texts")
    dims = len(embedded[0])
    existing = await _table_dims(db)
    if existing is not None and existing != dims:
        # Same model name, new dimension (a re-pulled model): its old vectors are not comparable.
        await db.execute(f"drop table {TABLE}")
        await db.execute(f"drop table if exists {PASSAGE_TABLE}")
        await db.execute("delete from embeddings")
        existing = None
    for table in (TABLE, PASSAGE_TABLE):
        await db.execute(
            f"create virtual table if not exists {table} using vec0(project_id text partition "
            f"key, embedding float[{dims}] distance_metric=cosine)"
        )
    vectors: list[list[float]] = []  # each node's own
    parts: list[tuple[int, str, bytes]] = []
    at = 0
    for item in items:
        vectors.append(embedded[at])
        for n, vector in enumerate(embedded[at + 1 : at + 1 + len(item.passages)], start=1):
            parts.append((item.seq * SLOTS + n, item.project_id, _blob(vector)))
        at += 1 + len(item.passages)
    seqs = [item.seq for item in items]
    marks = ",".join("?" * len(seqs))
    await db.execute(f"delete from {TABLE} where rowid in ({marks})", seqs)
    await _delete_passages(db, seqs)
    await db.executemany(
        f"insert into {TABLE}(rowid, project_id, embedding) values (?, ?, ?)",
        [(i.seq, i.project_id, _blob(v)) for i, v in zip(items, vectors, strict=True)],
    )
    if parts:
        await db.executemany(
            f"insert into {PASSAGE_TABLE}(rowid, project_id, embedding) values (?, ?, ?)", parts
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
            await _delete_passages(db, batch)
        await db.execute(f"delete from embeddings where seq in ({marks})", batch)
    return len(orphans)


async def _delete_passages(db: Database, seqs: list[int]) -> None:
    if not await _has_table(db, PASSAGE_TABLE):
        return
    ids = passage_ids(seqs)
    for start in range(0, len(ids), 4_000):
        batch = ids[start : start + 4_000]
        marks = ",".join("?" * len(batch))
        await db.execute(f"delete from {PASSAGE_TABLE} where rowid in ({marks})", batch)


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
    """The ``k`` nearest nodes of one project: (seq, cosine distance of the node's nearest
    vector, its own or a passage's), nearest first. Exact (sqlite-vec) up to
    ``sketches.EXACT_UP_TO`` vectors, approximate beyond (store/sketches.py); passages, few
    (long nodes only), are always scanned exactly."""
    sketch = await sketches.current(db)
    if sketch is not None:
        hits = await sketches.nearest(db, sketch, project_id, vector, k)
    else:
        hits = await _exact(db, TABLE, project_id, vector, k)
    if not await _has_table(db, PASSAGE_TABLE):
        return hits
    best = dict(hits)
    for rowid, distance in await _exact(db, PASSAGE_TABLE, project_id, vector, k):
        seq = rowid // SLOTS
        best[seq] = min(distance, best.get(seq, distance))
    return sorted(best.items(), key=lambda hit: hit[1])[:k]


async def _exact(
    db: Database, table: str, project_id: str, vector: list[float], k: int
) -> list[tuple[int, float]]:
    return [
        (int(rowid), float(d))
        for rowid, d in await db.fetchall(
            f"select rowid, distance from {table} where embedding match ? and k = ? "
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


async def _has_table(db: Database, name: str = TABLE) -> bool:
    return bool(await db.fetchone("select 1 from sqlite_master where name = ?", (name,)))


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
            await _delete_passages(db, batch)
        removed += await db.execute(f"delete from embeddings where seq in ({marks})", batch)
    return removed
