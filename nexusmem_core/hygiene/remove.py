"""Deleting nodes so that nothing of them stays in the database file: what forget and
``sync --prune-source`` share.

Inside the caller's one transaction, per node: a tombstone (hashes only), its vector (the
``embeddings`` row and the sqlite-vec row), cached contradiction verdicts naming it, its files
and the node itself (its FTS entry goes by trigger, its links by cascade). Deleted text must
not linger either: the FTS index is merged (FTS5 keeps a deleted row's terms in its old
segments until then); after the commit the file is VACUUMed (free pages, and the unused
corners of pages that were split or rebalanced since the row was written, keep old text) and
the WAL, whose older frames still hold it, checkpointed and truncated. The transaction marks
that compaction as due, so the next open finishes it for a process killed before it was done.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from ..store import audit
from ..store.db import Database
from ..store.fts import optimize
from ..store.maintenance import compact, mark_due
from ..store.nodes import delete_nodes

__all__ = ["Doomed", "by_source", "leaving_no_trace", "remove_nodes"]

BATCH = 500


@dataclass(frozen=True)
class Doomed:
    """A node about to be removed: enough to delete it and count it."""

    id: str
    seq: int
    source: str


def by_source(nodes: Sequence[Doomed]) -> dict[str, int]:
    """How many of ``nodes`` each source wrote, most first."""
    counts = Counter(n.source for n in nodes)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


async def remove_nodes(db: Database, nodes: Sequence[Doomed], operation: str) -> int:
    """Remove ``nodes`` and everything derived from them (inside the caller's transaction)."""
    from ..store import vectors  # loaded by a removal, not by every sync that imports this

    ids = [n.id for n in nodes]
    await audit.tombstone(db, ids, operation)
    await vectors.delete(db, [n.seq for n in nodes])
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        marks = ",".join("?" * len(batch))
        await db.execute(
            f"delete from contradictions where old_id in ({marks}) or new_id in ({marks})",
            (*batch, *batch),
        )
    removed = await delete_nodes(db, ids)
    if removed:
        await optimize(db)
    return removed


@asynccontextmanager
async def leaving_no_trace(db: Database) -> AsyncIterator[list[str]]:
    """The one write transaction that deletes, marked for compaction in itself, then the
    compaction: VACUUM and a truncated WAL (:mod:`~nexusmem_core.store.maintenance`; a process
    killed after the commit leaves the mark, and the next open finishes it). Yields a list
    that gets a note when either could not be done."""
    notes: list[str] = []
    async with db.transaction():
        await mark_due(db)
        yield notes
    done = await compact(db, rebuild_fts=False, vacuum=True)
    if done.error:
        notes.append(
            f"the database file could not be compacted ({done.error}), so its free space may "
            "still hold the removed text: run the same command again"
        )
    elif not done.wal_truncated:
        notes.append(
            "another process is reading the database, so its write-ahead log may still hold "
            "the removed text until the last one closes it"
        )
