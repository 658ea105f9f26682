"""The vector arm: the query embedded, its nearest nodes, and fairness to the unembedded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..embed import EmbedUnavailableError
from ..errors import StoreError
from ..store import vectors
from ..store.db import DB_ERRORS
from ..store.fts import Candidate, candidates_by_seq
from .query import Query

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["neutral_when_unembedded", "semantic_candidates"]

# What ends a vector scan without ending the search: SQLite's errors (sqlite-vec's exact
# scan), or the approximate one's (store/sketches.py), e.g. a query of another dimension.
SCAN_ERRORS: tuple[type[Exception], ...] = (*DB_ERRORS, StoreError)


async def semantic_candidates(
    engine: Engine, query: Query, limit: int, as_of: int | None = None
) -> tuple[list[Candidate], str]:
    """The vector arm's candidates, nearest first, and what became of it ("used" or why not)."""
    embedder = engine.embedder(for_query=True)
    if embedder is None:
        return [], "off"
    if not await vectors.has_vectors(engine.db, embedder.model):
        return [], f"off: nothing embedded with {embedder.model} yet (run `nexusmem sync`)"
    try:
        (query_vector,) = await embedder.embed([query.text])
    except EmbedUnavailableError as err:
        return [], f"skipped: {err}"
    depth = limit if as_of is None else limit * 4  # later records are dropped below
    try:
        # On the second connection when there is one: it runs beside the word arm's statements.
        scan = await engine.db.beside()
        hits = await vectors.knn(scan, engine.project_id, query_vector, depth)
    except SCAN_ERRORS as err:  # e.g. a query vector of another dimension than the stored ones
        return [], f"skipped: {err}; run `nexusmem sync` to re-embed"
    # Vectors are keyed by row number, and a rebuild gives row numbers to other nodes: until
    # the vectors are made again, a row's vector may be another node's text. Only a vector
    # made from the node's current content speaks for it.
    own = await vectors.embedded_among(engine.db, embedder.model, [seq for seq, _ in hits])
    found = await candidates_by_seq(engine.db, [seq for seq, _ in hits if seq in own])
    ordered = [found[seq] for seq, _ in hits if seq in found]
    if as_of is not None:
        ordered = [c for c in ordered if c.created_at <= as_of][:limit]
    return ordered, "used"


async def neutral_when_unembedded(engine: Engine, lexical: list[Candidate], k: int) -> None:
    """A node with no vector yet (embedding pending, or it failed) cannot be found by the
    vector arm; missing evidence is not evidence against it. Its BM25 rank stands in for the
    vector rank it would have had, so a half-embedded corpus does not bury what is pending.

    Measured on the generated story with 128 of 644 nodes embedded: without this, every failed
    command (none embedded yet) fell out of the top 10.
    """
    embedder = engine.embedder(for_query=True)
    if embedder is None:
        return
    have = await vectors.embedded_among(engine.db, embedder.model, [c.seq for c in lexical])
    for rank, c in enumerate(lexical, start=1):
        if c.seq not in have:
            c.relevance += 1.0 / (k + rank)
