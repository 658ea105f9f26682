"""Approximate k-NN for big memories: a sign-bit sketch of every vector scanned in memory,
then the nearest candidates rescored from an int8 copy.

sqlite-vec 0.1 scans every float vector of a project for each query: ~1 µs a vector, 0.5 s at
500k nodes (bench/bench_scale.py). Here each vector also keeps, in its ``embeddings`` row:

- ``bits``: the sign of each dimension, packed (48 bytes for 384 dimensions). A process holds
  these for the whole memory in a numpy array (24 MB at 500k) and ranks every vector by
  Hamming distance to the query's signs: a few ms at 500k.
- ``i8``: the vector scaled so its largest component is 127 (384 bytes). The ``SHARE`` of
  vectors nearest by Hamming distance (at least ``FLOOR``) are read back by seq and ranked by
  cosine, which no scale changes: the order the caller gets.

On 8,000 real all-minilm vectors, rescoring the nearest 2% by sign kept 96% of the exact top
10 (1%: 92%, 5%: 99%). So memories up to ``EXACT_UP_TO`` vectors are scanned exactly by
sqlite-vec, and only bigger ones take this path.

A process reads every vector's signs before its first approximate search. They are kept in
pages of 4,096 seqs (``vec_sketch_pages``), so that read takes a few large blobs: 0.17 s at
500k vectors, against 1.2-2 s row by row and 0.5 s for one exact scan. Triggers mark the page
of every row written or removed (``vec_sketch_dirty``); sync rebuilds marked pages
(``refresh_pages``), and a reader reads a marked page's rows instead. While more than a few
pages are marked (an upgraded memory before its next sync), a one-shot query scans exactly and
a long-lived process (the MCP server, ``keep_warm``) reads in the background, on a connection
of its own, answering exactly until the sketch is in. It then follows the database through
``vec_generation``, which triggers on ``embeddings`` keep: ``changes`` moves with every row
written or removed, ``rewrites`` only when one is removed, replaced, or added below the highest
seq. A search reads the pair (one small row): unchanged, the array stands; only ``changes``
moved, the rows past the highest seq it holds are appended; ``rewrites`` moved, it is read
again.
numpy is imported here only, on the vector arm's path, never on a hook's.
"""

from __future__ import annotations

import asyncio
import json
import math
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..errors import StoreError
from ..logging import get_logger
from .db import DB_ERRORS, MMAP_BYTES, Database, sqlite_module

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "EXACT_UP_TO",
    "FLOOR",
    "PAGE_BITS",
    "ROW_PAGES",
    "SHARE",
    "Sketch",
    "current",
    "encode",
    "keep_warm",
    "nearest",
    "refresh_pages",
]

log = get_logger("store")

EXACT_UP_TO = 20_000  # vectors up to which sqlite-vec's exact scan is used (~28 ms at 20k)
SHARE = 0.02  # of the vectors, the nearest by sign that are rescored
FLOOR = 1_000  # rescored at least, and never fewer than 10x the k asked for
PAGE_BITS = 12  # sign page p holds the vectors of seqs [p << 12, (p + 1) << 12)
ROW_PAGES = 2  # pages a one-shot query still reads row by row (or a tenth of them) to use it


@dataclass
class Sketch:
    """One process's copy of every vector's signs, as of ``changes``/``rewrites``."""

    changes: int
    rewrites: int
    complete: bool  # every vector has its sketch (one embedded before v9 may not, until sync)
    size: int  # vectors in the database when read
    cheap: bool = False  # its pages are nearly all current: reading it costs less than a scan
    seqs: np.ndarray | None = None  # int64, ascending
    words: np.ndarray | None = None  # uint64, (words per vector, vectors): one row a scan

    @property
    def last(self) -> int:
        """The highest seq held; 0 while the array is not read."""
        return int(self.seqs[-1]) if self.seqs is not None and len(self.seqs) else 0


_sketches: weakref.WeakKeyDictionary[Database, Sketch] = weakref.WeakKeyDictionary()
_locks: weakref.WeakKeyDictionary[Database, asyncio.Lock] = weakref.WeakKeyDictionary()
_warming: weakref.WeakKeyDictionary[Database, asyncio.Task[None]] = weakref.WeakKeyDictionary()
_warm_in_background = False
# What a read of the signs may meet (the file gone, a vector not sketched after all): the
# search then scans exactly.
READ_ERRORS: tuple[type[Exception], ...] = (*DB_ERRORS, OSError, ValueError)


def encode(vectors: list[list[float]]) -> list[tuple[bytes, bytes]]:
    """Each vector's (bits, i8): its signs packed little-endian into whole 64-bit words, and
    the vector scaled so its largest component is 127, rounded to int8."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    dims = matrix.shape[1]
    padded = np.zeros((len(matrix), math.ceil(dims / 64) * 64), dtype=bool)
    padded[:, :dims] = matrix > 0
    bits = np.packbits(padded, axis=1, bitorder="little")
    peak = np.abs(matrix).max(axis=1)
    i8 = np.rint(matrix / np.where(peak > 0, peak, 1.0)[:, None] * 127).astype(np.int8)
    return [(bits[i].tobytes(), i8[i].tobytes()) for i in range(len(matrix))]


def keep_warm() -> None:
    """For a long-lived process (the MCP server): when the sketch is due but its pages are
    stale, read it in the background on a connection of its own, answering exactly meanwhile.
    Without this (a CLI query), it is then not read at all: row by row, that costs more than
    one exact scan."""
    global _warm_in_background
    _warm_in_background = True


async def current(db: Database, *, wait: bool = False) -> Sketch | None:
    """This process's sketch of ``db``, brought up to date; None while the memory is small
    enough for the exact scan, some vector lacks its sketch, or the sketch is not read yet.
    ``wait`` reads it now if it is due; otherwise it is read in the background, if at all
    (``keep_warm``)."""
    # One update at a time: two searches appending the same rows would hold them twice.
    async with _locks.setdefault(db, asyncio.Lock()):
        row = await db.fetchone("select changes, rewrites from vec_generation where id = 1")
        changes, rewrites = (int(row[0]), int(row[1])) if row else (0, 0)
        held = _sketches.get(db)
        if held is None or held.rewrites != rewrites or (held.changes != changes and not held.last):
            held = _sketches[db] = await _count(db, changes, rewrites)
        elif held.changes != changes:
            await _append(db, held, changes)
        due = held.complete and held.size > EXACT_UP_TO and held.seqs is None
        if due and (wait or held.cheap):
            try:
                fresh = await anyio.to_thread.run_sync(_read_apart, db.path, db.immutable)
            except READ_ERRORS as err:  # the exact scan answers instead
                log.debug("sketch_not_read", database=str(db.path), error=str(err))
                return None
            if fresh.rewrites == held.rewrites:  # rows added since: the next call appends them
                held = _sketches[db] = fresh
        elif due and _warm_in_background and db not in _warming:
            task = asyncio.get_running_loop().create_task(_warm(db))
            _warming[db] = task
            task.add_done_callback(lambda _: _warming.pop(db, None))
    if not held.complete or held.size <= EXACT_UP_TO or held.seqs is None:
        return None
    return held


async def _count(db: Database, changes: int, rewrites: int) -> Sketch:
    """A sketch of what the database holds now, its array not read yet."""
    total, unsketched, pages, dirty = await db.fetchone(
        "select (select count(*) from embeddings), "
        "exists(select 1 from embeddings where bits is null), "
        "(select count(*) from vec_sketch_pages), (select count(*) from vec_sketch_dirty)"
    ) or (0, 0, 0, 0)
    sketch = Sketch(changes, rewrites, complete=not unsketched, size=int(total))
    sketch.cheap = dirty <= max(ROW_PAGES, pages // 10)
    return sketch


async def _warm(db: Database) -> None:
    """Read the sketch on a connection of its own (neither of the database's two waits on
    it), then hand it over unless the vectors were rewritten meanwhile. Rows added since are
    appended by the next ``current``, as any are."""
    try:
        fresh = await anyio.to_thread.run_sync(_read_apart, db.path, db.immutable)
    except READ_ERRORS as err:  # the file went away, the process is closing: exact it stays
        log.debug("sketch_not_read", database=str(db.path), error=str(err))
        return
    except Exception as err:  # a background task: said, never raised into the void
        log.warning("sketch_not_read", database=str(db.path), error=repr(err))
        return
    async with _locks.setdefault(db, asyncio.Lock()):
        held = _sketches.get(db)
        if held is not None and held.seqs is None and held.rewrites == fresh.rewrites:
            _sketches[db] = fresh


def _read_apart(path: Path, immutable: bool) -> Sketch:
    """Every vector's signs and the change counters, read in one snapshot on a connection of
    its own: each current page whole, the rows of the others one by one."""
    import numpy as np

    mode = "mode=ro&immutable=1" if immutable else "mode=ro"
    con = sqlite_module().connect(f"file:{path.as_posix()}?{mode}", uri=True, timeout=15)
    con.execute(f"pragma mmap_size = {MMAP_BYTES}")  # the pages are large blobs: 2x faster
    seqs: list[np.ndarray] = []
    words: list[np.ndarray] = []
    try:
        con.execute("begin")
        changes, rewrites = con.execute(
            "select changes, rewrites from vec_generation where id = 1"
        ).fetchone()
        dirty = {page for (page,) in con.execute("select page from vec_sketch_dirty")}
        pages = {
            page: (page_seqs, page_bits)
            for page, page_seqs, page_bits in con.execute(
                "select page, seqs, bits from vec_sketch_pages"
            )
            if page not in dirty
        }
        (top,) = con.execute("select max(seq) from embeddings").fetchone()
        for page in range(0, -1 if top is None else (top >> PAGE_BITS) + 1):
            if page in pages:
                page_seqs, page_bits = pages[page]
                seqs.append(np.frombuffer(page_seqs, dtype="<i8").astype(np.int64))
                words.append(np.frombuffer(page_bits, dtype="<u8").reshape(len(seqs[-1]), -1))
                continue
            rows = con.execute(_PAGE_ROWS, _page_span(page)).fetchall()
            if any(bits is None for _, bits in rows):
                raise ValueError("a vector without its sketch: the next sync makes it")
            if rows:
                page_seqs, page_words = _arrays(rows)
                seqs.append(page_seqs)
                words.append(page_words)
        con.execute("commit")
    finally:
        con.close()
    sketch = Sketch(int(changes), int(rewrites), complete=True, size=sum(map(len, seqs)))
    if seqs:
        sketch.seqs = np.concatenate(seqs)
        sketch.words = np.ascontiguousarray(np.concatenate(words).T)
    return sketch


_PAGE_ROWS = "select seq, bits from embeddings where seq >= ? and seq < ? order by seq"


def _page_span(page: int) -> tuple[int, int]:
    return page << PAGE_BITS, (page + 1) << PAGE_BITS


async def refresh_pages(db: Database) -> int:
    """Rebuild the sign pages whose rows changed (inside the caller's transaction), so a
    process reads the whole sketch in a few large blobs; returns how many. A page with a
    vector not sketched yet stays marked, and is read row by row meanwhile."""

    done = 0
    for (page,) in await db.fetchall("select page from vec_sketch_dirty order by page"):
        rows = await db.fetchall(_PAGE_ROWS, _page_span(page))
        if any(bits is None for _, bits in rows):
            continue
        if rows:
            seqs, _ = _arrays(rows)
            await db.execute(
                "insert into vec_sketch_pages (page, seqs, bits) values (?, ?, ?) "
                "on conflict(page) do update set seqs = excluded.seqs, bits = excluded.bits",
                (page, seqs.astype("<i8").tobytes(), b"".join(r[1] for r in rows)),
            )
        else:
            await db.execute("delete from vec_sketch_pages where page = ?", (page,))
        await db.execute("delete from vec_sketch_dirty where page = ?", (page,))
        done += 1
    return done


async def _append(db: Database, sketch: Sketch, changes: int) -> None:
    """Rows added past the highest seq held (``rewrites`` did not move: nothing else did)."""
    rows = await db.fetchall(
        "select seq, bits from embeddings where seq > ? order by seq", (sketch.last,)
    )
    sketch.changes = changes
    sketch.size += len(rows)
    if any(bits is None for _, bits in rows):  # cannot be, short of a bug: exact until re-read
        sketch.complete, sketch.seqs, sketch.words = False, None, None
        return
    await anyio.to_thread.run_sync(_fill, sketch, rows)


def _arrays(rows: list[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """(seqs, words) of (seq, bits) rows: words one row a vector."""
    import numpy as np

    seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    packed = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.uint64)
    return seqs, packed.reshape(len(rows), -1)


def _fill(sketch: Sketch, rows: list[tuple[Any, ...]]) -> None:
    import numpy as np

    if not rows:
        return
    seqs, rowwise = _arrays(rows)
    words = np.ascontiguousarray(rowwise.T)
    if sketch.seqs is not None and sketch.words is not None:
        seqs = np.concatenate([sketch.seqs, seqs])
        words = np.concatenate([sketch.words, words], axis=1)
    # Seqs before words: a scan running meanwhile reads words first, then seqs (_by_sign).
    sketch.seqs = seqs
    sketch.words = words


async def nearest(
    db: Database, sketch: Sketch, project_id: str, vector: list[float], k: int
) -> list[tuple[int, float]]:
    """The ``k`` nearest nodes of one project: (seq, cosine distance from the int8 copy),
    nearest first."""
    import numpy as np

    if k <= 0:
        return []
    query = np.asarray(vector, dtype=np.float32)
    query /= float(np.linalg.norm(query)) or 1.0
    assert sketch.seqs is not None and sketch.words is not None
    words = sketch.words
    if not len(query) <= words.shape[0] * 64 < len(query) + 64:
        raise StoreError(
            f"the query vector has {len(query)} dimensions, the stored vectors about "
            f"{words.shape[0] * 64}"
        )
    wanted = max(FLOOR, 10 * k, math.ceil(SHARE * len(sketch.seqs)))
    seqs = await anyio.to_thread.run_sync(_by_sign, sketch, query, wanted)
    # By seq alone (joining nodes cost 3x the read), in ascending order, from a JSON array:
    # 10,000 rows at 500k nodes in a third of the time of an IN list of the same seqs.
    found = await db.fetchall(
        "select e.seq, e.i8 from json_each(?) j join embeddings e on e.seq = j.value "
        "where e.i8 is not null",
        (json.dumps(seqs),),
    )
    # Another project's nodes in the file (as after its origin moved, before a sync carried
    # them over) are filtered after ranking, so then every candidate is ranked.
    shared = await db.fetchone("select 1 from projects where id != ? limit 1", (project_id,))
    ranked = await anyio.to_thread.run_sync(_rescore, found, query, len(found) if shared else k)
    if shared:
        ranked = await _of_project(db, ranked, project_id, k)
    return ranked[:k]


async def _of_project(
    db: Database, ranked: list[tuple[int, float]], project_id: str, k: int
) -> list[tuple[int, float]]:
    """The first ``k`` of ``ranked`` whose node belongs to ``project_id``."""
    out: list[tuple[int, float]] = []
    for start in range(0, len(ranked), 500):
        batch = ranked[start : start + 500]
        marks = ",".join("?" * len(batch))
        mine = {
            seq
            for (seq,) in await db.fetchall(
                f"select seq from nodes where project_id = ? and seq in ({marks})",
                (project_id, *(seq for seq, _ in batch)),
            )
        }
        out += [hit for hit in batch if hit[0] in mine]
        if len(out) >= k:
            break
    return out


def _by_sign(sketch: Sketch, query: np.ndarray, wanted: int) -> list[int]:
    """The seqs of the ``wanted`` vectors whose signs differ least from the query's, ascending."""
    import numpy as np

    # Words, then seqs: an append meanwhile (_fill) stores seqs first, so these seqs are at
    # least as long as these words, and their common prefix is the same.
    words, seqs = sketch.words, sketch.seqs
    assert words is not None and seqs is not None
    count = words.shape[1]
    signs = np.zeros(words.shape[0] * 64, dtype=bool)
    signs[: len(query)] = query > 0
    mine = np.packbits(signs, bitorder="little").view(np.uint64)
    distance = np.zeros(count, dtype=np.uint16)
    scratch = np.empty(count, dtype=np.uint64)
    ones = np.empty(count, dtype=np.uint8)
    for w in range(words.shape[0]):
        np.bitwise_xor(words[w], mine[w], out=scratch)
        np.bitwise_count(scratch, out=ones)
        np.add(distance, ones, out=distance)
    whole = wanted >= count
    chosen = np.arange(count) if whole else np.argpartition(distance, wanted - 1)[:wanted]
    return list(np.sort(seqs[chosen]).tolist())


def _rescore(found: list[tuple[Any, ...]], query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` of ``found`` (seq, int8 copy) nearest the query by cosine, nearest first."""
    import numpy as np

    dims = len(query)
    rows = [r for r in found if len(r[1]) == dims]
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.int8).reshape(len(rows), dims)
    vectors = matrix.astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1)
    distance = 1.0 - (vectors @ query) / np.where(norms > 0, norms, 1.0)
    best = np.argpartition(distance, k - 1)[:k] if k < len(rows) else np.arange(len(rows))
    best = best[np.argsort(distance[best], kind="stable")]
    return [(int(rows[i][0]), float(distance[i])) for i in best]
