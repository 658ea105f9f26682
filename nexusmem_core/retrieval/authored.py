"""``author``: a search kept to what one author ran: ``you`` at a prompt, or one coding agent.

Who ran a command is its node's ``source`` (``shell:*`` for a prompt, ``agent:<name>`` for an
agent's hook, ``conversation:<name>`` for what its session files hold): see the table in
``collectors/agent/__init__.py``. A filter after ranking would leave a handful of the best 100
candidates; the word arm instead ranks that author's nodes only (FTS5's own ranking, the rows
kept to the author's sources as they are joined), the vector arm's nearest are kept to them,
and the stages after fusion see nothing else. A fix that follows a kept failure stays, whoever
ran it: asking what codex broke shows what mended it.
"""

from __future__ import annotations

import json

from ..collectors.agent import AGENTS, SHELL_AUTHOR
from ..errors import UsageError
from ..store.db import Database
from ..store.fts import NAMES_WEIGHT, PATHS_WEIGHT, TITLE_WEIGHT, Candidate, term_counts
from ..store.nodes import NODE_COLUMNS
from .words import any_of

__all__ = ["AUTHORS", "authored", "authored_candidates", "sources_of"]

AUTHORS = (SHELL_AUTHOR, *AGENTS.values())


def sources_of(author: str) -> list[str]:
    """The ``source`` patterns (GLOB) of the nodes ``author`` wrote; a name that is not an
    author is refused, naming the ones that are."""
    if author == SHELL_AUTHOR:
        return ["shell:*"]
    for name, shown in AGENTS.items():
        if author in (shown, name):  # `claude` as well as `claude-code`
            return [f"agent:{name}", f"conversation:{name}"]
    raise UsageError(
        f"{author!r} is not an author; use one of {', '.join(AUTHORS)}", argument="author"
    )


# The author's rows among the matches: ranked by FTS5 as every search is, joined to their
# nodes, kept to the patterns. Linear in the matches, as the unfiltered arm is.
_AUTHORED_SQL = f"""
    select {NODE_COLUMNS}, -bm25(nodes_fts, {TITLE_WEIGHT}, 1.0, {PATHS_WEIGHT}, {NAMES_WEIGHT})
    from nodes_fts cross join nodes n on n.seq = nodes_fts.rowid
    where nodes_fts match ? and n.project_id = ? and n.created_at <= ?
      and exists (select 1 from json_each(?) where n.source glob value)
    order by bm25(nodes_fts, {TITLE_WEIGHT}, 1.0, {PATHS_WEIGHT}, {NAMES_WEIGHT}), n.seq desc
    limit ?
"""
# A question with no word worth matching: that author's latest.
_LATEST_SQL = f"""
    select {NODE_COLUMNS}, 0.0 from nodes n
    where n.project_id = ? and n.created_at <= ?
      and exists (select 1 from json_each(?) where n.source glob value)
    order by n.ts is null, n.ts desc, n.seq desc limit ?
"""


async def authored_candidates(
    db: Database, pid: str, terms: list[str], patterns: list[str], limit: int, as_of: int | None
) -> list[Candidate]:
    """The word arm over the nodes of ``patterns`` alone, best first."""
    moment, given = 2**62 if as_of is None else as_of, json.dumps(patterns)
    counts = await term_counts(db, terms) if terms else None
    # Every term found somewhere: one found in most rows may still tell this author's apart.
    kept = [t for t in terms if counts is not None and counts.hits[t] > 0]
    if not kept:
        rows = await db.fetchall(_LATEST_SQL, (pid, moment, given, limit))
        return [Candidate.from_row(row, 0.0, ["bm25"]) for row in rows]
    rows = await db.fetchall(_AUTHORED_SQL, (any_of(kept), pid, moment, given, limit))
    return [Candidate.from_row(row, float(row[14]), ["bm25"]) for row in rows]


async def authored(
    db: Database, candidates: list[Candidate], patterns: list[str]
) -> list[Candidate]:
    """``candidates`` kept to the nodes of ``patterns``, and the fixes that follow those."""
    if not candidates:
        return candidates
    rows = await db.fetchall(
        "select seq from nodes where seq in (select value from json_each(?)) "
        "and exists (select 1 from json_each(?) where source glob value)",
        (json.dumps([c.seq for c in candidates]), json.dumps(patterns)),
    )
    kept = {int(seq) for (seq,) in rows}
    out: list[Candidate] = []
    for c in candidates:
        if c.seq in kept or (c.meta.get("fix_of") and out and out[-1].seq in kept):
            out.append(c)
    return out
