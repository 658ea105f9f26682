"""Coverage: how much of what a query asks for a candidate holds, beyond chance.

BM25 sums one score per term, each damped by the row's length. A question that names several
things ("which release dropped X, added Y and fixed Z") is answered by the row that holds all
of them, often a long one (a release's section, a commit whose body explains), yet a short row
holding one rare word outscores it. So the word arm's relevance is multiplied by the share of
the query's information that a row holds, ``coverage ** POWER``, where a term's information is
its IDF in this index: a word in many rows ("does", "still", "release" in a changelog-heavy
repository) carries little, whatever any stop list says, and a rare one carries much.

A long row holds many words by chance: a 3,000-word README section holds half of any
question's words. So a term counts only by how much more it is there than a row of that
length would hold it by chance: with the term in a share ``d`` of the rows and the row
``L`` times the mean length, chance is ``1 - (1 - d) ** L``, and coverage is the IDF-weighted
excess over chance, as a share of the most there could be. Measured on the real set (BM25
MRR@10): no coverage 0.536, raw share 0.603, share beyond chance 0.638; POWER 1 over 0.5 and 2.

Which terms a candidate holds is read from a small FTS5 table in the connection's temp schema
that holds the candidates alone, with the index's own tokenizer: asked of the whole index,
each term walked its whole doclist (20 ms a query on werkzeug's 7k nodes; this way ~3).

A term in more than ``COVER_HITS`` rows is left out of the share (its IDF is small), as is a
query of one informative term (the share would be 1 for every row).
"""

from __future__ import annotations

import asyncio
import json
import math
import weakref

from ..store.db import Database
from ..store.fts import Candidate, TermCounts
from ..store.wordtops import TOKENIZER, row_averages, varints
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

# One coroutine at a time per connection fills and reads the temp table.
_locks: weakref.WeakKeyDictionary[Database, asyncio.Lock] = weakref.WeakKeyDictionary()
_EMPTY = "insert into temp.nexusmem_cover(nexusmem_cover) values ('delete-all')"
_EMPTY = "insert into temp.nexusmem_cover(nexusmem_cover) values ('delete-all')"


def information(rows: int, hits: int) -> float:
    """A term's weight: BM25's IDF, smoothed (``+ 1`` inside the log, as Lucene has it), so a
    term in many rows still weighs a little instead of FTS5's clamp to nothing."""
    return math.log((rows - hits + 0.5) / (hits + 0.5) + 1)


async def cover(
    db: Database, terms: list[str], counts: TermCounts, candidates: list[Candidate]
) -> None:
    """Scale each candidate's relevance by its coverage of ``terms``; best first again."""
    limit = min(COVER_HITS, counts.rows / 2)
    weights = {
        t: information(counts.rows, counts.hits[t]) for t in terms if 0 < counts.hits[t] <= limit
    }
    if len(weights) < 2 or not candidates:
        return
    names = list(weights)
    held, lengths = await _held(db, names, [c.seq for c in candidates])
    _, mean = await row_averages(db)
    density = [counts.hits[t] / max(1, counts.rows) for t in names]
    factor = {}
    for c in candidates:
        # What a row of this length holds by chance is not evidence: a long section holds
        # half a question's words whatever it is about. Coverage is what it holds beyond that.
        scale = lengths.get(c.seq, mean) / mean if mean else 1.0
        got = held.get(c.seq, set())
        gain = room = 0.0
        for i, (term, d) in enumerate(zip(names, density, strict=True)):
            chance = 1 - (1 - d) ** scale
            gain += weights[term] * ((i in got) - chance)
            room += weights[term] * (1 - chance)
        factor[c.seq] = max(FLOOR, gain / room if room > 0 else 0.0) ** POWER
    prose = [factor[c.seq] for c in candidates if c.kind not in COMMAND_KINDS]
    best = max(prose, default=1.0)
    for c in candidates:
        c.relevance *= best if c.kind in COMMAND_KINDS else factor[c.seq]
    candidates.sort(key=lambda c: c.relevance, reverse=True)


async def _held(
    db: Database, terms: list[str], seqs: list[int]
) -> tuple[dict[int, set[int]], dict[int, int]]:
    """Which of ``terms`` (by position) each row holds, and each row's length in tokens."""
    lock = _locks.setdefault(db, asyncio.Lock())
    async with lock:
        # Every time, not once per Database: a connection reopened under it (the MCP server
        # reopening for writing) has an empty temp schema, and "if not exists" costs a lookup.
        await db.execute(
            # Contentless: 'delete-all' empties it at once, where a plain table's delete
            # tokenized every row again (8 of a query's 10 ms on werkzeug).
            "create virtual table if not exists temp.nexusmem_cover "
            f"using fts5(title, body, paths, content='', tokenize='{TOKENIZER}')"
        )
        await db.execute(_EMPTY)  # whatever a cancelled search left
        try:
            await db.execute(
                "insert into temp.nexusmem_cover(rowid, title, body, paths) "
                "select seq, title, body, paths from nodes "
                "where seq in (select value from json_each(?))",
                (json.dumps(seqs),),
            )
            sql = " union all ".join(
                f"select {i}, rowid from temp.nexusmem_cover where nexusmem_cover match ?"
                for i in range(len(terms))
            )
            found = await db.fetchall(sql, [quote_term(t) for t in terms])
            sizes = await db.fetchall("select id, sz from temp.nexusmem_cover_docsize")
        finally:
            await db.execute(_EMPTY)
    held: dict[int, set[int]] = {}
    for i, seq in found:
        held.setdefault(seq, set()).add(i)
    return held, {seq: sum(varints(bytes(sz))) for seq, sz in sizes}
