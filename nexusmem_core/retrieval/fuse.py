"""Reciprocal rank fusion: lists ranked on unrelated scales, merged by rank position only.

A BM25 score and a cosine distance share no unit; position is the one thing they agree on. Each
list contributes 1/(k + rank) for every item it holds; an item found by both arms sums both.
k = 60 is the customary constant (Cormack et al.): it keeps rank 1 from dominating a fused
list while still rewarding agreement between the arms.
"""

from __future__ import annotations

from ..store.fts import Candidate

__all__ = ["RRF_K", "rrf"]

RRF_K = 60


def rrf(lists: dict[str, list[Candidate]], k: int = RRF_K) -> list[Candidate]:
    """Fuse ranked lists (arm name -> best-first candidates) into one, best first."""
    fused: dict[str, Candidate] = {}
    for arm, ranked in lists.items():
        for rank, candidate in enumerate(ranked, start=1):
            kept = fused.setdefault(candidate.id, candidate)
            if kept is not candidate:
                kept.relevance += 1.0 / (k + rank)
            else:
                candidate.relevance = 1.0 / (k + rank)
                candidate.arms = []
            kept.arms.append(arm)
    return sorted(fused.values(), key=lambda c: c.relevance, reverse=True)
