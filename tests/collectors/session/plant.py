"""Conversation turns as the conversation source stores them (its node contract), planted
straight into a real database: the session summaries read nothing else."""

from __future__ import annotations

import time

from nexusmem_core.engine import Engine
from nexusmem_core.models import Node
from nexusmem_core.store.nodes import upsert_nodes, upsert_project

Exchange = tuple[str, str, float]  # question, answer, signal

RETRY = [
    ("Why do uploads fail under load?\nSee the logs from Tuesday.", "S3 timed out.", 0.8),
    ("ok", "Done.", 0.1),
    ("Should we raise the retry budget?", "Yes: five retries, because three failed.", 0.7),
]


def turn_node(
    engine: Engine,
    session: str,
    turn: int,
    exchange: Exchange,
    ts: int,
    source: str = "conversation:claude",
) -> Node:
    question, answer, signal = exchange
    return Node(
        project_id=engine.project_id,
        kind="conversation_turn",
        source=source,
        ref=f"{session}:{turn}:0",
        title=question.splitlines()[0][:100],
        body=f"Q: {question}\n\nA: {answer}",
        ts=ts,
        signal=signal,
        provenance="recorded",
        grp=f"{session}:{turn}",
        meta={
            "session": session,
            "turn": turn,
            "chunk": 0,
            "chunks": 1,
            "q_len": len(question),
            "file": f"/transcripts/{session}.jsonl",
            "cwd": str(engine.repo.root),
            "agent": source.split(":")[1],
        },
    )


async def plant(
    engine: Engine,
    session: str,
    exchanges: list[Exchange] | None = None,
    *,
    minutes_ago: int = 120,
    first_turn: int = 0,
    source: str = "conversation:claude",
) -> int:
    """Write ``exchanges`` as turns ``first_turn``.. of ``session``, a minute apart, the last
    one ``minutes_ago``; return that last turn's time."""
    exchanges = RETRY if exchanges is None else exchanges
    last = int(time.time()) - minutes_ago * 60
    first = last - (len(exchanges) - 1) * 60
    nodes = [
        turn_node(engine, session, first_turn + i, exchange, first + i * 60, source)
        for i, exchange in enumerate(exchanges)
    ]
    repo = engine.repo
    async with engine.db.transaction():
        await upsert_project(engine.db, engine.project_id, repo.name, str(repo.root), repo.origin)
        await upsert_nodes(engine.db, nodes)
    return last
