"""BM25 candidates from the FTS5 index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .db import Database
from .nodes import NODE_COLUMNS, decode_meta

__all__ = ["TITLE_WEIGHT", "Candidate", "bm25_candidates", "load_bodies"]

TITLE_WEIGHT = 4.0  # a term in the title counts four times one in the body


@dataclass
class Candidate:
    id: str
    project_id: str
    kind: str
    ref: str
    grp: str | None
    title: str
    ts: int | None
    created_at: int
    signal: float
    provenance: str
    trust: str
    meta: dict[str, Any]
    superseded: bool
    relevance: float = 0.0
    score: float = 0.0
    body: str = ""

    @classmethod
    def from_row(cls, row: tuple[Any, ...], relevance: float) -> Candidate:
        (
            id_,
            project_id,
            kind,
            ref,
            grp,
            title,
            ts,
            created_at,
            signal,
            provenance,
            trust,
            meta,
            superseded,
        ) = row[:13]
        return cls(
            id_,
            project_id,
            kind,
            ref,
            grp,
            title,
            ts,
            created_at,
            signal,
            provenance,
            trust,
            decode_meta(meta),
            bool(superseded),
            relevance,
        )


async def bm25_candidates(
    db: Database, match: str, project_id: str, limit: int = 100
) -> list[Candidate]:
    """The best ``limit`` nodes of one project for ``match``; relevance = -bm25 (higher wins)."""
    rows = await db.fetchall(
        f"""
        select {NODE_COLUMNS}, -f.rank
        from (select rowid, rank from nodes_fts
              where nodes_fts match ? and rank match 'bm25({TITLE_WEIGHT}, 1.0)'
              order by rank limit ?) f
        join nodes n on n.seq = f.rowid
        where n.project_id = ?
        order by f.rank
        """,
        (match, limit * 3, project_id),
    )
    return [Candidate.from_row(row, float(row[13])) for row in rows[:limit]]


async def load_bodies(db: Database, candidates: list[Candidate]) -> None:
    """Fill in ``body`` for the candidates about to be packed (bodies can be large)."""
    if not candidates:
        return
    marks = ",".join("?" * len(candidates))
    rows = await db.fetchall(
        f"select id, body from nodes where id in ({marks})", [c.id for c in candidates]
    )
    bodies = dict(rows)
    for candidate in candidates:
        candidate.body = bodies.get(candidate.id, "")
