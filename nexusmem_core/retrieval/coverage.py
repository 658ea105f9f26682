"""Coverage: how much of what a query asks for a candidate holds.

BM25 sums one score per term, each damped by the row's length. A question that names several
things ("which release dropped X, added Y and fixed Z") is answered by the row that holds all
of them, often a long one (a release's section, a commit whose body explains), yet a short row
holding one rare word outscores it. So the word arm's relevance is multiplied by the share of
the query's information that a row holds, ``coverage ** POWER``, where a term's information is
its IDF in this index: a word in many rows ("does", "still", "release" in a changelog-heavy
repository) carries little, whatever any stop list says, and a rare one carries much.

A term in more than ``COVER_HITS`` rows is left out of the share (its IDF is small, and
looking it up walks its whole doclist), as is a query of one informative term (the share
would be 1 for every row).
"""

from __future__ import annotations

import json
import math

from ..store.db import Database
from ..store.fts import Candidate, TermCounts
from .query import quote_term

__all__ = ["COVER_HITS", "POWER", "cover"]

COVER_HITS = 5_000
POWER = 1.0
FLOOR = 0.1  # the least share: a row holding none of the rare terms keeps its BM25 order
# A command line is not prose: a question describes it ("the staging load test that failed")
# in words it cannot hold, so its share measures its length, not its match. Coverage says
# nothing of it: it keeps its BM25 standing against the best-covered prose row (it is scaled
# by that row's factor). On the generated story's failed-command questions, scaling commands
# by their own share cost MRR@10 0.258 -> 0.236; this way it is 0.347.
COMMAND_KINDS = frozenset(("shell_command",))

_HELD = (
    "select {i}, rowid from nodes_fts where nodes_fts match ? "
    "and rowid in (select value from json_each(?))"
)


def idf(rows: int, hits: int) -> float:
    """BM25's IDF, as FTS5 computes it (without its clamp at zero)."""
    return math.log((rows - hits + 0.5) / (hits + 0.5) + 1)


async def cover(
    db: Database, terms: list[str], counts: TermCounts, candidates: list[Candidate]
) -> None:
    """Scale each candidate's relevance by its coverage of ``terms``; best first again."""
    limit = min(COVER_HITS, counts.rows / 2)
    weights = {t: idf(counts.rows, counts.hits[t]) for t in terms if 0 < counts.hits[t] <= limit}
    if len(weights) < 2 or not candidates:
        return
    seqs = json.dumps([c.seq for c in candidates])
    names = list(weights)
    sql = " union all ".join(_HELD.format(i=i) for i in range(len(names)))
    args: list[object] = []
    for term in names:
        args += [quote_term(term), seqs]
    held: dict[int, float] = {}
    for i, seq in await db.fetchall(sql, args):
        held[seq] = held.get(seq, 0.0) + weights[names[i]]
    total = sum(weights.values())
    factor = {c.seq: max(FLOOR, held.get(c.seq, 0.0) / total) ** POWER for c in candidates}
    prose = [factor[c.seq] for c in candidates if c.kind not in COMMAND_KINDS]
    best = max(prose, default=1.0)
    for c in candidates:
        c.relevance *= best if c.kind in COMMAND_KINDS else factor[c.seq]
    candidates.sort(key=lambda c: c.relevance, reverse=True)
