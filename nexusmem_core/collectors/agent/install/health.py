"""What the hooks leave behind for ``agent status``: when each agent's hook last recorded an event,
and how many payloads were dropped, by reason."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from .. import AGENT_LOG
from ..state import DROPS

__all__ = ["last_events", "read_drops"]


def last_events(home: Path) -> dict[str, float]:
    """The ``ts`` of the last readable record of each agent in the hook's event log (a record
    without ``agent`` is Claude Code's, as every record was before the others)."""
    try:
        with open(home / AGENT_LOG, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - 65536))
            tail = handle.read()
    except OSError:
        return {}
    found: dict[str, float] = {}
    for line in reversed(tail.splitlines()):
        try:
            record = json.loads(line)
            ts, agent = record["ts"], record.get("agent", "claude")
            if isinstance(ts, bool) or not isinstance(ts, int | float):
                continue
            time.localtime(ts)  # a timestamp that cannot be shown is garbage too
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, OSError):
            continue
        except RecursionError:
            continue
        if isinstance(agent, str):
            found.setdefault(agent, float(ts))
    return found


def read_drops(home: Path) -> dict[str, int]:
    """The hook's drop counters by reason, largest first; a missing or garbled file is none."""
    try:
        data = json.loads((home / DROPS).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    counts = {
        str(k): v
        for k, v in data.items()
        if isinstance(v, int) and not isinstance(v, bool) and v > 0
    }
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
