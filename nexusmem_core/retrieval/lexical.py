"""The lexical arm: BM25 over the word index, the trigram index for CJK runs, then coverage."""

from __future__ import annotations

from ..reverts import REVERTS, UNDOING_TITLE
from ..store.db import Database
from ..store.fts import (
    Candidate,
    cjk_candidates,
    linked_candidates,
    section_candidates,
    term_counts,
)
from ..store.nodes import held_changelogs
from .coverage import cover
from .fuse import rrf
from .query import Query
from .words import any_of, word_candidates

__all__ = ["ASKED", "lexical_candidates"]

# The word arm's own lists fused by rank (the kind asked for among itself, the trigram
# index's): set with the arms' fusion constant when the two were one (fuse.RRF_K was 5), and
# kept when the arms' was measured again. On the real set, BM25 MRR@10 at 5, 8, 10 and 12:
# 0.801, 0.801, 0.795, 0.791.
LEXICAL_K = 5
# How many of the kind asked for are ranked among themselves. Past the first few their fused
# share is small (1/(k + rank)), and each one is one more row for coverage to read (a release
# section runs to thousands of words). The real set scores the same at 10, 20 and 100.
ASKED = 20


async def lexical_candidates(
    db: Database, pid: str, query: Query, limit: int, as_of: int | None, k: int = LEXICAL_K
) -> list[Candidate]:
    """BM25 candidates, best first, weighed by coverage (retrieval/coverage.py); for a question
    that asks for a kind of answer (something undone, a release), fused by rank with that
    kind's own ranking; for a query with CJK text, fused by rank with the trigram index's,
    since the word index reads a CJK run as one token."""
    counts = await term_counts(db, query.terms) if query.terms else None
    words = await word_candidates(db, query.terms, pid, limit, as_of, counts)
    kept = counts.informative(query.terms) if counts is not None else []
    asked = await _asked_for(db, pid, query, kept, min(limit, ASKED), as_of) if kept else []
    if asked:
        # What the question asks for, wherever BM25 placed it among all rows: the lifts of
        # retrieval/asked.py and pairs.py raise it, so it must be a candidate.
        seen = {c.id for c in words}
        words += [c for c in asked if c.id not in seen]
        words.sort(key=lambda c: c.relevance, reverse=True)
    if counts is not None and not query.cjk:
        await cover(db, query.terms, counts, words, query.joins)
    own = {c.id for c in asked}
    if own and not query.cjk:
        # The kind asked for, ranked among itself, is a list of its own, fused by rank with
        # all rows: a revert pair holding the one name the question turns on comes up beside
        # the section that holds that name and the question's other words, as does the one
        # release of a changelog that lists what the question names. A lift of their BM25
        # could not do it: such a section scores ten times the pair. Real set (BM25 MRR@10):
        # revert questions, lift alone 0.546, fused 0.663; release questions, 0.779 -> 0.798.
        # Held out (issue 48, loo.py, eleven corpora), without it: revert questions -0.18
        # on the five corpora written after it, -0.26 on the first six.
        among = [c for c in words if c.id in own]
        if among:
            words = rrf({"bm25": words, "asked": among}, k)[:limit]
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


async def _asked_for(
    db: Database, pid: str, query: Query, kept: list[str], limit: int, as_of: int | None
) -> list[Candidate]:
    """BM25 candidates among the kind of answer the question asks for: the commits of revert
    pairs, and the commits whose subject says they revert, for something undone; the sections
    of the changelogs for a release. Counting the reverts told in words (no sha, no quoted
    subject, so no link) moved the real set's revert questions from MRR@10 0.661 to 0.709."""
    match = any_of(kept)
    if query.undone:
        return await linked_candidates(db, match, REVERTS, pid, limit, as_of, UNDOING_TITLE)
    if query.release:
        logs = await held_changelogs(db, pid)
        if logs:
            return await section_candidates(db, match, logs, pid, limit, as_of)
    return []
