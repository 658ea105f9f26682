"""The best rows of each common word, kept by sync, so a one-word query does not score them all.

FTS5 ranks a MATCH by scoring every row it hits, ~1.5 µs a row: a query of one common word
("loading", in 53k of 500k rows) took 50-70 ms, and one word has no cheaper exact plan
(retrieval/words.py). But one word's ranking never changes between queries: bm25 of a single
token is its IDF, the same for every row, times a weight that depends only on the row (how often
the token is in each column, and the row's length). So sync keeps, for every token in at least
``LIST_HITS`` rows, the ``KEEP`` rows of highest weight (``word_tops``), and a query reads its
best rows from there in order, instead of scoring tens of thousands.

What keeps that exact:

- Rows written after the lists were made (seq past ``word_top_state.upto``) are scored live,
  by FTS5, beside the list: few, so cheap. So are the rows rewritten since (a doc section
  edited, a value forgotten) or given a seq the lists had seen: triggers drop their entries and
  note them in ``word_top_late``. A deleted row's entries go with it.
- The weight leaves out the IDF, so entries keep their value as the index grows: only a row's
  own text and the index's mean row length make it. A query multiplies by the IDF of now. The
  mean length moves slowly; once it has moved ``DRIFT`` (5%: a weight then moves by 2% at
  most) since the lists were made, sync makes them anew.
- A list keeps ``KEEP`` rows and remembers the weight below which it dropped the rest
  (``floor``). When the project filter or ``--as-of`` leaves too few of them to fill the
  answer above that line, the query is scored in full instead (``best`` returns None).

Sync folds the live rows into the lists once ``REFRESH_ROWS`` of them have gathered, or any
row was rewritten (``refresh``): only the new and rewritten rows are scored then, not the index.
A token that became common is scored in full once. At 500k nodes the first build scores every
common token's rows: 33 s for 502 tokens, once (bench/bench_scale.py; 3-4 s at 100k commits).

No list is kept for the token of a stop word (retrieval/query.py's ``STOP_WORDS``: "the",
"which", "was"). A question drops its stop words whenever it has another word, so only a
query of a stop word alone would read such a list, and it is scored in full instead. These are
the most common tokens of any history written in English, and so most of what a first build
scores: at 50k generated commits, 21 of 42 lists and 47% of the rows scored.

Index tokens are stemmed (porter): "loading" is the token "load". A query word is turned into
its token by the same tokenizer, through a one-row table in the connection's temp schema.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from .db import Database, share_work
from .fts import NAMES_WEIGHT, PATHS_WEIGHT, TITLE_WEIGHT, Candidate, quote_term
from .nodes import NODE_COLUMNS

__all__ = [
    "KEEP",
    "LIST_HITS",
    "REFRESH_ROWS",
    "Refreshed",
    "best",
    "refresh",
    "token_of",
    "tokens_of",
]

LIST_HITS = 8_000  # rows a token is in from which it gets a list (fewer are scored in ~11 ms)
KEEP = 1_000  # rows kept per token: ten times the candidates a search asks for
REFRESH_ROWS = 500  # live rows (written since the lists) from which sync folds them in
DRIFT = 0.05  # change of the mean row length from which sync scores the lists anew
LATE_MOST = 8  # rewritten rows a query still scores live (each costs a walk of the word's rows)
LIVE_MOST = 20_000  # rows past the lists a query still scores live; past that, in full

# The same column weights as every other BM25 statement (store/fts.py).
_BM25 = f"bm25(nodes_fts, {TITLE_WEIGHT}, 1.0, {PATHS_WEIGHT}, {NAMES_WEIGHT})"


def idf(rows: int, hits: int) -> float:
    """The IDF bm25 gives a token in ``hits`` of ``rows`` rows, as FTS5 computes it
    (fts5_aux.c: clamped to 1e-6 for a token in half the rows or more)."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > 0 else 0.0
    return value if value > 0 else 1e-6


# The tokenizer of nodes_fts, on a one-row table in each connection's temp schema. Three
# statements a word, so one coroutine at a time per connection.
TOKENIZER = "porter unicode61 remove_diacritics 2"  # nodes_fts's (store/migrations.py)
_ready: weakref.WeakKeyDictionary[Database, asyncio.Lock] = weakref.WeakKeyDictionary()
_made: weakref.WeakSet[Database] = weakref.WeakSet()


async def token_of(db: Database, word: str) -> str | None:
    """The one index token ``word`` becomes, or None when it becomes none or several."""
    rows = await _tokenized(db, word)
    return rows[0][0] if len(rows) == 1 and rows[0][1] == 1 else None


async def tokens_of(db: Database, words: Iterable[str]) -> set[str]:
    """The index tokens ``words`` become, all at once."""
    return {term for term, _ in await _tokenized(db, " ".join(words))}


async def _tokenized(db: Database, text: str) -> list[tuple[str, int]]:
    """The index tokens of ``text``, each with how often it is there."""
    lock = _ready.setdefault(db, asyncio.Lock())
    async with lock:
        if db not in _made:
            await db.execute(
                "create virtual table if not exists temp.nexusmem_words "
                f"using fts5(word, tokenize='{TOKENIZER}')"
            )
            await db.execute(
                "create virtual table if not exists temp.nexusmem_word_tokens "
                "using fts5vocab(temp, nexusmem_words, row)"
            )
            _made.add(db)
        await db.execute("insert into temp.nexusmem_words(rowid, word) values (1, ?)", (text,))
        try:
            rows = await db.fetchall("select term, cnt from temp.nexusmem_word_tokens")
        finally:
            await db.execute("delete from temp.nexusmem_words")
    return [(str(term), int(count)) for term, count in rows]


# -- the query side -------------------------------------------------------------------------


async def best(
    db: Database, word: str, project_id: str, limit: int, as_of: int | None = None
) -> list[Candidate] | None:
    """The best ``limit`` nodes of one project for the one word ``word``, as
    ``fts.bm25_candidates`` ranks them, read from its list; None when it has no list, or the
    list cannot answer exactly (then the caller scores the word in full)."""
    token = await token_of(db, word)
    if token is None:
        return None
    meta = await db.fetchone(
        "select t.hits, t.rows, t.floor, s.upto, (select max(seq) from nodes), "
        "(select count(*) from (select 1 from word_top_late limit ?)) "
        "from word_top_tokens t, word_top_state s where t.token = ?",
        (LATE_MOST + 1, token),
    )
    if meta is None:
        return None
    hits, rows, floor, upto, high, late_count = meta
    if late_count > LATE_MOST or (high or 0) - upto > LIVE_MOST:
        return None
    moment = 2**62 if as_of is None else as_of
    match = quote_term(word)  # the token itself may not stem to itself (_common_tokens)
    statements: list[tuple[str, tuple[object, ...]]] = [
        (
            f"select {NODE_COLUMNS}, t.weight from word_tops t cross join nodes n on n.seq = t.seq "
            "where t.token = ? and n.project_id = ? and n.created_at <= ? "
            "order by t.weight desc, t.seq desc limit ?",
            (token, project_id, moment, limit),
        )
    ]
    if high is not None and high > upto:
        past = (match, upto, 3 * limit, moment, project_id)
        statements.append((_LIVE_SQL.format(where="rowid > ?"), past))
    if late_count:
        late = "rowid in (select seq from word_top_late)"
        statements.append((_LIVE_SQL.format(where=late), (match, 3 * limit, moment, project_id)))
    listed, *live = await db.fetch_each(statements)
    # The IDF of now: the hits and rows when the lists were made, plus the live rows.
    fresh = sum(len(part) for part in live)
    weight_to_score = idf(rows + max(0, (high or 0) - upto), hits + fresh)
    found = {int(row[13]): (float(row[14]) * weight_to_score, row) for row in listed}
    for part in live:
        for row in part:  # live scores win: a reused seq's entry would be the old row's
            found[int(row[13])] = (float(row[14]), row)
    # Ties newest first, as fts.bm25_each breaks them.
    ranked = sorted(found.values(), key=lambda pair: (pair[0], pair[1][13]), reverse=True)
    ranked = ranked[:limit]
    # A row the list left out scores at most floor * IDF: the answer is exact only when
    # ``limit`` rows score at least that, or the list itself ran out of rows (no row is left out).
    short = len(listed) < limit and floor > 0
    if short and (len(ranked) < limit or ranked[-1][0] < floor * weight_to_score):
        return None
    return [Candidate.from_row(row, score, ["bm25"]) for score, row in ranked]


# The best live rows of one token (rows since the lists were made, or rewritten since), deeper
# than asked, as fts.bm25_each reads, since other projects' rows are filtered after the ranking.
_LIVE_SQL = f"""
    select {NODE_COLUMNS}, -f.b
    from (select rowid, {_BM25} as b from nodes_fts
          where nodes_fts match ? and {{where}} order by b, rowid desc limit ?) f
    cross join nodes n on n.seq = f.rowid
    where n.created_at <= ? and n.project_id = ?
"""


# -- the sync side --------------------------------------------------------------------------


@dataclass
class Refreshed:
    tokens: int  # tokens with a list after the refresh
    scored_in_full: int  # tokens scored over the whole index: new, or with many rows rewritten
    rows_folded: int  # live rows scored and folded in
    seconds: float = 0.0


async def refresh(db: Database, *, force: bool = False) -> Refreshed | None:
    """Fold the live rows into the lists, list the tokens that became common, drop those that
    are no longer; None when there was too little to do (fewer than ``REFRESH_ROWS`` live
    rows and none rewritten) and not ``force``.

    The reading runs outside any transaction (it can take seconds), bounded by the highest seq
    read first, so a concurrent sync's rows are simply live for the next refresh. The lists are
    then written in one short transaction.
    """
    started = time.perf_counter()
    before = await db.fetchone(_STATE_SQL) or (0, 0.0, 0, 0, 0, 0)
    upto, seen_avgdl, high, seen, tail, _ = before
    if not force and tail < REFRESH_ROWS and not seen:
        return None
    rows, avgdl = await row_averages(db)
    # No token is in more rows than there are: a small index has no common one, and reading
    # its whole vocabulary to learn that cost most of a first sync's refresh (httpx: 7 ms).
    common = await _common_tokens(db) if rows >= LIST_HITS else {}
    listed = dict(await db.fetchall("select token, floor from word_top_tokens"))  # token: floor
    anew = not seen_avgdl or abs(avgdl / seen_avgdl - 1) > DRIFT
    if anew:  # every list scored again, from the whole index
        upto, listed = 0, {}
    late = [
        s
        for (s,) in await db.fetchall(
            "select distinct seq from word_top_late where id <= ? and seq <= ?", (seen, high)
        )
    ]
    late_tokens = await _tokens_in(db, late) if late else {}
    # A rewritten row costs a walk of the token's rows to score apart (FTS5 runs a rowid list
    # one rowid at a time): past ``LATE_MOST`` of them (a value forgotten from many rows), the
    # token is scored anew over the whole index instead.
    again = {t for t in listed if len(late_tokens.get(t, ())) > LATE_MOST}
    new = [t for t in common if t not in listed or t in again]
    kept = [t for t in common if t in listed and t not in again]
    # Each statement reads one token's rows: the whole index for a new token, the live rows
    # for a listed one; the late rows apart (FTS5 cannot take a MATCH beside an OR of rowid
    # ranges).
    statements: list[tuple[str, str, tuple[object, ...]]] = []
    # The longest first: two connections share them, and the last one read runs alone.
    for token in sorted(new, key=lambda t: -common[t][0]):
        statements.append((token, "rowid <= ?", (high,)))
    for token in kept:
        statements.append((token, "rowid > ? and rowid <= ?", (upto, high)))
        mine = late_tokens.get(token)
        if mine:
            statements.append((token, f"rowid in ({','.join('?' * len(mine))})", tuple(mine)))
    floors = {t: listed.get(t, 0.0) if t not in again else 0.0 for t in common}
    kept_set = set(kept)
    folded = 0
    # What they find goes to a temp table as it comes, not into this process's memory: 502
    # lists of 1,000 rows at 500k nodes. Two statements at a time, on this connection and on
    # a reader of its own; the reader's finds are written on this one as it gets to them,
    # and the reader goes on meanwhile (waiting for this connection's statement in progress
    # held it up for most of one: the first lists at 50k commits, 0.47 s -> 0.33 s).
    await db.execute(
        "create temp table if not exists nexusmem_fold "
        "(token text not null, weight real not null, seq integer not null)"
    )
    await db.execute("delete from temp.nexusmem_fold")
    writes: list[asyncio.Future[int]] = []  # the finds' writes, queued on this connection

    async def score(conn: Database, statement: tuple[str, str, tuple[object, ...]]) -> None:
        nonlocal folded
        token, where, args = statement
        found = await conn.fetchall(
            _SCORE_SQL.format(where=where), (quote_term(common[token][1]), *args, KEEP + 1)
        )
        scale = idf(rows, common[token][0])
        weighed = [(int(seq), float(score) / scale) for seq, score in found]
        if len(weighed) > KEEP:  # the statement's best row left out: none below it is kept
            floors[token] = max(floors[token], weighed[KEEP][1])
            weighed = weighed[:KEEP]
        folded += len(weighed) if token in kept_set else 0
        found_rows = [(token, w, seq) for seq, w in weighed]
        writes.append(asyncio.ensure_future(db.executemany(_FOLD_SQL, found_rows)))

    try:
        async with db.reader() as other:
            await share_work((db, other), statements, score)
    finally:
        # Every write waited for (a failed one raised), before the lists are read back.
        outcomes = await asyncio.gather(*writes, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome

    async with db.transaction():
        if await db.fetchone(_STATE_SQL) != before:
            # Rows were written, rewritten or removed meanwhile (another sync), or another
            # refresh wrote first: what was read may be stale. The next sync does it again.
            return None
        if anew:
            await db.execute("delete from word_tops")
            await db.execute("delete from word_top_tokens")
        for token in [t for t in listed if t not in common] + sorted(again):
            await db.execute("delete from word_tops where token = ?", (token,))
            if token not in common:
                await db.execute("delete from word_top_tokens where token = ?", (token,))
        if not anew:
            # A rewritten row's entries went with the rewrite (trigger); a live row can have
            # one only from a race with this read: replaced.
            await db.execute(
                "delete from word_tops where (token, seq) in "
                "(select token, seq from temp.nexusmem_fold)"
            )
        await db.execute(
            "insert into word_tops(token, weight, seq) "
            "select token, weight, seq from temp.nexusmem_fold"
        )
        for token in new + kept:
            await db.execute(
                "insert into word_top_tokens values (?, ?, ?, ?) on conflict(token) do update "
                "set hits = excluded.hits, rows = excluded.rows, floor = excluded.floor",
                (token, common[token][0], rows, await _trim(db, token, floors[token])),
            )
        await db.execute(
            "update word_top_state set upto = ?, avgdl = ?", (high, avgdl if anew else seen_avgdl)
        )
        await db.execute("delete from word_top_late where id <= ?", (seen,))
    await db.execute("delete from temp.nexusmem_fold")
    return Refreshed(
        tokens=len(common),
        scored_in_full=len(new),
        rows_folded=folded,
        seconds=round(time.perf_counter() - started, 3),
    )


# What a refresh starts from, read again before it writes: the lists' state, the highest seq,
# the last rewrite noted, the live rows (counted up to ``REFRESH_ROWS``: what decides; a first
# sync's 50k counted in full twice took 28 ms), and the index's averages record (its row
# count and token totals: it changes with every row written or removed). Not ``count(*)`` of
# the nodes, which walks them all: 7 ms of every sync at 50k commits.
_STATE_SQL = (
    "select s.upto, s.avgdl, coalesce((select max(seq) from nodes), 0), "
    "coalesce((select max(id) from word_top_late), 0), "
    f"(select count(*) from (select 1 from nodes where seq > s.upto limit {REFRESH_ROWS})), "
    "(select block from nodes_fts_data where id = 1) "
    "from word_top_state s"
)

_FOLD_SQL = "insert into temp.nexusmem_fold values (?, ?, ?)"

# One token's best rows among those ``where`` allows, ``KEEP`` and the best one past them.
_SCORE_SQL = (
    f"select rowid, -b from (select rowid, {_BM25} as b from nodes_fts "
    f"where nodes_fts match ? and {{where}} order by b, rowid desc limit ?)"
)


async def _trim(db: Database, token: str, floor: float) -> float:
    """Keep a token's best ``KEEP`` entries; return its floor, raised to the best one dropped."""
    over = await db.fetchone(
        "select weight, seq from word_tops where token = ? order by weight desc, seq desc "
        "limit 1 offset ?",
        (token, KEEP),
    )
    if over is None:
        return floor
    weight, seq = over
    await db.execute(
        "delete from word_tops where token = ? and (weight < ? or (weight = ? and seq <= ?))",
        (token, weight, weight, seq),
    )
    return max(floor, float(weight))


async def row_averages(db: Database) -> tuple[int, float]:
    """The index's row count and mean row length in tokens, as bm25 reads them: from FTS5's
    averages record (row 1 of its data table: the row count, then each column's token total,
    as SQLite varints)."""
    row = await db.fetchone("select block from nodes_fts_data where id = 1")
    values = varints(bytes(row[0]) if row else b"")
    if not values or not values[0]:
        return 0, 0.0
    return values[0], sum(values[1:]) / values[0]


def varints(blob: bytes) -> list[int]:
    """SQLite's varints, one after another (FTS5's averages and docsize records)."""
    values, i = [], 0
    while i < len(blob):
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


# Endings tried, in order, to spell a token the tokenizer does not give back as itself.
_ENDINGS = ("e", "s", "es", "ed", "ing", "ion", "y", "ies", "ate", "al", "ous", "ive", "ize")


async def _common_tokens(db: Database) -> dict[str, tuple[int, str]]:
    """Every token in at least ``LIST_HITS`` rows but a stop word's: its row count, and a word
    the tokenizer turns into it, to query it by. Usually the token itself; but porter does not
    always stem a stem to itself ("leas", of "leases", becomes "lea"; 12 of 502 such tokens at
    500k nodes), so then the token with one of ``_ENDINGS`` ("leases"). A token no ending gives
    back gets no list (its queries are scored in full)."""
    await db.execute(
        "create virtual table if not exists temp.nexusmem_vocab "
        "using fts5vocab(main, nodes_fts, row)"
    )
    found = await db.fetchall(
        "select term, doc from temp.nexusmem_vocab where doc >= ?", (LIST_HITS,)
    )
    if not found:
        return {}
    from ..retrieval.query import STOP_WORDS  # the query's parser: not a sync's otherwise

    stop = await tokens_of(db, STOP_WORDS)
    out = {}
    for term, doc in found:
        if term in stop:
            continue
        for spelling in (term, *(term + ending for ending in _ENDINGS)):
            if await token_of(db, spelling) == term:
                out[term] = (int(doc), spelling)
                break
    return out


async def _tokens_in(db: Database, seqs: list[int]) -> dict[str, list[int]]:
    """The tokens of the given rows, tokenized as nodes_fts does: token -> its rows."""
    await db.execute(
        "create virtual table if not exists temp.nexusmem_late "
        f"using fts5(title, body, paths, names, tokenize='{TOKENIZER}')"
    )
    await db.execute(
        "create virtual table if not exists temp.nexusmem_late_tokens "
        "using fts5vocab(temp, nexusmem_late, instance)"
    )
    await db.execute("delete from temp.nexusmem_late")
    marks = ",".join("?" * len(seqs))
    await db.execute(
        "insert into temp.nexusmem_late(rowid, title, body, paths, names) "
        f"select seq, title, body, paths, names from nodes where seq in ({marks})",
        seqs,
    )
    out: dict[str, list[int]] = defaultdict(list)
    for term, doc in await db.fetchall("select distinct term, doc from temp.nexusmem_late_tokens"):
        out[term].append(int(doc))
    await db.execute("delete from temp.nexusmem_late")
    return out
