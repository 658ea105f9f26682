"""What the viewer's Status page shows beside ``status``: how memory grew month by month, and
which capture hooks are installed and when each last recorded.

``capture`` asks what ``nexusmem hook status`` and ``nexusmem agent status`` ask (the same
functions), and ``logs`` gives the hook logs' sizes, which the viewer polls to know when to ask
the timeline for what is new.
"""

from __future__ import annotations

import calendar
import itertools
import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..collectors.agent import AGENT_LOG
from ..collectors.shell.hooklog import LOG_FILE
from ..errors import UsageError
from ..models import NODE_KINDS

if TYPE_CHECKING:
    from ..config import Settings
    from ..engine import Engine

__all__ = ["MAX_MONTHS", "capture", "history", "logs", "storage"]

MAX_MONTHS = 120


async def history(engine: Engine, *, months: int = 24) -> list[dict[str, Any]]:
    """How many nodes of each kind each month held (UTC), oldest first: the ``months``
    (1..120) up to the month of the newest node, every one of them listed, empty or not.
    Each: ``month`` (``YYYY-MM``), ``counts`` (kind -> count), ``total``. Nodes without a
    time are not counted."""
    if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= MAX_MONTHS:
        raise UsageError(f"must be a whole number from 1 to {MAX_MONTHS}", argument="months")
    db, pid = engine.db, engine.project_id
    row = await db.fetchone("select max(ts) from nodes where project_id = ?", (pid,))
    if not row or row[0] is None:
        return []
    last = time.gmtime(int(row[0]))
    starts = []  # each month's first second, newest month first
    # From the month after the newest node's, back.
    year, month = (last.tm_year, last.tm_mon + 1) if last.tm_mon < 12 else (last.tm_year + 1, 1)
    for _ in range(months + 1):
        starts.append((f"{year:04d}-{month:02d}", calendar.timegm((year, month, 1, 0, 0, 0))))
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    starts.reverse()
    spans = [[begin, end] for (_, begin), (_, end) in itertools.pairwise(starts)]
    # One count per kind and month, each a range of the (project, kind, ts) index, rather
    # than the month of every node's time, grouped.
    rows = await db.fetchall(
        "select m.key, k.value, (select count(*) from nodes n where n.project_id = ? "
        "and n.kind = k.value and n.ts >= json_extract(m.value, '$[0]') "
        "and n.ts < json_extract(m.value, '$[1]')) "
        "from json_each(?) m, json_each(?) k",
        (pid, json.dumps(spans), json.dumps(NODE_KINDS)),
    )
    counts: list[dict[str, int]] = [{} for _ in spans]
    for index, kind, count in rows:
        if count:
            counts[int(index)][kind] = int(count)
    return [
        {"month": label, "counts": c, "total": sum(c.values())}
        for (label, _), c in zip(starts, counts, strict=False)
    ]


def storage(engine: Engine) -> dict[str, int]:
    """The bytes the memory takes on disk: ``database``, its write-ahead log ``wal``, and
    their ``total``."""
    sizes = {}
    for name, suffix in (("database", ""), ("wal", "-wal")):
        try:
            sizes[name] = os.stat(f"{engine.db.path}{suffix}").st_size
        except OSError:
            sizes[name] = 0
    return {**sizes, "total": sum(sizes.values())}


def logs(settings: Settings) -> dict[str, dict[str, Any]]:
    """The two hook logs (``shell``, ``agent``): ``path``, ``size`` and ``mtime`` (None, 0,
    None when there is none). Two stat calls: cheap enough to poll."""
    out: dict[str, dict[str, Any]] = {}
    for name, file in (("shell", LOG_FILE), ("agent", AGENT_LOG)):
        path = Path(settings.home) / file
        try:
            found = os.stat(path)
        except OSError:
            out[name] = {"path": str(path), "size": 0, "mtime": None}
            continue
        out[name] = {"path": str(path), "size": found.st_size, "mtime": found.st_mtime}
    return out


async def capture(settings: Settings, root: Path | None = None) -> dict[str, Any]:
    """Which capture hooks are installed, and when each last recorded: ``shells`` (bash,
    zsh, fish, pwsh: each ``shell``, ``state`` (installed, not installed, outdated),
    ``rc_files``, ``script``, ``last_recorded`` (unix s, or None), ``warnings``), ``agents``
    (each of ``agent status --json``'s agents: ``agent``, ``label``, ``files`` (user and
    project: ``scope``, ``path``, ``state``, ...), ``flag``, ``context``, ``last_event``,
    ``notice``), ``drops`` (payloads the agent hook dropped, by reason) and ``logs``
    (``logs``). ``root``: the repository whose project files are checked. The answers of
    ``nexusmem hook status`` and ``nexusmem agent status``, read in a worker thread."""
    from ..collectors.agent import install as agents
    from ..collectors.shell import hooks

    home = Path(settings.home)

    def read() -> dict[str, Any]:
        shells = [asdict(hooks.status(shell, home)) for shell in hooks.SHELLS]
        found = agents.status(list(agents.SPECS), home, root or Path.cwd())
        every = found.to_dict()
        return {
            "shells": shells,
            "agents": every["agents"],
            "drops": every["drops"],
            "logs": logs(settings),
        }

    return await anyio.to_thread.run_sync(read)
