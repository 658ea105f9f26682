"""The sync step: bring ``import_edges`` up to date, reading only what changed.

Two cursors carry the graph from one sync to the next. ``structure`` is a digest of all a
build reads: the file listing, the size and mtime of every source file and manifest
(``go.mod``, ``Cargo.toml``, ``pyproject.toml``...), the skip globs, the deny list and the
extractors' version. When it is unchanged the stored edges stand and no file is read.
Otherwise ``structure:files`` holds what each source file imported when it was last read,
keyed by its size and mtime, so only changed files are read again before every import is
resolved anew; the table then gets the difference.

Paths are what an edge stores, so a path holding a forgotten value (the deny list) or a secret
(the redaction table) keeps its edges, and its cache entry, out of the database.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

import anyio.to_thread

from ...engine import Engine
from ...hygiene.deny import DenyFilter, load_entries
from ...models import SyncReport
from ...redact import redact
from ...store.db import Database
from ...store.nodes import get_cursor, set_cursor
from .sources import list_tree

if TYPE_CHECKING:
    from .graph import Cache, Edge

__all__ = ["CURSOR", "FILES_CURSOR", "VERSION", "sync_structure"]

CURSOR = "structure"
FILES_CURSOR = "structure:files"
VERSION = "2"  # bump when an extractor changes what it finds: every file is read again


async def sync_structure(engine: Engine, report: SyncReport) -> None:
    """Bring this project's import graph up to date; ``report.import_edges`` is its size."""
    db, pid = engine.db, engine.project_id
    skip = engine.config.sources.diff.skip_globs
    listing = await list_tree(engine.repo.root, skip)
    entries = await load_entries(db, pid)
    denied = hashlib.sha256("".join(f"\x00{e.kind}\x00{e.value}" for e in entries).encode())
    deny_key = denied.hexdigest()
    digest = hashlib.sha256(f"{VERSION}\x00{listing.digest}\x00{skip!r}\x00{deny_key}".encode())
    if await get_cursor(db, pid, CURSOR) != digest.hexdigest():
        from .graph import build_graph

        old, checked = await _load_cache(db, pid)
        graph, cache = await anyio.to_thread.run_sync(build_graph, listing, dict(old))
        deny = DenyFilter(entries)
        unsafe = _unsafe({p for e in graph.edges for p in (e.src, e.dst)}, deny)
        await _replace_edges(db, pid, [e for e in graph.edges if not {e.src, e.dst} & unsafe])
        # A cache entry is checked when it is new, or when the deny list changed since.
        fresh = {
            p: json.dumps([p, e])
            for p, e in cache.items()
            if checked != deny_key or old.get(p) != e
        }
        risky = _unsafe(fresh, deny)
        kept = {p: e for p, e in cache.items() if p not in risky}
        text = json.dumps([VERSION, deny_key, kept], separators=(",", ":"))
        await set_cursor(db, pid, FILES_CURSOR, text)
        await set_cursor(db, pid, CURSOR, digest.hexdigest())
    row = await db.fetchone("select count(*) from import_edges where project_id = ?", (pid,))
    report.import_edges = int(row[0]) if row else 0


async def _load_cache(db: Database, pid: str) -> tuple[Cache, str]:
    """The per-file extraction cache, and the deny list it was last checked against."""
    raw = await get_cursor(db, pid, FILES_CURSOR)
    try:
        version, checked, cache = json.loads(raw or "[]")
    except (ValueError, TypeError):
        return {}, ""  # none yet, or not this shape: every file is read
    if version != VERSION or not isinstance(cache, dict):
        return {}, ""
    return cache, str(checked)


def _unsafe(texts: set[str] | dict[str, str], deny: DenyFilter) -> set[str]:
    """The keys whose text (a path, or a cache entry) holds a secret or a forgotten value;
    one pass over them all first, as usually none does."""
    items = texts if isinstance(texts, dict) else {t: t for t in texts}
    joined = "\n".join(items.values())
    out = {k for k, t in items.items() if redact(t) != t} if redact(joined) != joined else set()
    if deny and deny.matches(list(items.values())):
        out |= {k for k, t in items.items() if deny.matches([t])}
    return out


async def _replace_edges(db: Database, pid: str, edges: list[Edge]) -> None:
    """Make the stored graph ``edges``, touching only the rows that differ."""
    rows = await db.fetchall("select src, dst, lang from import_edges where project_id = ?", (pid,))
    old = {(src, dst, lang) for src, dst, lang in rows}
    new = {(e.src, e.dst, e.lang) for e in edges}
    await db.executemany(
        "delete from import_edges where project_id = ? and src = ? and dst = ?",
        [(pid, src, dst) for src, dst, _ in old - new],
    )
    await db.executemany(
        "insert into import_edges (project_id, src, dst, lang) values (?, ?, ?, ?)",
        [(pid, *edge) for edge in sorted(new - old)],
    )
