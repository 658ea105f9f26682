"""People's judgements of nodes: ``review`` (trust) and ``mark-stale`` (supersedes).

Provenance says where a claim came from; trust says whether a person checked it (candidate ->
verified or rejected). A rejected node ranks lower, and so does a superseded one
(``retrieval/rank.py``); neither is ever hidden, and ``verified`` only labels.

A resync never overwrites a judgement: the upsert leaves ``trust`` and ``supersedes`` alone.
``sync --rebuild`` drops and re-ingests the project's nodes, so it keeps the judgements first
and puts them back after, by node id: ids are derived from what a node is (project, kind,
natural key), so the re-ingested node is the same node. A node that does not come back (its
doc section was deleted) loses its judgement with it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..retrieval.pack import display_title
from ..store import audit
from ..store.db import Database
from ..store.fts import Candidate
from ..store.nodes import NODE_COLUMNS

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = [
    "EVENT",
    "SHORT",
    "Judgements",
    "MarkStaleResult",
    "NodeRef",
    "ReviewResult",
    "keep_judgements",
    "mark_stale",
    "resolve",
    "restore_judgements",
    "review",
]

TRUST_STATES = ("candidate", "verified", "rejected")
SHORT = 12  # characters of an id shown to people; any unique prefix is accepted back
MIN_PREFIX = 4
EVENT = "coalesce(n.ts, n.created_at)"  # when a node's event happened, else was recorded


@dataclass
class ReviewResult:
    id: str
    title: str
    trust: str  # candidate, verified or rejected
    previous: str
    changed: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MarkStaleResult:
    old_id: str
    old_title: str
    new_id: str
    new_title: str
    changed: bool  # False: the link was already there

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Judgements:
    """The people's judgements of one project, kept across ``sync --rebuild``."""

    trust: list[tuple[str, str]]  # (node id, verified | rejected)
    supersedes: list[tuple[str, str]]  # (newer node id, older node id)


@dataclass
class NodeRef:
    id: str
    title: str
    trust: str
    supersedes: str | None


async def resolve(db: Database, pid: str, prefix: str) -> NodeRef:
    """The node whose id starts with ``prefix`` (unique, like git's short hashes)."""
    value = prefix.strip().lower()
    if len(value) < MIN_PREFIX or any(ch not in "0123456789abcdef" for ch in value):
        raise UsageError(
            f"{prefix!r} is not a node id: give at least {MIN_PREFIX} hex characters of one "
            "(stale lists and search results show ids)"
        )
    # A range on the unique index, not LIKE (which cannot use it): hex sorts below 'g'.
    rows = await db.fetchall(
        f"select {NODE_COLUMNS}, n.supersedes from nodes n "
        "where n.id >= ? and n.id < ? and n.project_id = ? limit 2",
        (value, value + "g", pid),
    )
    if not rows:
        raise UsageError(f"no node id starts with {value!r} in this repository's memory")
    if len(rows) > 1:
        raise UsageError(f"{value!r} is the start of several node ids: give more characters")
    row = rows[0]
    return NodeRef(row[0], display_title(Candidate.from_row(row, 0.0)), row[10], row[14])


async def review(engine: Engine, node_id: str, trust: str, note: str | None = None) -> ReviewResult:
    """Record a person's judgement of one node: ``verified``, ``rejected`` or back to
    ``candidate``. Rejected ranks lower (never hidden); verified only labels. Audited."""
    if trust not in TRUST_STATES:
        raise UsageError(f"review: {trust!r} is not one of {', '.join(TRUST_STATES)}")
    db = engine.db
    async with db.transaction():
        node = await resolve(db, engine.project_id, node_id)
        if node.trust != trust:
            await db.execute("update nodes set trust = ? where id = ?", (trust, node.id))
        detail: dict[str, Any] = {"node": node.id, "trust": trust, "previous": node.trust}
        if note:
            detail["note"] = note
        await audit.record(db, engine.project_id, "review", 1, **detail)
    return ReviewResult(node.id, node.title, trust, node.trust, node.trust != trust)


async def mark_stale(engine: Engine, old_id: str, new_id: str) -> MarkStaleResult:
    """Record that ``new_id`` replaces ``old_id`` (``new.supersedes = old.id``). The old node
    ranks lower from then on and stays queryable; nothing is deleted. Audited."""
    db = engine.db
    async with db.transaction():
        old = await resolve(db, engine.project_id, old_id)
        new = await resolve(db, engine.project_id, new_id)
        if old.id == new.id:
            raise UsageError("a node cannot supersede itself", argument="new_id")
        if old.supersedes == new.id:
            raise UsageError(
                f"{new.id[:SHORT]} is already marked as superseded by {old.id[:SHORT]}: "
                "the two are the other way round"
            )
        changed = new.supersedes != old.id
        if changed and new.supersedes:
            raise UsageError(
                f"{new.id[:SHORT]} already supersedes {new.supersedes[:SHORT]} (a node replaces "
                f"one older node): choose another replacement for {old.id[:SHORT]}"
            )
        if changed:
            await db.execute("update nodes set supersedes = ? where id = ?", (old.id, new.id))
            await audit.record(db, engine.project_id, "mark-stale", 1, old=old.id, new=new.id)
    return MarkStaleResult(old.id, old.title, new.id, new.title, changed)


async def keep_judgements(db: Database, pid: str) -> Judgements:
    """Before ``sync --rebuild`` drops the nodes: what people decided about them."""
    trust = await db.fetchall(
        "select id, trust from nodes where project_id = ? and trust != 'candidate'", (pid,)
    )
    links = await db.fetchall(
        "select id, supersedes from nodes where project_id = ? and supersedes is not null",
        (pid,),
    )
    return Judgements([(a, b) for a, b in trust], [(a, b) for a, b in links])


async def restore_judgements(db: Database, kept: Judgements) -> int:
    """After the rebuild re-ingested: put them back on the nodes that came back (same ids)."""
    restored = await db.executemany(
        "update nodes set trust = ? where id = ?", [(t, i) for i, t in kept.trust]
    )
    restored += await db.executemany(
        "update nodes set supersedes = ? where id = ?", [(o, i) for i, o in kept.supersedes]
    )
    return restored
