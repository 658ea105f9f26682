"""What the agents were told: the recall notes and session digests the hook delivered.

The hook (``runner.py``) appends each one to ``AGENT_NOTES`` in NexusMem's home as it answers;
sync reads that log into the ``agent_notes`` table, one repository's notes at a time (the
``root`` recall found), from where the last sync stopped (the ``agent:notes`` cursor), at most
``BATCH`` a sync. They are not nodes: not memory to search, but a record of what memory said.
Like nodes, they are redacted as they are stored, and a note holding a value forgotten here
(the deny list, ``hygiene/deny.py``) is not stored at all.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio.to_thread

from ...hygiene.deny import DenyFilter, note_pieces
from ...redact import redact_cut
from ...store.db import Database
from ...store.nodes import get_cursor, set_cursor
from ..shell import hooklog
from ..shell.hooklog import LogCursor, ReadResult
from . import AGENT_NOTES, AGENTS, MAX_COMMAND, MAX_NOTE

__all__ = ["BATCH", "CURSOR", "EVENTS", "KINDS", "read_notes", "sync_notes"]

CURSOR = "agent:notes"
BATCH = 5000  # notes ingested per sync at most (a session is told six at most); the rest next
EVENTS = ("PreToolUse", "PostToolUseFailure", "SessionStart")
KINDS = ("recall", "digest")
_TEXTS = ("session", "cmd_hash", "cmd", "after")


def read_notes(path: Path, cursor: LogCursor, root: str, most: int = BATCH) -> ReadResult:
    """The complete notes written since ``cursor`` for the repository at ``root`` (at most
    ``most``), with where to read on from. Cursor semantics are the hook logs' (``hooklog``):
    a truncated or rotated log is read again from its start."""
    # Most lines are other repositories': passed over without parsing (the hook writes
    # ``root`` as json.dumps with ensure_ascii off, so these are its bytes).
    mark = b'"root":' + json.dumps(root, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hooklog.read_new(path, cursor, most=most, parse=partial(_parse, root=root), mark=mark)


def _parse(line: bytes, root: str) -> dict[str, Any] | None:
    """A note of ``root`` whose every field can be stored, or None."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("root") != root:
        return None
    ts = record.get("ts")
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not 0 <= ts < 2**33:
        return None
    if not (isinstance(record.get("id"), str) and 0 < len(record["id"]) <= 64):
        return None
    if record.get("agent") not in AGENTS or record.get("event") not in EVENTS:
        return None
    if record.get("kind") not in KINDS or not isinstance(record.get("text"), str):
        return None
    if not isinstance(record.get("session"), str) or not hooklog.storable(record["text"]):
        return None
    for name in _TEXTS:
        value = record.get(name)
        if value is not None and not (isinstance(value, str) and hooklog.storable(value)):
            return None
    return record


def _row(pid: str, record: dict[str, Any]) -> tuple[Any, ...]:
    # Redacted again: the table may know a secret the hook's did not, and the log is a file
    # anything could have written.
    body, _ = redact_cut(record["text"], MAX_NOTE)
    command = redact_cut(record["cmd"], MAX_COMMAND)[0] if record.get("cmd") else None
    recall = record["kind"] == "recall"
    return (
        record["id"],
        pid,
        float(record["ts"]),
        record["agent"],
        record["session"][:64],
        record["event"],
        record["kind"],
        record.get("cmd_hash") if recall else None,
        command if recall else None,
        record.get("after") if recall else None,
        body,
    )


def _pieces(row: tuple[Any, ...]) -> list[str]:
    """A ``_row`` as the deny list reads it: its session, command and body, as stored."""
    return note_pieces(row[4], row[8], row[10])


async def sync_notes(
    db: Database, pid: str, root: str, home: Path, deny: DenyFilter | None = None
) -> int:
    """Read this repository's new notes into ``agent_notes``; return how many were new.
    Idempotent: a note read twice (a log read again from its start) is one row. A note holding
    a forgotten value (``deny``, else this project's deny list) is passed over: the log keeps
    what it recorded, and ``forget`` deleted the row."""
    cursor = LogCursor.decode(await get_cursor(db, pid, CURSOR))
    path = home / AGENT_NOTES
    if not path.exists():
        return 0
    read = await anyio.to_thread.run_sync(read_notes, path, cursor, root)
    added = 0
    if deny is None:
        deny = await DenyFilter.load(db, pid)
    rows = [_row(pid, record) for record in read.records]
    if deny:
        rows = [row for row in rows if not deny.matches(_pieces(row))]
    if rows:
        added = await db.executemany(
            "insert into agent_notes (id, project_id, ts, agent, session, event, kind, "
            "cmd_hash, command, after, body) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "on conflict(id) do nothing",
            rows,
        )
    await set_cursor(db, pid, CURSOR, read.cursor.encode())
    return added
