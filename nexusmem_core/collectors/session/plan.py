"""Which sessions need a summary: read from the conversation turns and the ``sessions`` table.

A session is settled once its newest turn is ``settle_minutes`` old; a live one waits, so it is
not summarised again on every sync while it goes on. A settled session whose newest turn has
not moved since its summary was written is up to date without reading it: a transcript only
grows, so the same newest turn means the same turns. Any other settled session is due: its
prompt is built, and its hash decides (a session that went on, but whose prompt did not change,
costs no model call). Due sessions come newest first: the work most likely to be asked about
next is the most recent, and on the first sync with a backlog the queue reaches back from today.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...store.db import Database
from ...store.nodes import decode_meta
from .prompt import Turn

__all__ = ["Plan", "SessionInfo", "Stored", "load_turns", "plan"]

# The session is read from grp (``{session}:{turn}``, the digits and colon trimmed), not from
# meta: meta is stored after the body, so reading it walks each long turn's overflow pages
# (15,000 turns of ~10 KB: ~210 ms that way, ~90 ms this way, measured).
_SESSIONS = """
select substr(rtrim(grp, '0123456789'), 1, length(rtrim(grp, '0123456789')) - 1) as session,
       min(source), max(ts), count(distinct grp)
from nodes
where project_id = ? and kind = 'conversation_turn' and grp like '_%:%'
group by session
"""
_STORED = """
select s.session, s.last_ts, s.prompt_hash, s.state, s.node_id, n.id is not null
from sessions s left join nodes n on n.id = s.node_id
where s.project_id = ?
"""


@dataclass(frozen=True)
class Stored:
    """A session's row in ``sessions``, and whether its summary node is still there."""

    last_ts: int | None
    prompt_hash: str | None
    state: str
    node_id: str | None
    has_node: bool

    def answered(self, prompt_hash: str) -> bool:
        """Whether the model already answered this prompt: its summary is stored, or was
        kept out by the deny list (``failed``: the same prompt would get the same answer)."""
        return self.prompt_hash == prompt_hash and (self.has_node or self.state == "failed")


@dataclass(frozen=True)
class SessionInfo:
    session: str
    source: str  # conversation:claude or conversation:codex
    agent: str | None
    last_ts: int | None  # the newest turn's time
    turns: int
    stored: Stored | None

    def up_to_date(self) -> bool:
        """Summarised (or denied) and not gone on since, as far as the table knows."""
        s = self.stored
        return (
            s is not None
            and s.state in ("done", "failed")
            and s.last_ts == self.last_ts
            and (s.has_node or s.state == "failed")
        )


@dataclass
class Plan:
    due: list[SessionInfo] = field(default_factory=list)  # newest first
    live: int = 0  # not settled yet
    current: int = 0  # up to date


async def plan(db: Database, pid: str, settle_minutes: int, now: int) -> Plan:
    """The project's sessions, sorted into due, live and up to date."""
    stored = {
        session: Stored(last_ts, digest, state, node, bool(has))
        for session, last_ts, digest, state, node, has in await db.fetchall(_STORED, (pid,))
    }
    settled_before = now - settle_minutes * 60
    result = Plan()
    for session, source, last_ts, turns in await db.fetchall(_SESSIONS, (pid,)):
        if not session:
            continue  # a transcript without a session id: nothing to key a summary on
        agent = source.partition(":")[2] or None
        info = SessionInfo(session, source, agent, last_ts, turns, stored.get(session))
        # A session whose turns carry no time cannot be live: its transcript is not recent.
        if last_ts is not None and last_ts > settled_before:
            result.live += 1
        elif info.up_to_date():
            result.current += 1
        else:
            result.due.append(info)
    result.due.sort(key=lambda s: (s.last_ts or 0, s.session), reverse=True)
    return result


async def load_turns(db: Database, pid: str, info: SessionInfo) -> list[Turn]:
    """The session's stored chunks (refs are ``session:turn:chunk``, so the range is indexed);
    a chunk without a turn number is passed over."""
    rows = await db.fetchall(
        "select body, ts, signal, meta from nodes where project_id = ? and source = ? "
        "and ref > ? and ref < ? and kind = 'conversation_turn' "
        "and json_extract(meta, '$.session') = ?",
        (pid, info.source, info.session + ":", info.session + ";", info.session),
    )
    turns = []
    for body, ts, signal, meta in rows:
        try:
            turns.append(Turn.from_node(body, ts, signal, decode_meta(meta)))
        except ValueError:
            continue
    return turns
