"""The vector arm: the query embedded, its nearest nodes, and fairness to the unembedded.

The vector store is imported only when there are vectors to read: with no model, or nothing
embedded yet (BM25 alone, the first-class mode), a query neither loads it nor opens the
second connection its scan runs on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..chains import failed
from ..embed import EmbedUnavailableError
from ..errors import StoreError
from ..store.db import DB_ERRORS
from ..store.fts import Candidate, candidates_by_seq
from .coverage import COMMAND_KINDS
from .query import Query

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["nearest", "neutral_when_unembedded", "resolve", "unavailable"]

# What ends a vector scan without ending the search: SQLite's errors (sqlite-vec's exact
# scan), or the approximate one's (store/sketches.py), e.g. a query of another dimension.
SCAN_ERRORS: tuple[type[Exception], ...] = (*DB_ERRORS, StoreError)


async def unavailable(engine: Engine) -> str | None:
    """Why the vector arm cannot run ("off", or why not), or None when it can: read on the
    word arm's connection, so call it before the arms start."""
    embedder = engine.embedder(for_query=True)
    if embedder is None:
        return "off"
    # vectors.has_vectors, without loading the vector store for a memory that has none.
    if not await engine.db.fetchone(
        "select 1 from embeddings where model = ? limit 1", (embedder.model,)
    ):
        return _nothing_embedded(embedder.model)
    return None


def _nothing_embedded(model: str) -> str:
    return f"off: nothing embedded with {model} yet (a sync embeds it)"


async def nearest(
    engine: Engine, query: Query, limit: int, as_of: int | None = None
) -> tuple[list[tuple[int, float]], str, str]:
    """The part of the vector arm that runs beside the word arm: the query embedded, and the
    nearest rows, read on the database's second connection. Returns (seq, distance) nearest
    first, what became of the arm ("used" or why not) and the model.

    Nothing here reads on the word arm's connection: a read left pending there while the word
    arm's statements ran was once aborted ("abort due to ROLLBACK", a loaded machine); what
    needs that connection is done by :func:`resolve`, after both arms."""
    embedder = engine.embedder(for_query=True)
    if embedder is None:
        return [], "off", ""
    from ..store import vectors

    scan = await engine.db.beside()  # the connection itself when there is no second one
    if not await vectors.has_vectors(scan, embedder.model):
        return [], _nothing_embedded(embedder.model), ""
    try:
        (query_vector,) = await embedder.embed([query.text])
    except EmbedUnavailableError as err:
        return [], f"skipped: {err}", ""
    depth = limit if as_of is None else limit * 4  # later records are dropped below
    try:
        hits = await vectors.knn(scan, engine.project_id, query_vector, depth)
    except SCAN_ERRORS as err:  # e.g. a query vector of another dimension than the stored ones
        return [], f"skipped: {err}; sync again to re-embed", ""
    return hits, "used", embedder.model


async def resolve(
    engine: Engine, hits: list[tuple[int, float]], model: str, limit: int, as_of: int | None
) -> list[Candidate]:
    """The candidates of :func:`nearest`'s rows, nearest first.

    Vectors are keyed by row number, and a rebuild gives row numbers to other nodes: until the
    vectors are made again, a row's vector may be another node's text. Only a vector made from
    the node's current content speaks for it."""
    if not hits:
        return []
    from ..store import vectors

    own = await vectors.embedded_among(engine.db, model, [seq for seq, _ in hits])
    found = await candidates_by_seq(engine.db, [seq for seq, _ in hits if seq in own])
    ordered = [found[seq] for seq, _ in hits if seq in found]
    if as_of is not None:
        ordered = [c for c in ordered if c.created_at <= as_of][:limit]
    return ordered


async def neutral_when_unembedded(engine: Engine, lexical: list[Candidate], k: int) -> None:
    """A node with no vector yet (embedding pending, or it failed) cannot be found by the
    vector arm; missing evidence is not evidence against it. Its BM25 rank stands in for the
    vector rank it would have had, so a half-embedded corpus does not bury what is pending.

    Measured on the generated story with 128 of 644 nodes embedded: without this, every failed
    command (none embedded yet) fell out of the top 10.

    A failed command's vector is no better evidence: made from a command line and its exit,
    it is far from any question about the failure, which is told in prose ("the worker image
    would not build"), while the command's words are what the word arm matched. Its BM25
    rank stands in for its vector rank when that is the better. Generated story, hybrid
    (all-minilm), MRR@10: failed-command questions 0.245 -> 0.423 (BM25 alone: 0.401), shell
    targets 0.222 -> 0.374, all 0.758 -> 0.787; Recall@10 unchanged. Successful commands
    keep their vector rank: given the stand-in too, ``docker compose up -d`` (a BM25 match
    on "up", which coverage does not scale for a command) came first for "phone pictures
    showing up sideways in the grid", and paraphrase questions fell 0.967 -> 0.900.
    """
    embedder = engine.embedder(for_query=True)
    if embedder is None:
        return
    from ..store import vectors

    have = await vectors.embedded_among(engine.db, embedder.model, [c.seq for c in lexical])
    for rank, c in enumerate(lexical, start=1):
        stand_in = 1.0 / (k + rank)
        if c.seq not in have:
            c.relevance += stand_in
        elif c.kind in COMMAND_KINDS and failed(c.meta):
            # What rrf gave it beyond its BM25 share is its vector's; the better of the two.
            c.relevance = stand_in + max(c.relevance - stand_in, stand_in)
