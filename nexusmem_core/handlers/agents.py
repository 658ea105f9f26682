"""What the coding agents were told (the web viewer's Agents page): every recall note and
session digest the hook delivered in this repository, with what the command did next, and the
digest the next session would start with.

The notes are read at sync from the hook's notes log (``collectors/agent/told.py``).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

import anyio.to_thread

from ..collectors.agent import AGENTS
from ..engine import Engine
from ..errors import UsageError

__all__ = ["MAX_TOLD", "next_digest", "told"]

MAX_TOLD = 500

# The first run of the command after the note, in the note's session: the index of runs by
# command hash (schema 4) narrows it to that command's runs from the note's second on.
_AT = "coalesce(json_extract(meta, '$.at'), ts)"  # a run's time to the millisecond
_THEN = (
    f"select id, json_extract(meta, '$.outcome'), json_extract(meta, '$.exit'), {_AT} "
    "from nodes where project_id = ? and kind = 'shell_command' "
    "and json_extract(meta, '$.cmd_hash') = ? and ts >= ? "
    f"and json_extract(meta, '$.session') = ? and ref != ? and {_AT} > ? "
    f"order by {_AT}, seq limit 1"
)


async def told(
    engine: Engine,
    *,
    limit: int = 50,
    before: float | None = None,
    agent: str | None = None,
) -> list[dict[str, Any]]:
    """The notes and digests the agents were told here, newest first: at most ``limit``
    (1..500), told before ``before`` (unix seconds: the last page's oldest ``ts``), by
    ``agent`` (a key of ``AGENTS``) when given. Each: ``id``, ``ts``, ``date`` (UTC, to the
    minute), ``agent``, ``session``, ``event``, ``kind`` (``recall`` | ``digest``),
    ``command`` (None for a digest), ``text``, and ``then``: for a recall, the command's next
    run in that session as memory recorded it (``id``, ``outcome``, ``exit``, ``ts``), None
    when it has not run again or no sync has read it yet."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_TOLD:
        raise UsageError(f"must be a whole number from 1 to {MAX_TOLD}", argument="limit")
    if agent is not None and agent not in AGENTS:
        raise UsageError(f"unknown agent {agent!r}; one of {', '.join(AGENTS)}", argument="agent")
    if before is not None and (
        isinstance(before, bool)
        or not isinstance(before, int | float)
        or not math.isfinite(before)
        or before < 0
    ):
        raise UsageError("must be unix seconds, from the last page's oldest ts", argument="before")
    db, pid = engine.db, engine.project_id
    params: list[Any]
    where, params = "project_id = ?", [pid]
    if before is not None:
        where, params = where + " and ts < ?", [*params, float(before)]
    if agent is not None:
        where, params = where + " and agent = ?", [*params, agent]
    rows = await db.fetchall(
        "select id, ts, agent, session, event, kind, cmd_hash, command, after, body "
        f"from agent_notes where {where} order by ts desc, id desc limit ?",
        (*params, limit),
    )
    notes = []
    for note_id, ts, name, session, event, kind, cmd_hash, command, after, body in rows:
        then = None
        if kind == "recall" and cmd_hash:
            then = await _then(engine, cmd_hash, session, ts, after)
        notes.append(
            {
                "id": note_id,
                "ts": ts,
                "date": time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts)),
                "agent": name,
                "session": session,
                "event": event,
                "kind": kind,
                "command": command if kind == "recall" else None,
                "text": body,
                "then": then,
            }
        )
    return notes


async def _then(
    engine: Engine, cmd_hash: str, session: str, ts: float, after: str | None
) -> dict[str, Any] | None:
    row = await engine.db.fetchone(
        _THEN, (engine.project_id, cmd_hash, int(ts), session, after or "", ts)
    )
    if row is None:
        return None
    node_id, outcome, code, at = row
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if not isinstance(outcome, str) or not outcome:
        outcome = "unknown" if code is None else "ok" if code == 0 else "failed"
    return {"id": node_id, "outcome": outcome, "exit": code, "ts": at}


async def next_digest(engine: Engine, now: float | None = None) -> str:
    """The digest the next session started here would be given (the hook's own, over the
    same memory and unsynced logs), or "" when there is nothing to say."""
    from ..collectors.agent import recall

    root = os.path.realpath(engine.repo.root)
    home = os.fspath(engine.settings.home)
    at = time.time() if now is None else now

    def build() -> str:
        memory = recall.Memory(root, home)
        try:
            return recall.digest(memory, at) or ""
        finally:
            memory.close()

    return await anyio.to_thread.run_sync(build)
