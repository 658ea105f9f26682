"""What the agents were told: the recall notes and session digests the hook delivered.

The hook (``runner.py``) appends each one to ``AGENT_NOTES`` in NexusMem's home as it answers;
sync reads that log into the ``agent_notes`` table, one repository's notes at a time (the
``root`` recall found), from where the last sync stopped (the ``agent:notes`` cursor), at most
``BATCH`` a sync. They are not nodes: not memory to search, but a record of what memory said.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio.to_thread

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
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, across the helpers
    except FileNotFoundError:
        return ReadResult([], LogCursor())
    # Most lines are other repositories': passed over without parsing (the hook writes
    # ``root`` as json.dumps with ensure_ascii off, so these are its bytes).
    mark = b'"root":' + json.dumps(root, ensure_ascii=False).encode("utf-8", "surrogatepass")
    with handle:
        size = os.fstat(handle.fileno()).st_size
        head = hooklog._head(handle)
        restarted = cursor.offset > size or (cursor.offset > 0 and cursor.head != head)
        offset = 0 if restarted else cursor.offset
        handle.seek(offset)
        records: list[dict[str, Any]] = []
        malformed = 0
        for line in hooklog._lines(handle, size):
            if line is None:  # longer than any note: skipped to its end
                malformed, offset = malformed + 1, handle.tell()
                continue
            if not line.endswith(b"\n"):
                break  # still being written: the next sync reads it
            offset += len(line)
            if mark not in line:
                continue
            record = _parse(line, root)
            if record is None:
                malformed += 1
                continue
            records.append(record)
            if len(records) == most:
                break
        return ReadResult(records, LogCursor(offset, head), malformed, restarted)


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


async def sync_notes(db: Database, pid: str, root: str, home: Path) -> int:
    """Read this repository's new notes into ``agent_notes``; return how many were new.
    Idempotent: a note read twice (a log read again from its start) is one row."""
    cursor = LogCursor.decode(await get_cursor(db, pid, CURSOR))
    path = home / AGENT_NOTES
    if not path.exists():
        return 0
    read = await anyio.to_thread.run_sync(read_notes, path, cursor, root)
    added = 0
    if read.records:
        added = await db.executemany(
            "insert into agent_notes (id, project_id, ts, agent, session, event, kind, "
            "cmd_hash, command, after, body) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "on conflict(id) do nothing",
            [_row(pid, record) for record in read.records],
        )
    await set_cursor(db, pid, CURSOR, read.cursor.encode())
    return added
