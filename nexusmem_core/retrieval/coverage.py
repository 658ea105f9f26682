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

A long doc section holds a question's words by chance even beyond what its length predicts:
a reference (axios's *Request Config*, 12k characters) names every option, so any question
about a request finds most of its words there, paragraphs apart. A doc section's share is
that of its best window of ``WINDOW`` words (windows half over each other, each under the
section's title, chance reckoned at the window's length), so the section that answers in one
paragraph stands above the one that mentions everything somewhere. A changelog's version
section keeps its whole share: a release question names several of its changes, far apart.
Real set, BM25 MRR@10: 0.771 -> 0.776 (axios 0.709 -> 0.736, howto 0.735 -> 0.752, broke
0.709 -> 0.722; five rose, two fell a place); windows of 100 and 250 words: 0.773.

Two neighbouring words of the question joined (``fishcompletion``, retrieval/query.py) are a
term BM25 looks for, for the code that writes them as one identifier, but not a third piece
of information beside the two words: a row that holds the join holds those two words, next
to each other, and is counted so. Counted as its own rare term, the join outweighed the
question's other words: test diffs naming ``FishCompletion`` covered "when did fish
completion arrive together with ... a repr" better than the release that lists all three,
and a row writing "fish shell completion" lost to one writing ``FishCompletion`` for lacking
a word the question never typed. When one of the two words weighs nothing here (the index
holds "base" only inside ``baseURL``), the join is the only way a row holds it and counts
as a term as before. Real set, BM25 MRR@10: 0.789 -> 0.791 (two rose, none fell). Counting
it the other way round as well (a row holding the two words side by side holds the join)
scored 0.795 against this way's 0.801 (both with reverts.UNDOING): the join's weight came
back, for both kinds of row.

Held out (issue 48; bench/eval/real/loo.py, eleven corpora, 421 questions), without coverage:
-0.040 [-0.061, -0.021] on all, -0.048 [-0.080, -0.019] on the five corpora written after it.

A commit is one answer (retrieval/group.py), and so is its coverage: its message may hold two
of a question's rare words and its diff the other two ("lower the flush interval", and a
change to ``drain(backlog)`` that spools to disk), where a sibling's subject holds three. So
each of a commit's rows among the candidates (its message, its code diffs) is covered at least
as well as all of them together (their words, beyond the chance of their summed length).
Held out (issue 48, loo.py): +0.010 [+0.003, +0.019] on all 421 questions, +0.022 [+0.007,
+0.038] on the five corpora written after it; recent questions +0.037; 18 rose, 13 fell.
Reading in the message of a commit found by its diffs alone, to cover it with them, moved
nothing (one rose, two fell) and is not done.

A term in more than ``COVER_HITS`` rows is left out of the share (its IDF is small), as is a
query of one informative term (the share would be 1 for every row).

A bonus for the question's neighbouring words standing together in a row (FTS5's NEAR, up to
half the factor again; Metzler and Croft's sequential dependence) was here, chosen on the six
first corpora (0.728 -> 0.743). Judged held out (issue 48; bench/eval/real/loo.py, eleven
corpora, 421 questions) it did not pay: without it, -0.004 [-0.009, +0.000] on all, -0.004
[-0.011, +0.001] on the five corpora whose questions were written after it (7 rose, 12 fell),
which is within its noise; measured again beside the commit's coverage as one unit (below),
+0.000 [-0.002, +0.003] there. What it did was on the six it was chosen on (how-to +0.014,
release +0.018) and nowhere else. It was removed, with the second scan of the candidates it
cost; those six corpora's how-to and release questions fall with it by that much.
"""

from __future__ import annotations

import asyncio
import json
import math
import weakref
from collections.abc import Sequence

from ..collectors.changelog import is_changelog
from ..store.db import Database
from ..store.fts import Candidate, TermCounts, quote_term
from ..store.wordtops import TOKENIZER, row_averages, varints
from .group import unit_of

__all__ = ["COVER_HITS", "POWER", "cover"]

COVER_HITS = 5_000
POWER = 1.0
WINDOW = 150  # words: a long section's coverage is its best window's
WINDOW_SLOTS = 1024  # windows a section may have (its body's first 150k words or so)
LONG_CHARS = 2 * WINDOW * 6  # a section is long past about two windows of words
UNITS = True  # a commit's rows (its message, its code diffs) are covered together
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


def information(rows: int, hits: int) -> float:
    """A term's weight: BM25's IDF, smoothed (``+ 1`` inside the log, as Lucene has it), so a
    term in many rows still weighs a little instead of FTS5's clamp to nothing."""
    return math.log((rows - hits + 0.5) / (hits + 0.5) + 1)


async def cover(
    db: Database,
    terms: list[str],
    counts: TermCounts,
    candidates: list[Candidate],
    joins: dict[str, tuple[str, str]] | None = None,
) -> None:
    """Scale each candidate's relevance by its coverage of ``terms``; best first again.
    ``joins``: the terms that are two of the question's words
    joined (``fishcompletion``), which stand for those words (see the module text)."""
    limit = min(COVER_HITS, counts.rows / 2)
    weights = {
        t: information(counts.rows, counts.hits[t]) for t in terms if 0 < counts.hits[t] <= limit
    }
    # A join stands for its two words when both weigh; when one does not (the index holds
    # "base" only inside ``baseURL``), the join is the only way the row holds it, and counts.
    joins = {j: parts for j, parts in (joins or {}).items() if all(p in weights for p in parts)}
    joined = [j for j in joins if j in weights]
    for join in joined:
        del weights[join]
    if len(weights) < 2 or not candidates:
        return
    names = list(weights)
    # A long doc section's share is its best window's (see WINDOW), but a changelog's: its
    # version section lists changes a question may name several of, far apart.
    sections = [
        c.seq
        for c in candidates
        if c.kind == "doc_section" and not is_changelog(c.ref.split("#", 1)[0])
    ]
    seqs = [c.seq for c in candidates]
    held, lengths = await _held(db, names + joined, seqs, sections)
    _spelled_together(held, names, joined, joins)
    _, mean = await row_averages(db)
    density = [counts.hits[t] / max(1, counts.rows) for t in names]

    def share_of(row: int) -> float:
        return share(held.get(row, set()), lengths.get(row, mean))

    def share(got: set[int], length: float) -> float:
        # What a row of this length holds by chance is not evidence: a long section holds
        # half a question's words whatever it is about. Coverage is what it holds beyond that.
        scale = length / mean if mean else 1.0
        gain = room = 0.0
        for i, (term, d) in enumerate(zip(names, density, strict=True)):
            chance = 1 - (1 - d) ** scale
            gain += weights[term] * ((i in got) - chance)
            room += weights[term] * (1 - chance)
        return max(FLOOR, gain / room if room > 0 else 0.0) ** POWER

    factor = {c.seq: share_of(c.seq) for c in candidates}
    windowed: dict[int, float] = {}
    for row in lengths:
        if row < 0:  # a window of a long section
            seq = -row // WINDOW_SLOTS
            windowed[seq] = max(windowed.get(seq, 0.0), share_of(row))
    factor.update(windowed)
    for rows in _units(candidates).values() if UNITS else ():
        if len(rows) > 1:
            got = set().union(*(held.get(row, set()) for row in rows))
            whole = share(got, sum(lengths.get(row, mean) for row in rows))
            for row in rows:
                factor[row] = max(factor[row], whole)
    prose = [factor[c.seq] for c in candidates if c.kind not in COMMAND_KINDS]
    best = max(prose, default=1.0)
    for c in candidates:
        c.relevance *= best if c.kind in COMMAND_KINDS else factor[c.seq]
    candidates.sort(key=lambda c: c.relevance, reverse=True)


async def _held(
    db: Database,
    terms: list[str],
    seqs: list[int],
    sections: Sequence[int] = (),
) -> tuple[dict[int, set[int]], dict[int, int]]:
    """Which of ``terms`` (by position) each row holds, and each row's length in tokens; of
    the rows ``seqs``, and of each
    window of those of ``sections`` longer than two windows (keyed ``-(seq * WINDOW_SLOTS +
    n)``), each window under its row's title."""
    lock = _locks.setdefault(db, asyncio.Lock())
    async with lock:
        # Every time, not once per Database: a connection reopened under it (the MCP server
        # reopening for writing) has an empty temp schema, and "if not exists" costs a lookup.
        await db.execute(
            # Contentless: 'delete-all' empties it at once, where a plain table's delete
            # tokenized every row again (8 of a query's 10 ms on werkzeug).
            "create virtual table if not exists temp.nexusmem_cover "
            f"using fts5(title, body, paths, names, content='', tokenize='{TOKENIZER}')"
        )
        await db.execute(_EMPTY)  # whatever a cancelled search left
        try:
            rows = []
            if sections:
                rows = await db.fetchall(
                    "select seq, title, body from nodes where seq in "
                    "(select value from json_each(?)) and length(body) > ?",
                    (json.dumps(list(sections)), LONG_CHARS),
                )
            # A long section's share is its best window's (cover() puts it in place of its
            # whole row's): the whole row is not read in, only its windows. Tokenized whole
            # as well, the longest candidates were a third of a search's time (click).
            windowed = {seq for seq, _, _ in rows}
            await db.execute(
                "insert into temp.nexusmem_cover(rowid, title, body, paths, names) "
                "select seq, title, body, paths, names from nodes "
                "where seq in (select value from json_each(?))",
                (json.dumps([seq for seq in seqs if seq not in windowed]),),
            )
            if rows:
                windows = [
                    (-(seq * WINDOW_SLOTS + n), title, text)
                    for seq, title, body in rows
                    for n, text in enumerate(_windows(body))
                ]
                await db.executemany(
                    "insert into temp.nexusmem_cover(rowid, title, body, paths, names) "
                    "values (?, ?, ?, '', '')",
                    windows,
                )
            found = await db.fetchall(_matching(len(terms)), [quote_term(t) for t in terms])
            sizes = await db.fetchall("select id, sz from temp.nexusmem_cover_docsize")
        finally:
            await db.execute(_EMPTY)
    return _by_row(found), {seq: sum(varints(bytes(sz))) for seq, sz in sizes}


def _spelled_together(
    held: dict[int, set[int]],
    names: list[str],
    joined: list[str],
    joins: dict[str, tuple[str, str]],
) -> None:
    """A row holding a join (``fishcompletion``, held by position after ``names``) holds its
    two words: counted so, not as a third term of its own."""
    position = {name: i for i, name in enumerate(names)}
    for _row, got in held.items():
        for i, join in enumerate(joined, start=len(names)):
            if i not in got:
                continue
            got.discard(i)
            parts = joins[join]
            got.update(position[p] for p in parts if p in position)


def _units(candidates: list[Candidate]) -> dict[str, list[int]]:
    """The rows of each commit among ``candidates``: its message and its code diffs (a diff
    of a prose file lends its commit nothing, retrieval/group.py)."""
    units: dict[str, list[int]] = {}
    for c in candidates:
        if (unit := unit_of(c)) is not None:
            units.setdefault(unit, []).append(c.seq)
    return units


def _windows(body: str) -> list[str]:
    """``body`` in windows of ``WINDOW`` words, each half over the one before."""
    words = body.split()
    step = WINDOW // 2
    return [
        " ".join(words[start : start + WINDOW])
        for start in range(0, max(1, len(words) - step), step)
    ][:WINDOW_SLOTS]


def _matching(n: int) -> str:
    """One statement: the rows of the temp table each of ``n`` MATCH expressions hits."""
    return " union all ".join(
        f"select {i}, rowid from temp.nexusmem_cover where nexusmem_cover match ?" for i in range(n)
    )


def _by_row(found: list[tuple[int, int]]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for i, seq in found:
        out.setdefault(seq, set()).add(i)
    return out
