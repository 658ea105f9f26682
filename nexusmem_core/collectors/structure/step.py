"""The sync step: rebuild ``import_edges`` for this project, unless nothing it reads changed.

A build is decided by a digest of what it reads: the file listing, the size and mtime of every
source file and manifest (``go.mod``, ``Cargo.toml``, ``pyproject.toml``...), the skip globs,
the deny list and the extractors' version. When the digest equals the one stored in
``cursors`` (source ``structure``), the stored edges stand and no file is read; otherwise the
graph is built again from scratch and replaces the old one, inside the sync's transaction.

Paths are what an edge stores, so a path holding a forgotten value (the deny list) or a secret
(the redaction table) keeps its edges out of the table.
"""

from __future__ import annotations

import hashlib

import anyio.to_thread

from ...engine import Engine
from ...hygiene.deny import DenyFilter, load_entries
from ...models import SyncReport
from ...redact import redact
from ...store.nodes import get_cursor, set_cursor
from .graph import Edge, build_graph
from .sources import list_tree

__all__ = ["CURSOR", "VERSION", "sync_structure"]

CURSOR = "structure"
VERSION = "1"  # bump when an extractor changes what it finds, so every graph is rebuilt


async def sync_structure(engine: Engine, report: SyncReport) -> None:
    """Bring this project's import graph up to date; ``report.import_edges`` is its size."""
    db, pid = engine.db, engine.project_id
    skip = engine.config.sources.diff.skip_globs
    listing = await list_tree(engine.repo.root, skip)
    entries = await load_entries(db, pid)
    h = hashlib.sha256(f"{VERSION}\x00{listing.digest}\x00{skip!r}".encode())
    for entry in entries:
        h.update(f"\x00{entry.kind}\x00{entry.value}".encode())
    digest = h.hexdigest()
    if await get_cursor(db, pid, CURSOR) == digest:
        row = await db.fetchone("select count(*) from import_edges where project_id = ?", (pid,))
        report.import_edges = int(row[0]) if row else 0
        return
    graph = await anyio.to_thread.run_sync(build_graph, listing)
    edges = _kept(graph.edges, DenyFilter(entries))
    await db.execute("delete from import_edges where project_id = ?", (pid,))
    await db.executemany(
        "insert into import_edges (project_id, src, dst, lang) values (?, ?, ?, ?)",
        [(pid, e.src, e.dst, e.lang) for e in edges],
    )
    await set_cursor(db, pid, CURSOR, digest)
    report.import_edges = len(edges)


def _kept(edges: list[Edge], deny: DenyFilter) -> list[Edge]:
    """The edges whose paths hold neither a forgotten value nor a secret."""
    paths = sorted({p for e in edges for p in (e.src, e.dst)})
    joined = "\n".join(paths)
    dropped = {p for p in paths if redact(p) != p} if redact(joined) != joined else set()
    if deny and deny.matches(paths):  # one pass over them all first: usually nothing is denied
        dropped |= {p for p in paths if deny.matches([p])}
    return [e for e in edges if e.src not in dropped and e.dst not in dropped]
