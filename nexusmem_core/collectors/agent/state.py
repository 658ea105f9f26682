"""What the hook remembers between calls of one agent session: files edited since the last
command, and which notes it has given (to ration them).

One small JSON file per session under ``$NEXUSMEM_HOME/agent/``, read and rewritten under an
exclusive lock: an agent can run tools in parallel, so two hooks of one session may overlap.
Files of sessions idle for a week are removed at the next session start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["DROPS", "MAX_NOTES", "count_drop", "prune_sessions", "session_state"]

MAX_NOTES = 5  # notes per session, whatever the commands
MAX_EDITS = 50  # paths kept between two commands
IDLE = 7 * 24 * 3600
DIR = "agent"


def _path(home: str, session: str) -> str:
    digest = hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return os.path.join(home, DIR, f"{digest}.json")


@contextlib.contextmanager
def session_state(home: str, session: str) -> Iterator[dict[str, Any]]:
    """The session's state, locked; changes to the dict are written back on exit."""
    path = _path(home, session or "no-session")
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
        raw = b""
        while chunk := os.read(fd, 65536):
            raw += chunk
        state = _decode(raw)
        before = json.dumps(state, sort_keys=True)
        yield state
        after = json.dumps(state, sort_keys=True)
        if after != before:
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, after.encode())
    finally:
        os.close(fd)  # closing releases the lock


def _decode(raw: bytes) -> dict[str, Any]:
    try:
        state = json.loads(raw) if raw else {}
    except ValueError:
        state = {}
    if not isinstance(state, dict):
        state = {}
    edits = state.get("edits")
    state["edits"] = (
        [p for p in edits if isinstance(p, str)][-MAX_EDITS:] if isinstance(edits, list) else []
    )
    noted = state.get("noted")
    state["noted"] = noted if isinstance(noted, dict) else {}
    notes = state.get("notes")
    state["notes"] = notes if isinstance(notes, int) else 0
    return state


def _lock(fd: int) -> None:
    if sys.platform == "win32":  # msvcrt locks a byte range
        import msvcrt

        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_LOCK, 1)
        return
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_EX)


def prune_sessions(home: str, now: float | None = None) -> int:
    """Remove the state of sessions idle for a week; return how many."""
    cutoff = (now or time.time()) - IDLE
    removed = 0
    with contextlib.suppress(FileNotFoundError):
        for entry in os.scandir(os.path.join(home, DIR)):
            with contextlib.suppress(OSError):
                if entry.name.endswith(".json") and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
    return removed


DROPS = "agent-drops.json"


def count_drop(home: str, reason: str) -> None:
    """Count a payload the hook could not use, by reason: ``agent status`` shows the counts."""
    os.makedirs(home, exist_ok=True)
    fd = os.open(os.path.join(home, DROPS), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
        raw = os.read(fd, 65536)
        try:
            counts = json.loads(raw) if raw else {}
        except ValueError:
            counts = {}
        if not isinstance(counts, dict):
            counts = {}
        counts[reason] = int(counts.get(reason, 0) or 0) + 1
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(counts, sort_keys=True).encode())
    finally:
        os.close(fd)
