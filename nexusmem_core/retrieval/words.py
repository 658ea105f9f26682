"""The word arm: BM25 over FTS5, exact while that is cheap, every-term-first when it is not.

FTS5 ranks by scoring every row its MATCH hits, 1.4-2 µs a row, and an OR of a query's terms
hits every row holding any one of them: at 500k nodes the median query of bench_query's mix
hits 50-80k rows and took 86 ms. So:

- A query whose terms together hit at most ``EXACT_HITS`` rows (every query on a memory of
  fewer rows than that) is ranked exactly: the OR of its terms, every hit scored.
- Beyond that, the rows holding *every* term come first: an AND of the terms. bm25 sums over
  the phrases a row holds, so under the AND each such row gets exactly the score the OR gives
  it. When fewer than ``limit`` rows hold them all, a query of three or four terms adds the
  AND of each set that leaves one term out: every row lacking at most one term, still scored
  exactly. Only when that is still short does the query fall back to the OR.
- What this can miss is a row lacking a term (two, from three terms on) that would have
  outscored the rows holding them: at 500k nodes, 96-98% of the final top 10 is what exact
  ranking gives (bench/bench_scale.py prints that agreement beside the latencies).
- A long query (pasted text) matches on its ``MAX_MATCHED`` rarest terms, and on more of its
  rarest while they hit at most ``MORE_HITS`` rows together: its common words ("after",
  "before", "use") cost a doclist walk each and barely move a score. On the real set, keeping
  a question's words this way (not only eight) lifted MRR@10 0.590 -> 0.603 and Recall@10
  0.778 -> 0.819.

A single common word ("path", in 110k of 500k rows) has no cheaper plan inside FTS5: scored in
full it took 60-400 ms at 500k nodes. Its ranking is the same for every query, though, so sync
keeps each common word's best rows (store/wordtops.py) and such a query reads them in order,
exactly ranked: 5-8 ms. When the list cannot answer exactly (``best`` returns None), the word
is scored in full as before.

A statement whose terms hit ``SPLIT_HITS`` rows or more is scored in two halves of the rowid
span at once, on two connections (``store.fts.bm25_each``): the same scores, on two cores; and
the leave-one-out ANDs run two at a time. At 500k nodes, bench_query's queries: p50 40 -> 35 ms,
mean 81 -> 59 ms, timed in alternation in one run.
"""

from __future__ import annotations

from ..store import wordtops
from ..store.db import Database
from ..store.fts import Candidate, TermCounts, bm25_each, quote_term, term_counts

__all__ = ["EXACT_HITS", "MAX_MATCHED", "SPLIT_HITS", "all_of", "any_of", "word_candidates"]

EXACT_HITS = 8_000  # hits up to which every matching row is scored (~11 ms at 500k nodes)
MAX_MATCHED = 8  # a longer query matches on its rarest terms only
MORE_HITS = EXACT_HITS // 4  # ... and on more of its rarest while they hit this many rows
SPLIT_HITS = 5_000  # rows a statement may hit from which it is scored in two halves at once


def _rarest(terms: list[str], counts: TermCounts) -> list[str]:
    """The terms a long query matches on: its ``MAX_MATCHED`` rarest, and more of the rarest
    while their rows together stay within ``MORE_HITS`` (cheap to score exactly). A question
    of twenty words on a small memory keeps them all: its ninth word may be the answer's."""
    ranked = sorted(terms, key=lambda t: counts.hits[t])
    chosen, hits = ranked[:MAX_MATCHED], counts.total(ranked[:MAX_MATCHED])
    for term in ranked[MAX_MATCHED:]:
        hits += counts.hits[term]
        if hits > MORE_HITS:
            break
        chosen.append(term)
    return chosen


def any_of(terms: list[str]) -> str:
    return " OR ".join(quote_term(t) for t in terms)


def all_of(terms: list[str]) -> str:
    return " AND ".join(quote_term(t) for t in terms)


async def word_candidates(
    db: Database,
    terms: list[str],
    project_id: str,
    limit: int,
    as_of: int | None = None,
    counts: TermCounts | None = None,
) -> list[Candidate]:
    """The best ``limit`` nodes of one project for the query ``terms`` (see the module text);
    ``counts``, when the caller has read them already."""
    if not terms:
        return []
    counts = counts or await term_counts(db, terms)
    kept = counts.informative(terms)
    if len(kept) > MAX_MATCHED:
        matched = set(_rarest(kept, counts))
        kept = [t for t in kept if t in matched]

    async def ranked(matches: list[str], split: int | None = None) -> list[list[Candidate]]:
        return await bm25_each(db, matches, project_id, limit, as_of, split=split)

    def halves(hits: int, every: bool = False) -> int | None:
        return counts.middle(kept, every) if hits >= SPLIT_HITS else None

    if len(kept) == 1 and counts.hits[kept[0]] > EXACT_HITS:
        listed = await wordtops.best(db, kept[0], project_id, limit, as_of)
        if listed is not None:
            return listed
    if len(kept) == 1 or counts.total(kept) <= EXACT_HITS:
        (found,) = await ranked([any_of(kept)], halves(counts.total(kept)))
        return found
    # An AND hits at most as many rows as its rarest term.
    fewest = min(counts.hits[t] for t in kept)
    (every,) = await ranked([all_of(kept)], halves(fewest, every=True))
    best = {c.id: c for c in every}
    # Each set that leaves one term out: a row holding exactly its terms scores the same under
    # their AND as under the OR of all, so these rank every row lacking at most one term
    # exactly. Two terms' halves would be the OR itself; from five terms on, rows holding all
    # but one are too few to fill the list, and the eight ANDs of eight common terms walked
    # 900 ms of doclists before falling back to the OR anyway (bench_scale).
    if len(best) < limit and 3 <= len(kept) <= 4:
        for found in await ranked([all_of(kept[:i] + kept[i + 1 :]) for i in range(len(kept))]):
            for c in found:
                if c.id not in best or c.relevance > best[c.id].relevance:
                    best[c.id] = c
    if len(best) < limit:
        (found,) = await ranked([any_of(kept)], halves(counts.total(kept)))
        return found
    return sorted(best.values(), key=lambda c: c.relevance, reverse=True)[:limit]
