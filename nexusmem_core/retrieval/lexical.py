"""The lexical arm: BM25 over the word index, the trigram index for CJK runs, then coverage."""

from __future__ import annotations

from ..reverts import REVERTS
from ..store.db import Database
from ..store.fts import Candidate, cjk_candidates, linked_candidates, term_counts
from .coverage import cover
from .fuse import rrf
from .query import Query
from .words import any_of, word_candidates

__all__ = ["lexical_candidates"]


async def lexical_candidates(
    db: Database, pid: str, query: Query, limit: int, as_of: int | None, k: int
) -> list[Candidate]:
    """BM25 candidates, best first, weighed by coverage (retrieval/coverage.py); for a question
    about something undone, fused by rank with the revert pairs' own ranking; for a query with
    CJK text, fused by rank with the trigram index's, since the word index reads a CJK run as
    one token."""
    counts = await term_counts(db, query.terms) if query.terms else None
    words = await word_candidates(db, query.terms, pid, limit, as_of, counts)
    kept = counts.informative(query.terms) if query.undone and counts is not None else []
    paired: set[str] = set()
    if kept:
        # The commits of revert pairs that hold the question's words, wherever BM25 placed
        # them among all rows: pair_reverts lifts them, so they must be candidates.
        seen = {c.id for c in words}
        pairs = await linked_candidates(db, any_of(kept), REVERTS, pid, limit, as_of)
        words += [c for c in pairs if c.id not in seen]
        words.sort(key=lambda c: c.relevance, reverse=True)
        paired = {c.id for c in pairs}
    if counts is not None and not query.cjk:
        await cover(db, query.terms, counts, words)
    if paired and not query.cjk:
        # The pairs ranked among themselves are a list of their own, fused by rank with all
        # rows: a pair holding the one name the question turns on comes up beside the section
        # that holds that name and the question's other words. A lift of their BM25 could not
        # do it: such a section scores ten times the pair. Real set, revert questions (BM25
        # MRR@10): lift alone 0.546, fused 0.663; no other kind moved.
        among = [c for c in words if c.id in paired]
        if among:
            words = rrf({"bm25": words, "pairs": among}, k)[:limit]
            for c in words:
                c.arms = ["bm25"]
    if not query.cjk:
        return words
    pieces = await cjk_candidates(db, query.text, pid, limit, as_of)
    if not words:
        return pieces
    fused = rrf({"bm25": words, "cjk": pieces}, k)[:limit]
    for c in fused:  # both are the lexical arm; which index found it is not the user's concern
        c.arms = ["bm25"]
    return fused
