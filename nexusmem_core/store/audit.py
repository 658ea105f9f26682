"""The audit trail of destructive and judging operations, and tombstones of removed nodes.

Both are written inside the operation's own transaction: if the operation rolls back, so does
its record. Neither ever holds a removed value: counts, kinds, sources and hashes only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from .db import Database

__all__ = ["record", "tombstone"]


async def record(
    db: Database, project_id: str | None, operation: str, count: int, **detail: Any
) -> None:
    """One audit row: what was done (``operation``), to how many, and how (``detail``)."""
    await db.execute(
        "insert into audit (project_id, at, operation, detail, count) values (?, ?, ?, ?, ?)",
        (project_id, int(time.time()), operation, json.dumps(detail, sort_keys=True), count),
    )


async def tombstone(db: Database, node_ids: Sequence[str], operation: str) -> int:
    """Tombstones for nodes about to be deleted (call before deleting them); returns how many."""
    now = int(time.time())
    count = 0
    for start in range(0, len(node_ids), 500):
        batch = list(node_ids[start : start + 500])
        marks = ",".join("?" * len(batch))
        count += await db.execute(
            "insert into tombstones (node_id, project_id, kind, source, content_hash, "
            f"removed_at, operation) select id, project_id, kind, source, content_hash, ?, ? "
            f"from nodes where id in ({marks}) on conflict(node_id) do update set "
            "removed_at = excluded.removed_at, operation = excluded.operation",
            (now, operation, *batch),
        )
    return count
