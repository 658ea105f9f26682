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

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~3 ms
if TYPE_CHECKING:
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
def _locked_json(path: str) -> Iterator[dict[str, Any]]:
    """A small JSON object in a file, read and written back under an exclusive lock; a file
    that is not such an object reads as empty (it is only our own bookkeeping)."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)  # the home, or agent/ in it
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
        raw = b""
        while chunk := os.read(fd, 65536):
            raw += chunk
        try:
            data = json.loads(raw) if raw else {}
        except ValueError:
            data = {}
        data = data if isinstance(data, dict) else {}
        before = json.dumps(data, sort_keys=True)
        yield data
        after = json.dumps(data, sort_keys=True)
        if after != before:
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, after.encode())
    finally:
        os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def session_state(home: str, session: str) -> Iterator[dict[str, Any]]:
    """The session's state, locked; changes to the dict are written back on exit."""
    with _locked_json(_path(home, session or "no-session")) as state:
        edits, noted, notes = state.get("edits"), state.get("noted"), state.get("notes")
        state["edits"] = (
            [p for p in edits if isinstance(p, str)][-MAX_EDITS:] if isinstance(edits, list) else []
        )
        state["noted"] = noted if isinstance(noted, dict) else {}
        state["notes"] = notes if isinstance(notes, int) else 0
        yield state


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
    with _locked_json(os.path.join(home, DROPS)) as counts:
        count = counts.get(reason)
        counts[reason] = (count if isinstance(count, int) else 0) + 1
