"""The commands a shell or agent hook has logged in a repository that no sync has read yet, as
the nodes sync will make of them (same ids, titles, redaction, the deny list), without writing
anything.

The logs' unread ends are read as the agent hook's recall reads them (``recall.Memory``), each
from at most ``PENDING_BYTES`` before its end, and only the newest records are built into nodes:
building one redacts its command, and a log no sync has read for a while holds thousands. The
viewer asks on every change of a log's size, so this stays cheap however far behind sync is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..collectors.agent import AGENT_LOG
from ..collectors.shell.hooklog import LOG_FILE, LogCursor
from ..models import Node
from ..store.nodes import get_cursor

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["PENDING_BYTES", "PENDING_READ", "unsynced"]

PENDING_BYTES = 128 * 1024  # of each log's unread end, at most this much is read
PENDING_READ = 200  # of its records, at most the newest this many are built into nodes
_LOGS = {"shell:hook": LOG_FILE, "agent:claude": AGENT_LOG}  # sync's cursor of each log
_NEEDED = ("id", "cmd", "shell")  # what sync requires of a log record (as hooklog reads one)

Entry = tuple[dict[str, Any], str]  # a log record, and "shell" or "agent"


async def unsynced(
    engine: Engine, keeps: Callable[[Node], bool] | None = None, most: int = 100
) -> list[Node]:
    """The commands logged in this repository that no sync has read, newest first: at most
    ``most``, of the newest ``PENDING_READ`` records, those ``keeps`` accepts. A command
    holding a forgotten value is left out, as sync leaves it out (the log still holds it)."""
    from ..collectors.agent.recall import Memory
    from ..hygiene.deny import DenyFilter

    db, pid = engine.db, engine.project_id
    deny = await DenyFilter.load(db, pid)
    cursors = {name: await get_cursor(db, pid, name) for name in _LOGS}
    root = os.path.realpath(engine.repo.root)
    home = os.fspath(engine.settings.home)
    limit = engine.config.limits.max_body_chars

    def read() -> list[Node]:
        memory = Memory(root, home)
        try:
            # This engine's cursors, not those of the database the recall opened for itself.
            memory.cursors = {k: _near_end(home, _LOGS[k], v) for k, v in cursors.items()}
            tail = sorted(memory.tail(), key=_when, reverse=True)
        finally:
            memory.close()
        build = _builder(pid, root, limit)
        nodes = [n for n in map(build, tail[:PENDING_READ]) if n is not None]
        return [n for n in nodes if (keeps is None or keeps(n)) and not deny.denies(n)]

    nodes = await anyio.to_thread.run_sync(read)
    nodes.sort(key=lambda n: (n.ts is not None, n.meta.get("at") or n.ts or 0), reverse=True)
    nodes = list({n.id: n for n in nodes}.values())[:most]
    if not nodes:
        return []
    # A log cut under a sync's cursor is read again from near its end: what memory holds
    # already is not pending.
    known = {
        node_id
        for (node_id,) in await db.fetchall(
            f"select id from nodes where id in ({','.join('?' * len(nodes))})",
            [n.id for n in nodes],
        )
    }
    return [n for n in nodes if n.id not in known]


def _near_end(home: str, name: str, cursor: str | None) -> str:
    """``cursor``, or one ``PENDING_BYTES`` before the end of the log when it is further
    back: the recall reads on from the next whole line after a cursor without a head."""
    try:
        size = os.stat(os.path.join(home, name)).st_size
    except OSError:
        return cursor or ""
    at = LogCursor.decode(cursor)
    if size - at.offset <= PENDING_BYTES and at.offset <= size:
        return at.encode()
    return LogCursor(max(0, size - PENDING_BYTES), "").encode()


def _when(entry: Entry) -> float:
    """When a log record's command ran (the shell's start, the agent's ts); 0 if unsaid."""
    record = entry[0]
    when = record.get("start") or record.get("ts")
    return float(when) if isinstance(when, int | float) and not isinstance(when, bool) else 0.0


def _builder(pid: str, root: str, limit: int) -> Callable[[Entry], Node | None]:
    """Sync's own node for a record (``hook_node``, ``agent_node``), or None for a record
    sync would pass over as malformed."""
    from ..collectors.agent.nodes import agent_node
    from ..collectors.shell.nodes import hook_node

    def build(entry: Entry) -> Node | None:
        record, kind = entry
        if not all(isinstance(record.get(k), str) and record[k] for k in _NEEDED):
            return None
        edited = record.get("edited")
        if edited is not None and not isinstance(edited, list):
            return None
        try:
            if kind == "agent":
                return agent_node(pid, record, limit, root)
            return hook_node(pid, record, limit, root)
        except (TypeError, ValueError, AttributeError):
            return None  # a stranger's line of another shape: passed over, as sync passes it

    return build
