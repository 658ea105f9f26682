"""BM25 candidates from the FTS5 index."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise
from math import prod
from typing import Any

from ..retrieval.cjk import bigrams, cjk_query
from .db import DB_ERRORS, Database
from .nodes import NODE_COLUMNS, decode_meta

__all__ = [
    "EARLY_ROWS",
    "NAMES_WEIGHT",
    "PATHS_WEIGHT",
    "PROBE",
    "STRATA",
    "TITLE_WEIGHT",
    "Candidate",
    "DeferredIndex",
    "TermCounts",
    "bm25_candidates",
    "bm25_each",
    "candidates_by_id",
    "candidates_by_ref",
    "candidates_by_seq",
    "cjk_candidates",
    "compact",
    "deferred_index",
    "delete_every_node",
    "linked_candidates",
    "load_bodies",
    "optimize",
    "quote_term",
    "rebuild_cjk",
    "section_candidates",
    "term_counts",
]

# BM25 column weights: a term in the title counts four times one in the body; a path the
# node touches counts half, so a file name finds its commits without drowning the prose; so
# does a word inside an identifier the node names (retrieval/names.py).
TITLE_WEIGHT = 4.0
PATHS_WEIGHT = 0.5
NAMES_WEIGHT = 0.5


def quote_term(term: str) -> str:
    """One term as an FTS5 string: always a plain phrase, never an operator or a filter."""
    return '"' + term.replace('"', '""') + '"'


# The leading NODE_COLUMNS that map one to one onto Candidate fields.
_ROW_FIELDS = (
    "id",
    "project_id",
    "kind",
    "ref",
    "grp",
    "title",
    "ts",
    "created_at",
    "signal",
    "provenance",
    "trust",
)


@dataclass
class Candidate:
    id: str
    project_id: str
    kind: str
    ref: str
    grp: str | None
    title: str
    ts: int | None
    created_at: int
    signal: float
    provenance: str
    trust: str
    meta_json: str  # read into ``meta`` when asked: most candidates are never shown
    superseded: bool
    relevance: float = 0.0
    score: float = 0.0
    body: str = ""
    paths: str = ""
    seq: int = 0
    arms: list[str] = field(default_factory=list)
    capture: str = ""  # post-install, backfilled or origin-unknown (see retrieval/search.py)
    hunk: Candidate | None = None  # a commit's best-matching file diff (retrieval/group.py)

    @cached_property
    def meta(self) -> dict[str, Any]:
        """The node's metadata, decoded on first use (a sweeping commit's lists its 500
        changed files: decoding every candidate's was 5% of a search). A stage that sets it
        (copies, chains) replaces it for the rest of the search."""
        return decode_meta(self.meta_json)

    @classmethod
    def from_row(
        cls, row: tuple[Any, ...], relevance: float, arms: list[str] | None = None
    ) -> Candidate:
        """From the columns of ``NODE_COLUMNS``, in their order."""
        plain = dict(zip(_ROW_FIELDS, row, strict=False))
        return cls(
            **plain,
            meta_json=row[11] or "{}",
            superseded=bool(row[12]),
            relevance=relevance,
            seq=int(row[13]),
            arms=list(arms or []),
        )


PROBE = 1_000  # rows walked per term to count it; beyond, its count is estimated
STRATA = 4  # the index's rowid span is probed in this many equal parts


@dataclass
class TermCounts:
    """How many indexed rows hold each term: exact up to ``PROBE``, estimated beyond it, in
    total and in each of ``STRATA`` equal parts of the rowid span."""

    rows: int  # the index's rowid span: its row count, or a little more after deletions
    hits: dict[str, int]
    edges: list[int] = field(default_factory=list)  # the parts' bounds: part k is [e[k], e[k+1])
    parts: dict[str, list[int]] = field(default_factory=dict)  # hits per part, per term

    def informative(self, terms: list[str]) -> list[str]:
        """Drop the terms that cannot change the ranking, only its cost.

        FTS5's bm25 clamps the IDF of a term found in more than half the rows to ~0 (1e-6), so
        such a term ("src", "py" in a Python repository's paths) adds nothing to any score, yet
        OR-ing it in makes FTS5 score nearly every row: a path query cost 26 ms instead of 2 at
        10k nodes. A term found nowhere is dropped too. When no term is left, all are kept.
        """
        kept = [t for t in terms if 0 < self.hits[t] <= self.rows / 2]
        return kept or terms

    def total(self, terms: list[str]) -> int:
        """The most rows an OR of ``terms`` can hit."""
        return sum(self.hits[t] for t in terms)

    def middle(self, terms: list[str], every: bool = False) -> int | None:
        """The rowid that splits the rows an OR of ``terms`` hits (``every``: an AND) into two
        halves of about equal hits; None for none. Within a part, hits are read as spread
        evenly, and the terms as independent: an AND's hits in a part are estimated as the
        part's width times the product of each term's density there."""
        weights = []
        for k, (a, b) in enumerate(pairwise(self.edges)):
            width = max(1, b - a)
            if every:
                weights.append(width * prod(self.parts[t][k] / width for t in terms))
            else:
                weights.append(sum(self.parts[t][k] for t in terms))
        half, seen = sum(weights) / 2, 0.0
        for k, weight in enumerate(weights):
            if weight and seen + weight >= half:
                a, b = self.edges[k], self.edges[k + 1]
                return a + int((b - a) * (half - seen) / weight)
            seen += weight
        return None


# Spans by database, read at most every SPAN_TTL seconds: a span a few rows short only makes the
# last part's estimate a little low, and the counts only choose how a query runs, never a score.
SPAN_TTL = 10.0
_spans: weakref.WeakKeyDictionary[Database, tuple[float, int, int]] = weakref.WeakKeyDictionary()


async def _span(db: Database) -> tuple[int, int]:
    now = time.monotonic()
    cached = _spans.get(db)
    if cached and now - cached[0] < SPAN_TTL:
        return cached[1], cached[2]
    # Rowids are node seqs, dense but for deleted nodes: the span bounds the row count. Two
    # subqueries, because SQLite seeks for a lone min() or max() and scans for both in one.
    span = await db.fetchone(
        "select (select min(id) from nodes_fts_docsize), (select max(id) from nodes_fts_docsize)"
    )
    low, high = (span[0], span[1]) if span and span[0] is not None else (0, -1)
    if high >= low:
        _spans[db] = (now, low, high)
    return low, high


async def term_counts(db: Database, terms: list[str]) -> TermCounts:
    """Each term's hits, at a cost bounded by ``PROBE`` rows a term (one or two statements).

    ``count(*)`` of a MATCH walks the term's whole doclist: 28 ms for a term in 373k of 500k
    rows. Here the rowid span is cut into ``STRATA`` parts and each is walked for at most
    ``PROBE / STRATA`` hits: a part that holds fewer is counted exactly, a fuller one is
    estimated from how densely its first hits lie. Equal parts, because a term is not spread
    evenly over time (the newest rows alone said "py" was in a third of the rows, not 75%).
    The estimate only chooses how a query is run (retrieval/words.py), never a score.
    """
    if not terms:
        return TermCounts(0, {})
    low, high = await _span(db)
    size = high - low + 1
    if size <= 0:
        return TermCounts(0, dict.fromkeys(terms, 0))
    quota = max(1, PROBE // STRATA)
    edges = [low + size * k // STRATA for k in range(STRATA + 1)]
    edges = [e for i, e in enumerate(edges) if i == 0 or e > edges[i - 1]]
    probe = (
        "select ?, ?, count(*), max(rowid) from (select rowid from nodes_fts "
        f"where nodes_fts match ? and rowid >= ? and rowid < ? order by rowid limit {quota})"
    )
    parts = len(edges) - 1
    args: list[object] = []
    for i, term in enumerate(terms):
        for k, (a, b) in enumerate(pairwise(edges)):
            # The last part is open-ended, for rows written since the span was read.
            args += [i, k, quote_term(term), a, b if k < parts - 1 else 2**62]
    rows = await db.fetchall(" union all ".join([probe] * (len(terms) * parts)), args)
    hits = [[0] * parts for _ in terms]
    for i, k, found, last in rows:
        a, b = edges[k], edges[k + 1]
        if found < quota:  # the whole part walked
            hits[i][k] = found
        else:  # ``quota`` hits in the rows a..last: that density over the part
            hits[i][k] = found * (max(b, last + 1) - a) // max(1, last - a + 1)
    return TermCounts(
        size,
        {t: sum(h) for t, h in zip(terms, hits, strict=True)},
        edges,
        dict(zip(terms, hits, strict=True)),
    )


async def bm25_candidates(
    db: Database, match: str, project_id: str, limit: int = 100, as_of: int | None = None
) -> list[Candidate]:
    """The best ``limit`` nodes of one project for ``match``; relevance = -bm25 (higher wins).
    With ``as_of``, only nodes recorded (``created_at``) at or before that moment."""
    (found,) = await bm25_each(db, [match], project_id, limit, as_of)
    return found


async def bm25_each(
    db: Database,
    matches: list[str],
    project_id: str,
    limit: int = 100,
    as_of: int | None = None,
    *,
    split: int | None = None,
) -> list[list[Candidate]]:
    """``bm25_candidates`` of each of ``matches``, run two at a time (``Database.fetch_each``).

    With ``split`` (a rowid), each match is run as two statements, the rows below ``split``
    and the rest, and their best merged: exactly the one statement's result, since FTS5 reads
    a term's IDF from the whole index whatever rowids a query asks for, but each half scores
    only its own rows, in parallel. Every statement still walks each term's whole doclist
    for that IDF, so a split pays only when there are many rows to score.
    """
    bounds = [(0, 2**62)] if split is None else [(0, split), (split, 2**62)]
    moment = 2**62 if as_of is None else as_of
    # Other projects' rows and later records are filtered after FTS ranks: look deeper so
    # they do not crowd out. A memory of one project (the usual one) has no other rows:
    # without ``as_of`` the first ``limit`` are the answer (a third of the rows to read).
    alone = limit if as_of is None else limit * 10
    shared = limit * (3 if as_of is None else 10)
    statements = [
        (_BM25_SQL, (match, low, high, alone, shared, project_id, moment))
        for match in matches
        for low, high in bounds
    ]
    results = await db.fetch_each(statements)
    out = []
    for i in range(len(matches)):
        rows = [row for part in results[i * len(bounds) : (i + 1) * len(bounds)] for row in part]
        rows.sort(key=lambda row: (row[14], row[13]), reverse=True)  # ties: newest first
        out.append([Candidate.from_row(row, float(row[14]), ["bm25"]) for row in rows[:limit]])
    return out


# bm25() in the ORDER BY, not FTS5's ``rank`` column: the same scores in the same order, but
# SQLite's sorter keeps only the top ``limit`` rows, while ``order by rank`` has FTS5 sort every
# match itself. On 93k nodes, bench_query's 33 queries: identical top 300s for 1.6x less CPU
# (bench/bench_scale.py). Rows tied in score come newest first: a common word's rows often tie
# by the hundred (one-line commit subjects of one length), and which of them make the cut must
# not be left to the sorter (store/wordtops.py breaks ties the same way). ``cross join`` keeps
# the ranked rows first: with ties in the outer order too, the planner read the project's
# nodes by index instead and looked each up among them, 80 ms at 500k nodes for any query.
_BM25_SQL = f"""
    select {NODE_COLUMNS}, -f.rank
    from (select rowid, bm25(nodes_fts, {TITLE_WEIGHT}, 1.0, {PATHS_WEIGHT}, {NAMES_WEIGHT}) as rank
          from nodes_fts where nodes_fts match ? and rowid >= ? and rowid < ?
          order by rank, rowid desc
          limit case when (select min(project_id) from nodes) = (select max(project_id) from nodes)
                then ? else ? end) f
    cross join nodes n on n.seq = f.rowid
    where n.project_id = ? and n.created_at <= ?
    order by f.rank, n.seq desc
"""


# The same ranking as _BM25_SQL, over the nodes at either end of one kind of link only (the
# few dozen commits of a repository's revert pairs): the links' own index lists them. With
# ``titled``, also the commits that MATCH expression finds: those whose subject says they undo
# something (a revert told in words names no commit to link: "Revert change so help is printed
# on stdout again", "Restore option_name parameter to BadOptionUsage").
#
# The hits are kept to those nodes outside FTS5 (``+h.rowid``: no constraint it is handed).
# Given them as ``rowid in (...)``, FTS5 ran the whole query once per listed row: 5.8 ms on
# click, 1.36 s at 50k generated commits with thousands of reverts told in words. Walking the
# hits and scoring only those listed gives the same rows in 0.9 ms and 10 ms (1,332 cases: the
# six corpora's labelled questions and the generated histories', all identical).
_LINKED_SQL = f"""
    select {NODE_COLUMNS}, -f.rank
    from (select h.rowid, h.rank
          from (select rowid,
                       bm25(nodes_fts, {TITLE_WEIGHT}, 1.0, {PATHS_WEIGHT}, {NAMES_WEIGHT}) as rank
                from nodes_fts where nodes_fts match ?) h
          where +h.rowid in (
              select m.seq from links l join nodes m on m.id in (l.src, l.dst)
              where l.kind = ? and l.project_id = ?
              union all
              select t.rowid from nodes_fts t cross join nodes k on k.seq = t.rowid
              where ? is not null and t.nodes_fts match ?
                and k.kind = 'git_commit' and k.project_id = ?)
          order by h.rank, h.rowid desc limit ?) f
    cross join nodes n on n.seq = f.rowid
    where n.project_id = ? and n.created_at <= ?
    order by f.rank, n.seq desc
"""


async def linked_candidates(
    db: Database,
    match: str,
    kind: str,
    project_id: str,
    limit: int = 100,
    as_of: int | None = None,
    titled: str | None = None,
) -> list[Candidate]:
    """BM25 candidates for ``match`` among the nodes at either end of a ``kind`` link, and
    the commits the MATCH expression ``titled`` finds when given (reverts.UNDOING_TITLE)."""
    moment = 2**62 if as_of is None else as_of
    title = titled
    rows = await db.fetchall(
        _LINKED_SQL,
        (match, kind, project_id, title, title, project_id, limit, project_id, moment),
    )
    return [Candidate.from_row(row, float(row[14]), ["bm25"]) for row in rows]


# The same ranking again, over the sections of a few documents only (a repository's
# changelogs). Asked as ``rowid in (their sections)`` inside the FTS5 query it took 35 ms on
# werkzeug (the filter sat between FTS5 and the sorter, every hit still went through); the
# best SECTION_DEPTH hits of the whole index, then kept if they are such a section, give the
# same list in 7.
SECTION_DEPTH = 5_000
_SECTIONS_SQL = f"""
    select {NODE_COLUMNS}, -f.rank
    from (select rowid, bm25(nodes_fts, {TITLE_WEIGHT}, 1.0, {PATHS_WEIGHT}, {NAMES_WEIGHT}) as rank
          from nodes_fts where nodes_fts match ?
          order by rank, rowid desc limit {SECTION_DEPTH}) f
    cross join nodes n on n.seq = f.rowid
    where n.project_id = ? and n.kind = 'doc_section' and n.created_at <= ?
      and n.grp in (select value from json_each(?))
    order by f.rank, n.seq desc
    limit ?
"""


async def section_candidates(
    db: Database,
    match: str,
    paths: list[str],
    project_id: str,
    limit: int = 100,
    as_of: int | None = None,
) -> list[Candidate]:
    """BM25 candidates for ``match`` among the sections of the documents at ``paths``."""
    moment = 2**62 if as_of is None else as_of
    rows = await db.fetchall(_SECTIONS_SQL, (match, project_id, moment, json.dumps(paths), limit))
    return [Candidate.from_row(row, float(row[14]), ["bm25"]) for row in rows]


FEW_CJK = 10  # trigram hits below which the two-character pieces are looked up too
CJK_SCAN = 20_000  # the most recent nodes a piece lookup reads (no index serves it)


async def cjk_candidates(
    db: Database, text: str, project_id: str, limit: int = 100, as_of: int | None = None
) -> list[Candidate]:
    """The best ``limit`` nodes of one project for the CJK runs of ``text`` (see
    retrieval/cjk.py): BM25 over the trigram index, then, when that finds few, substring
    matches of the query's two-character pieces."""
    grams, short = cjk_query(text)
    moment = 2**62 if as_of is None else as_of
    found: list[Candidate] = []
    if grams:
        rows = await db.fetchall(
            f"""
            select {NODE_COLUMNS}, -f.rank
            from (select rowid, bm25(nodes_cjk, {TITLE_WEIGHT}, 1.0) as rank
                  from nodes_cjk where nodes_cjk match ?
                  order by rank limit ?) f
            cross join nodes n on n.seq = f.rowid
            where n.project_id = ? and n.created_at <= ?
            order by f.rank
            """,
            (" OR ".join(quote_term(g) for g in grams), limit * 3, project_id, moment),
        )
        found = [Candidate.from_row(row, float(row[14]), ["bm25"]) for row in rows[:limit]]
    if short or len(found) < FEW_CJK:
        seen = {c.id for c in found}
        found += [c for c in await _cjk_pieces(db, text, project_id, moment) if c.id not in seen]
    return found[:limit]


async def _cjk_pieces(db: Database, text: str, project_id: str, moment: int) -> list[Candidate]:
    """Nodes holding the query's two-character CJK pieces, more distinct pieces first (one in
    the title counts four). Bounded: only the project's most recent nodes are read, a query of
    several pieces needs two of them, so one common pair ("什么") does not match alone."""
    pieces = bigrams(text)
    if not pieces:
        return []
    matched = " + ".join("(instr(n.title, ?) + instr(n.body, ?) > 0)" for _ in pieces)
    in_title = " + ".join("(instr(n.title, ?) > 0)" for _ in pieces)
    rows = await db.fetchall(
        f"""
        select {NODE_COLUMNS}, ({matched}) + 3 * ({in_title}) as hits, ({matched}) as distinct_
        from nodes n
        where n.seq in (select seq from nodes where project_id = ?
                        order by seq desc limit {CJK_SCAN})
          and n.created_at <= ? and distinct_ >= ?
        order by hits desc, n.ts desc limit 100
        """,
        (
            *[p for piece in pieces for p in (piece, piece)],
            *pieces,
            *[p for piece in pieces for p in (piece, piece)],
            project_id,
            moment,
            min(2, len(pieces)),
        ),
    )
    return [Candidate.from_row(row, float(row[14]), ["bm25"]) for row in rows]


async def load_bodies(db: Database, candidates: list[Candidate]) -> None:
    """Fill in ``body`` for the candidates about to be packed (bodies can be large)."""
    if not candidates:
        return
    marks = ",".join("?" * len(candidates))
    rows = await db.fetchall(
        f"select id, body, paths from nodes where id in ({marks})", [c.id for c in candidates]
    )
    found = {id_: (body, paths) for id_, body, paths in rows}
    for candidate in candidates:
        candidate.body, candidate.paths = found.get(candidate.id, ("", ""))


# A bulk load whose rows come from a second process (a first sync's walk of a long history)
# leaves this process waiting on them: the rows written so far are indexed meanwhile, in steps
# of at least this many. With 10,000, a walk of 10k commits indexed nearly all of its rows
# after the walk, on the sync's critical path; with 2,500 the first syncs of the six corpora
# and the generated 10k and 50k took as long or less (10k 0.98 -> 0.93 s, 50k 4.10 -> 4.01 s;
# FTS5's own merging leaves 6 segments at 50k, and `compact` merges a small index's anyway).
EARLY_ROWS = 2_500

# While rows are indexed early, these keep the index right for the rows it already holds, as
# the triggers dropped for the load would: an update or a delete of one of them (none is
# expected in a first sync, but nothing else stops one) takes its indexed text out.
_EARLY_SQL = (
    "create temp table if not exists nexusmem_indexed (upto integer not null)",
    """create temp trigger if not exists nexusmem_indexed_au
    after update of title, body, paths, names on main.nodes
    when old.seq <= (select upto from temp.nexusmem_indexed) begin
        insert into nodes_fts(nodes_fts, rowid, title, body, paths, names)
        values ('delete', old.seq, old.title, old.body, old.paths, old.names);
        insert into nodes_fts(rowid, title, body, paths, names)
        values (new.seq, new.title, new.body, new.paths, new.names);
    end""",
    """create temp trigger if not exists nexusmem_indexed_cjk_au
    after update of title, body, cjk on main.nodes
    when old.seq <= (select upto from temp.nexusmem_indexed) begin
        insert into nodes_cjk(nodes_cjk, rowid, title, body)
        select 'delete', old.seq, old.title, old.body where old.cjk;
        insert into nodes_cjk(rowid, title, body)
        select new.seq, new.title, new.body where new.cjk;
    end""",
    """create temp trigger if not exists nexusmem_indexed_ad after delete
    on main.nodes when old.seq <= (select upto from temp.nexusmem_indexed) begin
        insert into nodes_fts(nodes_fts, rowid, title, body, paths, names)
        values ('delete', old.seq, old.title, old.body, old.paths, old.names);
        insert into nodes_cjk(nodes_cjk, rowid, title, body)
        select 'delete', old.seq, old.title, old.body where old.cjk;
    end""",
)
_EARLY_DROP = (
    "drop trigger if exists temp.nexusmem_indexed_au",
    "drop trigger if exists temp.nexusmem_indexed_cjk_au",
    "drop trigger if exists temp.nexusmem_indexed_ad",
    "drop table if exists temp.nexusmem_indexed",
)


class DeferredIndex:
    """The word indexes of a bulk load: filled once at its end, or in steps while it runs
    (:meth:`step`). ``indexed``: the highest seq they hold."""

    def __init__(self, db: Database, indexed: int) -> None:
        self.db, self.indexed = db, indexed
        self._early = False
        self._stepping = asyncio.Lock()

    async def step(self, least: int | None = None) -> None:
        """Index the rows written since the last step, once there are ``least`` (by default
        :data:`EARLY_ROWS`) or more. One call on the connection's thread: no write of another
        task comes between the rows read and the mark that puts them under the temp triggers."""
        async with self._stepping:
            least = EARLY_ROWS if least is None else least
            high = await self.db.run(_index_step, self.indexed, least, True)
            self._early = self._early or high > self.indexed
            self.indexed = high

    async def finish(self) -> None:
        """Index the rest; drop what :meth:`step` set up."""
        self.indexed = await self.db.run(_index_step, self.indexed, 1, False)
        await self.close()

    async def close(self) -> None:
        if self._early:
            for sql in _EARLY_DROP:
                await self.db.execute(sql)
            self._early = False


def _index_step(conn: Any, indexed: int, least: int, early: bool) -> int:
    """Index the rows past ``indexed`` when there are ``least`` or more; the new high mark.
    ``early`` (during the load): put the rows indexed so far under the temp triggers."""
    (high,) = conn.execute("select coalesce(max(seq), 0) from nodes").fetchone()
    if high - indexed < least:
        return indexed
    conn.execute(
        "insert into nodes_fts(rowid, title, body, paths, names) "
        "select seq, title, body, paths, names from nodes where seq > ? and seq <= ?",
        (indexed, high),
    )
    conn.execute(
        "insert into nodes_cjk(rowid, title, body) select seq, title, body from nodes "
        "where seq > ? and seq <= ? and cjk",
        (indexed, high),
    )
    if early:
        for sql in _EARLY_SQL:
            conn.execute(sql)
        conn.execute("delete from temp.nexusmem_indexed")
        conn.execute("insert into temp.nexusmem_indexed values (?)", (high,))
    return int(high)


@asynccontextmanager
async def deferred_index(db: Database) -> AsyncIterator[DeferredIndex]:
    """Index the FTS table after a bulk load (or in large steps during it: ``step``), instead
    of row by row through triggers.

    Measured on 5.8k nodes: per-row triggers 0.58 s, one ``insert ... select`` 0.15 s. Only
    valid inside the caller's write transaction, and only while every row it writes is new
    (a first sync or a rebuild): with the triggers gone, an update or delete of an already
    indexed row would leave the index stale (after a step, temp triggers cover the rows it
    indexed). Dropping triggers is transactional, so a failure rolls them back with
    everything else and no other connection ever sees them missing.
    """
    (max_seq,) = await db.fetchone("select coalesce(max(seq), 0) from nodes") or (0,)
    triggers = await db.fetchall(
        "select name, sql from sqlite_master where type = 'trigger' and tbl_name = 'nodes'"
    )
    for name, _ in triggers:
        await db.execute(f'drop trigger "{name}"')
    # The word lists' triggers are gone too: the rows written now are live to them, even
    # where a rebuild hands out seqs they had seen (store/wordtops.py).
    await db.execute("update word_top_state set upto = min(upto, ?)", (max_seq,))
    index = DeferredIndex(db, max_seq)
    try:
        yield index
        await index.finish()
    finally:
        # After a failure (finish closes it otherwise): the transaction rolls back, and the
        # temp triggers of an early step go too.
        with contextlib.suppress(*DB_ERRORS):
            await index.close()
    for _, sql in triggers:
        await db.execute(sql)


async def delete_every_node(db: Database) -> None:
    """Delete every node, emptying the word indexes at once rather than row by row.

    For a rebuild of a memory holding nothing else: the delete triggers tokenize each row
    again to take it out of the index (werkzeug: half the rebuild's delete). Only inside the
    caller's write transaction, as :func:`deferred_index`: the triggers come back before it
    commits. The word lists' entries go with their rows, as the trigger would take them.
    """
    triggers = await db.fetchall(
        "select name, sql from sqlite_master where type = 'trigger' and tbl_name = 'nodes'"
    )
    for name, _ in triggers:
        await db.execute(f'drop trigger "{name}"')
    await db.execute("delete from word_tops")
    await db.execute("delete from node_files")
    await db.execute("delete from nodes")
    for table in ("nodes_fts", "nodes_cjk"):
        await db.execute(f"insert into {table}({table}) values ('delete-all')")
    for _, sql in triggers:
        await db.execute(sql)


async def candidates_by_seq(db: Database, seqs: list[int]) -> dict[int, Candidate]:
    """Candidates for the given row numbers (the vector arm's hits)."""
    if not seqs:
        return {}
    marks = ",".join("?" * len(seqs))
    rows = await db.fetchall(f"select {NODE_COLUMNS} from nodes n where n.seq in ({marks})", seqs)
    return {int(row[13]): Candidate.from_row(row, 0.0) for row in rows}


async def candidates_by_id(
    db: Database, ids: list[str], as_of: int | None = None
) -> dict[str, Candidate]:
    """Candidates for the given node ids, recorded by ``as_of`` when it is given."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = await db.fetchall(
        f"select {NODE_COLUMNS} from nodes n where n.id in ({marks}) and n.created_at <= ?",
        [*ids, 2**62 if as_of is None else as_of],
    )
    return {row[0]: Candidate.from_row(row, 0.0) for row in rows}


async def candidates_by_ref(
    db: Database,
    project_id: str,
    source: str,
    kind: str,
    refs: list[str],
    as_of: int | None = None,
) -> dict[str, Candidate]:
    """Candidates of one source and kind by their references (a commit by its sha), read
    through the (project, source, ref) index."""
    if not refs:
        return {}
    marks = ",".join("?" * len(refs))
    rows = await db.fetchall(
        f"select {NODE_COLUMNS} from nodes n where n.project_id = ? and n.source = ? "
        # ``+created_at``: not the (project, created_at) index, which reads the whole project.
        f"and n.ref in ({marks}) and n.kind = ? and +n.created_at <= ?",
        [project_id, source, *refs, kind, 2**62 if as_of is None else as_of],
    )
    return {row[3]: Candidate.from_row(row, 0.0) for row in rows}


async def rebuild_cjk(db: Database) -> None:
    """Re-make the trigram index from the nodes. FTS5's own 'rebuild' would index every node,
    and this index holds only those with CJK text."""
    await db.execute("insert into nodes_cjk(nodes_cjk) values ('delete-all')")
    await db.execute(
        "insert into nodes_cjk(rowid, title, body) select seq, title, body from nodes where cjk"
    )


COMPACT_ROWS = 20_000  # up to here, merging every segment is cheap: 12 ms at 7k rows
SMALL_SEGMENTS = 2  # ... so an index this small is merged whenever it has more
LARGE_SEGMENTS = 12  # a larger one only past this many (130 ms at 51k rows)


async def compact(db: Database) -> bool:
    """Merge the word index's segments once syncs have left too many, in a write transaction
    of its own (none when there is nothing to merge); return whether it did.

    FTS5 writes a segment each time it flushes its pending terms, and a sync flushes once for
    every row it rewrites: one new commit that changed a doc file left nine segments. A query
    looks each of its terms up in every segment: on click, the warm MCP search took 20 ms
    with nine and 16 ms with one. 'optimize' rewrites the whole index, so a large one is
    merged only once several syncs have left their segments, and pays for it then."""
    (segments,) = await db.fetchone("select count(distinct segid) from nodes_fts_idx") or (0,)
    (rows,) = await db.fetchone("select coalesce(max(seq), 0) from nodes") or (0,)
    if segments <= (SMALL_SEGMENTS if rows <= COMPACT_ROWS else LARGE_SEGMENTS):
        return False
    async with db.transaction():
        await db.execute("insert into nodes_fts(nodes_fts) values ('optimize')")
    return True


async def optimize(db: Database) -> None:
    """Merge both indexes' segments, so the terms of deleted rows are gone from the file too
    (a forgotten value must not linger in an old segment)."""
    await db.execute("insert into nodes_fts(nodes_fts) values ('optimize')")
    await db.execute("insert into nodes_cjk(nodes_cjk) values ('optimize')")
