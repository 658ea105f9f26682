"""Writing and reading nodes. Every write is an idempotent upsert keyed by the content id."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from ..collectors.changelog import is_changelog
from ..models import Node
from ..retrieval.names import KINDS as NAMED_KINDS
from ..retrieval.names import VERSION as NAMES_VERSION
from ..retrieval.names import name_parts
from .db import Database
from .rows import Row, node_rows

__all__ = [
    "NODE_COLUMNS",
    "delete_nodes",
    "get_cursor",
    "refresh_names",
    "set_cursor",
    "upsert_nodes",
    "upsert_project",
    "write_rows",
]

NAMES_CURSOR = "names"  # names the splitting rule the stored nodes' names were made by

NODE_COLUMNS = (
    "n.id, n.project_id, n.kind, n.ref, n.grp, n.title, n.ts, n.created_at, n.signal, "
    "n.provenance, n.trust, n.meta, "
    "exists(select 1 from nodes s where s.supersedes = n.id) as superseded, n.seq"
)

# Unchanged content (same hash) leaves the row alone: no write, no FTS churn, no new
# created_at. Trust and supersedes belong to people and are never overwritten by a resync.
_UPSERT = """
insert into nodes (id, project_id, kind, source, ref, grp, title, body, paths, ts, created_at,
                   signal, provenance, content_hash, meta, cjk, names)
values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
on conflict(id) do update set
    grp = excluded.grp, title = excluded.title, body = excluded.body, paths = excluded.paths,
    ts = excluded.ts, cjk = excluded.cjk, names = excluded.names,
    signal = excluded.signal, provenance = excluded.provenance,
    content_hash = excluded.content_hash, meta = excluded.meta
where nodes.content_hash != excluded.content_hash
"""
# Rows a bulk load expects to be new (write_rows' ``new``). The update arm costs every insert
# once a table has an update trigger, as the load's word index puts on it after its first step
# (store/fts.py): 50k commits' rows 0.78 s plain, 1.36 s as upserts.
_INSERT_NEW = _UPSERT.split("on conflict", 1)[0] + "on conflict(id) do nothing"


async def upsert_nodes(db: Database, nodes: Sequence[Node], *, new: bool = False) -> int:
    """Insert or update ``nodes`` (inside the caller's transaction); return rows changed.
    ``new``: as :func:`write_rows` has it."""
    if not nodes:
        return 0
    return await write_rows(db, *node_rows(nodes, int(time.time())), new=new)


async def write_rows(
    db: Database, rows: list[Row], files: list[tuple[str, str]], *, new: bool = False
) -> int:
    """Upsert rows :func:`~.rows.node_rows` made (here or in the walk's second process), and
    their (node id, path) pairs; return the rows changed. ``new``: rows of a bulk load,
    expected not to be in memory yet, are inserted first, and only a batch where some were
    after all is upserted as well (the rows just inserted are unchanged by it)."""
    if new:
        changed, filed = await db.run(_insert_new, rows, files)
        if filed:
            return changed
        if changed < len(rows):
            changed += await db.executemany(_UPSERT, rows)
    else:
        changed = await db.executemany(_UPSERT, rows)
    if files:
        await db.executemany(_FILE_OF_ID, files)
    return changed


def _insert_new(conn: Any, rows: list[Row], files: list[tuple[str, str]]) -> tuple[int, bool]:
    """On the connection's thread, in one trip: insert ``rows`` as new; the rows changed, and
    whether their files are written too. They are when every row went in, each given the seq
    after the highest (SQLite's rowid rule, with no AUTOINCREMENT): the batch's seqs follow
    the highest before it, in order, and key its files without looking each id up."""
    with contextlib.closing(conn.execute(_HIGHEST)) as cursor:
        (before,) = cursor.fetchone()
    with contextlib.closing(conn.executemany(_INSERT_NEW, rows)) as cursor:
        changed = int(cursor.rowcount)
    with contextlib.closing(conn.execute(_HIGHEST)) as cursor:
        (after,) = cursor.fetchone()
    if changed != len(rows) or after != before + len(rows):
        return changed, False
    if files:
        seqs = {row[0]: seq for seq, row in enumerate(rows, start=before + 1)}
        with contextlib.closing(conn.executemany(_FILE, [(seqs[n], p) for n, p in files])):
            pass
    return changed, True


_HIGHEST = "select coalesce(max(seq), 0) from nodes"
_FILE = "insert into node_files (node_seq, path) values (?, ?) on conflict do nothing"
_FILE_OF_ID = (
    "insert into node_files (node_seq, path) values ((select seq from nodes where id = ?), ?) "
    "on conflict do nothing"
)


async def delete_nodes(db: Database, ids: Iterable[str]) -> int:
    """Delete nodes by id (their files and FTS rows go with them); return how many."""
    ids = list(ids)
    deleted = 0
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        marks = ",".join("?" * len(batch))
        of_ids = f"select seq from nodes where id in ({marks})"
        await db.execute(f"delete from node_files where node_seq in ({of_ids})", batch)
        deleted += await db.execute(f"delete from nodes where id in ({marks})", batch)
    return deleted


async def upsert_project(
    db: Database, project_id: str, name: str, root: str, origin: str | None
) -> None:
    await db.execute(
        "insert into projects (id, name, root, origin, created_at) values (?, ?, ?, ?, ?) "
        "on conflict(id) do update set name = excluded.name, root = excluded.root, "
        "origin = excluded.origin "
        "where (projects.name, projects.root, projects.origin) "
        "is not (excluded.name, excluded.root, excluded.origin)",
        (project_id, name, root, origin, int(time.time())),
    )


async def held_changelogs(db: Database, project_id: str) -> list[str]:
    """The changelogs whose sections memory holds (collectors/changelog.py says which files)."""
    rows = await db.fetchall("select path from doc_files where project_id = ?", (project_id,))
    return [path for (path,) in rows if is_changelog(path)]


async def get_cursor(db: Database, project_id: str, source: str) -> str | None:
    row = await db.fetchone(
        "select value from cursors where project_id = ? and source = ?", (project_id, source)
    )
    return row[0] if row else None


async def set_cursor(db: Database, project_id: str, source: str, value: str) -> None:
    await db.execute(
        "insert into cursors (project_id, source, value) values (?, ?, ?) "
        "on conflict(project_id, source) do update set value = excluded.value "
        "where cursors.value != excluded.value",
        (project_id, source, value),
    )


def decode_meta(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


async def refresh_names(db: Database, project_id: str, *, fresh: bool = False) -> int:
    """Split the identifiers of the nodes stored under another splitting rule than this
    version's (retrieval/names.py), inside the caller's transaction; return the rows changed.

    Once per change of rule, on the first sync after an upgrade: the cursor records the rule.
    ``fresh`` is a memory this sync wrote from nothing, split as it was written.
    """
    if await get_cursor(db, project_id, NAMES_CURSOR) == NAMES_VERSION:
        return 0
    changed = []
    if not fresh:
        kinds = ",".join(f"'{kind}'" for kind in sorted(NAMED_KINDS))
        rows = await db.fetchall(
            f"select seq, kind, title, body, names from nodes where project_id = ? "
            f"and (kind in ({kinds}) or names != '')",
            (project_id,),
        )
        for seq, kind, title, body, names in rows:
            split = name_parts(kind, title, body)
            if split != names:
                changed.append((split, seq))
        await db.executemany("update nodes set names = ? where seq = ?", changed)
    await set_cursor(db, project_id, NAMES_CURSOR, NAMES_VERSION)
    return len(changed)
