"""Reading memory back: a ranked, budgeted search (the pipeline is ``retrieval/search.py``) and
why it ranked so (``explain``), the most recent nodes, one node in full.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import Engine
from ..errors import UsageError
from ..models import NODE_KINDS, SearchResponse
from ..render import format_date
from ..retrieval.pack import display_title
from ..store.fts import Candidate
from ..store.nodes import NODE_COLUMNS

if TYPE_CHECKING:
    from ..config import Settings
    from ..retrieval.why import Explained, Tracer


async def search(
    engine: Engine,
    query: str,
    budget: int | None = None,
    vector: bool = True,
    as_of: str | None = None,
    now: float | None = None,
    author: str | None = None,
) -> SearchResponse:
    """Rank this repository's memory against ``query`` and pack the best into ``budget``.

    ``vector=False`` forces BM25 alone; otherwise the vector arm joins when it can. ``as_of``
    (a date) reads memory as it was then: only nodes recorded at or before it. ``now`` is the
    moment recency is measured from (the clock by default). ``author`` (``you``, or an agent:
    ``claude-code``, ``codex``, ...) keeps what that author ran or wrote. The pipeline is
    ``retrieval/search.py``. A question past the caps of ``retrieval.query.bound_question`` is
    cut, and the response's ``cut`` says so.
    """
    return await _searched(engine, query, budget, vector, as_of, now, author)


async def explain(
    engine: Engine,
    query: str,
    budget: int | None = None,
    vector: bool = True,
    as_of: str | None = None,
    now: float | None = None,
    author: str | None = None,
) -> Explained:
    """``search``, and why each result ranked where it did: the same results in the same
    order, packed the same, with each one's ranks in the two arms, fused relevance, priors,
    and every stage that moved it (``retrieval/why.py``), keyed by result id. For the
    viewer's Search page and ``nexusmem query --why``."""
    from ..retrieval.why import Tracer, explained

    tracer = Tracer()
    response = await _searched(engine, query, budget, vector, as_of, now, author, tracer)
    return await explained(engine.db, tracer, response)


async def _searched(
    engine: Engine,
    query: str,
    budget: int | None,
    vector: bool,
    as_of: str | None,
    now: float | None,
    author: str | None,
    tracer: Tracer | None = None,
) -> SearchResponse:
    """The pipeline on the question cut to its caps, the response saying how it was cut."""
    from ..retrieval.query import bound_question
    from ..retrieval.search import search as run_search

    text, cut = bound_question(query)
    whole = budget or engine.config.retrieval.budget
    room = _room(whole, cut)
    response = await run_search(engine, text, room, vector, as_of, now, author, tracer)
    return _noted(response, whole, cut)


async def search_all(
    settings: Settings,
    query: str,
    budget: int | None = None,
    vector: bool = True,
    as_of: str | None = None,
    now: float | None = None,
    within: Callable[[Path], Awaitable[bool]] | None = None,
    author: str | None = None,
    opener: Callable[[Path], AbstractAsyncContextManager[Engine]] | None = None,
) -> SearchResponse:
    """Search every registered repository, each project's list fused by rank; with
    ``within``, only the projects whose root it allows (the MCP client's roots). A question is
    cut as ``search`` cuts it. ``opener`` lends a project's engine (the viewer's open ones);
    by default each is opened read-only for the search."""
    from ..retrieval.query import bound_question
    from ..retrieval.search import search_all as run_search_all

    text, cut = bound_question(query)
    whole = budget or 2000
    response = await run_search_all(
        settings, text, _room(whole, cut), vector, as_of, now, within, author, opener
    )
    return _noted(response, whole, cut)


def _note_tokens(cut: str | None) -> int:
    """What the text's line saying how the question was cut costs (render.py writes it)."""
    from ..retrieval.pack import estimate_tokens

    return estimate_tokens(f"\nnote: {cut}") if cut else 0


def _room(budget: int, cut: str | None) -> int:
    """The budget left for the results once the cut note is paid for; a budget out of range
    is passed on as it is, for the search to refuse in its own words."""
    note = _note_tokens(cut)
    return budget - note if 50 + note <= budget <= 200_000 else budget


def _noted(response: SearchResponse, budget: int, cut: str | None) -> SearchResponse:
    response.cut = cut
    response.budget = budget
    response.tokens_used += _note_tokens(cut)
    return response


async def list_recent(
    engine: Engine, limit: int = 20, kind: str | None = None
) -> list[dict[str, Any]]:
    """The most recent nodes, newest first, optionally of one kind (one of ``NODE_KINDS``)."""
    if not 1 <= limit <= 500:
        raise UsageError("limit: must be between 1 and 500")
    if kind is not None and kind not in NODE_KINDS:
        raise UsageError(
            f"kind: {kind!r} is not a kind of node; the kinds are {', '.join(NODE_KINDS)}"
        )
    where, params = "n.project_id = ?", [engine.project_id]
    if kind:
        where += " and n.kind = ?"
        params.append(kind)
    rows = await engine.db.fetchall(
        f"select {NODE_COLUMNS} from nodes n where {where} "
        f"order by n.ts is null, n.ts desc, n.seq desc limit ?",
        (*params, limit),
    )
    return [_summary(Candidate.from_row(r, 0.0)) for r in rows]


def _summary(c: Candidate) -> dict[str, Any]:
    return {
        "id": c.id,
        "kind": c.kind,
        "ref": c.ref,
        "title": display_title(c),
        "date": format_date(c.ts),
        "ts": c.ts,
        "provenance": c.provenance,
        "trust": c.trust,
        "signal": c.signal,
        "superseded": c.superseded,
    }


async def get_node(engine: Engine, node_id: str) -> dict[str, Any] | None:
    """One node in full: text, files, metadata."""
    row = await engine.db.fetchone(
        f"select {NODE_COLUMNS}, n.body from nodes n where n.id = ?", (node_id,)
    )
    if row is None:
        return None
    candidate = Candidate.from_row(row, 0.0)
    files = [
        p
        for (p,) in await engine.db.fetchall(
            "select path from node_files where node_seq = ? order by path", (candidate.seq,)
        )
    ]
    return {**_summary(candidate), "meta": candidate.meta, "body": row[14], "files": files}
