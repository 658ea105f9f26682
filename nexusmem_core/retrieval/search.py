"""The search pipeline, one stage a module, read top to bottom:

    parse_query (query.py)       the text parsed once, into the Query every stage reads,
                                 in a worker thread (see ``parsed``)
    lexical_candidates           BM25 (words.py), CJK trigrams, coverage (coverage.py);
                                 for a why-question, the commits whose message explains
                                 lifted (asked.lift_explained)
    semantic.nearest             the vector arm (semantic.py), at the same time; its rows
                                 become candidates (semantic.resolve) after both
    rrf (fuse.py)                the two arms fused by rank
    expand (imports.py)          a named file's imports weigh in
    group_commits (group.py)     a commit and its file diffs are one answer
    prior_factor (rank.py)       signal and recency
    drop_copies (copies.py)      a section copied into another file shows once
    lift_releases (asked.py)     a release question's release sections lifted (with no
                                 changelog, the version bump after each of its best commits:
                                 shipped.py), a how-to
                                 question's documentation, a which-commit question's commits,
                                 a why-question's commits and rationale sections
    pair_reverts (pairs.py)      a revert and the commit it undoes come together (lifted
                                 first for a question about something undone)
    follow (chains.py)           a failure and its fix come together
    Packer (pack.py)             the best of it in the token budget

``search`` serves one repository, ``search_all`` every registered one. Given a tracer
(why.py), ``ranked`` records what the arms found and the list after each stage, under the
stage's name above, so each result's moves can be told (``handlers.search.explain``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread

from ..chains import follow
from ..errors import NexusMemError, UsageError
from ..models import SearchResponse, SearchResult
from ..registry import ProjectEntry, check_entry, distinct_names, load_registry, one_per_project
from ..store.db import Database
from ..store.fts import Candidate, load_bodies
from . import semantic
from .asked import BODY_CHARS, lift_commits, lift_explained, lift_howto, lift_reasons, lift_releases
from .authored import authored, authored_candidates, sources_of
from .copies import drop_copies
from .fuse import PROJECT_RRF_K, rrf, unit_relevance
from .group import group_commits, unit_of
from .lexical import lexical_candidates
from .pack import Packer, echo_query, pack
from .pairs import pair_reverts
from .query import Query, parse_query
from .rank import prior_factor
from .semantic import neutral_when_unembedded
from .shipped import shipped_in
from .why import Tracer, untraced

if TYPE_CHECKING:
    from ..config import Settings
    from ..engine import Engine

__all__ = ["CANDIDATES", "parse_as_of", "parsed", "ranked", "search", "search_all"]

CANDIDATES = 100
BODY_CHUNK = 50
PARSED_HERE = 1_000  # characters: a question this short is parsed on the event loop


def parse_as_of(text: str | None) -> int | None:
    """``--as-of``: a date (the end of that day, local time) or a date and time, as unix
    seconds; None for None. An unreadable date is a one-line error."""
    if text is None:
        return None
    import datetime as dt

    value = text.strip()
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value)
            moment = dt.datetime.combine(day, dt.time(23, 59, 59))
        else:
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return int(moment.timestamp())  # a naive value is local time
    except (ValueError, OverflowError, OSError):
        raise UsageError(
            f"{text!r} is not a date: use YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]", argument="as_of"
        ) from None


def check_query(text: str, budget: int | None) -> None:
    if not text.strip():
        raise UsageError("query: give some text to search for")
    if budget is not None and not 50 <= budget <= 200_000:
        raise UsageError("must be between 50 and 200000 tokens", argument="budget")


async def parsed(text: str) -> Query:
    """``parse_query(text)``, in a worker thread when the question is long. The question is
    anyone's text, and its parse the one stretch of Python whose length the asker decides: off
    the event loop, an MCP server answers pings and other calls meanwhile, and a cancelled
    search stops waiting for it at once (the thread's result is dropped; the parse is linear
    and bounded, so the thread ends soon after). A question of at most ``PARSED_HERE``
    characters is parsed in less time than the hand-off to a thread takes."""
    if len(text) <= PARSED_HERE:
        return parse_query(text)
    return await anyio.to_thread.run_sync(parse_query, text, abandon_on_cancel=True)


async def _arms(
    engine: Engine,
    query: Query,
    vector: bool,
    as_of: int | None,
    author: list[str] | None,
    tracer: Tracer | None = None,
) -> tuple[list[Candidate], list[Candidate], str]:
    """Both arms' candidates, run at once: the vector arm waits on Ollama, then scans on a
    second core, while the word arm runs. With ``author`` (its sources' patterns), the word arm
    ranks that author's nodes only (authored.py)."""
    db, pid = engine.db, engine.project_id
    if author is None:
        words = lexical_candidates(db, pid, query, CANDIDATES, as_of)
    else:
        words = authored_candidates(db, pid, query.terms, author, CANDIDATES, as_of)
    if not vector:
        return await words, [], "off"
    off = await semantic.unavailable(engine)  # before the word arm starts on this connection
    if off is not None:
        return await words, [], off
    lexical, near = await asyncio.gather(
        words,
        semantic.nearest(engine, query, CANDIDATES, as_of),
        return_exceptions=True,  # neither is left running when the other fails
    )
    if isinstance(lexical, BaseException):
        raise lexical
    if isinstance(near, BaseException):
        raise near
    hits, used, model = near
    if tracer is not None:
        tracer.distances = dict(hits)
    # The nearest rows' nodes are read after both arms, on the word arm's connection.
    nearest = await semantic.resolve(engine, hits, model, CANDIDATES, as_of)
    return lexical, nearest if author is None else await authored(db, nearest, author), used


async def ranked(
    engine: Engine,
    query: Query,
    vector: bool,
    as_of: int | None = None,
    now: float | None = None,
    author: list[str] | None = None,
    tracer: Tracer | None = None,
) -> tuple[list[Candidate], str]:
    """One project's candidates through every stage up to packing, best first, and what
    became of the vector arm. ``as_of`` keeps only what was recorded by then, on both arms;
    ``now`` is the moment recency is measured from (the clock by default); ``author`` (the
    patterns of ``authored.sources_of``) keeps one author's nodes, and the fixes after them;
    ``tracer`` records each stage's list, under the stage's name (why.py)."""
    db, pid, k = engine.db, engine.project_id, engine.config.retrieval.fusion_k
    docs = engine.config.sources.docs.extensions
    trace = untraced if tracer is None else tracer.stage
    lexical, semantic, used = await _arms(engine, query, vector, as_of, author, tracer)
    trace("lexical_candidates", lexical)
    if query.why:  # the commit that explains, above the one that merely matches
        lexical = lift_explained(lexical, await _explaining(db, lexical))
        trace("lift_explained", lexical)
    if tracer is not None:
        tracer.arm("bm25", lexical)
        tracer.arm("vector", semantic)
    candidates, units = lexical, None
    if semantic:  # BM25 alone keeps BM25's own relevance; two arms are fused by rank
        arms = {"bm25": lexical, "vector": semantic}
        units = unit_relevance(arms, lambda c: unit_of(c, docs), k)
        candidates = rrf(arms, k)
        trace("rrf", candidates)
        await neutral_when_unembedded(engine, lexical, k)
        candidates.sort(key=lambda c: c.relevance, reverse=True)
        trace("neutral_when_unembedded", candidates)
    if engine.config.retrieval.import_expansion:
        from .imports import expand

        candidates = await expand(db, pid, query.paths, candidates)
        trace("expand", candidates)
    candidates = await group_commits(db, pid, candidates, as_of, docs, units)
    trace("group_commits", candidates)
    moment = time.time() if now is None else now
    for c in candidates:
        c.score = c.relevance * prior_factor(
            c.signal, c.ts, c.provenance, c.trust, c.superseded, moment
        )
    candidates.sort(key=lambda c: c.score, reverse=True)
    if tracer is not None:
        tracer.moment = moment
    trace("prior_factor", candidates, "score")
    candidates = await drop_copies(db, candidates)
    trace("drop_copies", candidates, "score")
    if query.release:
        candidates = lift_releases(candidates)
        trace("lift_releases", candidates, "score")
        candidates = await shipped_in(db, pid, candidates, as_of)
        trace("shipped_in", candidates, "score")
    elif query.howto:
        candidates = lift_howto(candidates)
        trace("lift_howto", candidates, "score")
    elif query.commit:
        candidates = lift_commits(candidates)
        trace("lift_commits", candidates, "score")
    elif query.why:
        candidates = lift_reasons(candidates)
        trace("lift_reasons", candidates, "score")
    candidates = await pair_reverts(db, candidates, as_of, query.undone)
    trace("pair_reverts", candidates, "score")
    candidates = await follow(db, candidates, as_of)
    trace("follow", candidates, "score")
    if author is not None:  # what the stages brought in beside them (a commit's diffs, a pair)
        candidates = await authored(db, candidates, author)
        trace("authored", candidates, "score")
    _capture(candidates, await _installed(engine))
    return candidates, used


async def _explaining(db: Database, candidates: list[Candidate]) -> set[int]:
    """The commits among ``candidates`` whose message says more than its subject."""
    seqs = [c.seq for c in candidates if c.kind == "git_commit"]
    if not seqs:
        return set()
    rows = await db.fetchall(
        "select seq from nodes where seq in (select value from json_each(?)) "
        "and length(body) > length(title) + ?",
        (json.dumps(seqs), BODY_CHARS),
    )
    return {int(seq) for (seq,) in rows}


async def _installed(engine: Engine) -> int | None:
    """When NexusMem started recording this repository: its first sync."""
    row = await engine.db.fetchone(
        "select created_at from projects where id = ?", (engine.project_id,)
    )
    return int(row[0]) if row and row[0] is not None else None


def _capture(candidates: list[Candidate], installed: int | None) -> None:
    """How each event reached memory: as it happened (after set-up), imported from before,
    or from a source that does not say when (a history file without timestamps)."""
    for c in candidates:
        if c.ts is None:
            c.capture = "origin-unknown"
        elif installed is not None and c.ts >= installed:
            c.capture = "post-install"
        else:
            c.capture = "backfilled"


async def _with_bodies(engine: Engine, chunk: list[Candidate]) -> None:
    """Bodies for a chunk about to be packed, with those of the commits' best diffs."""
    await load_bodies(engine.db, [*chunk, *(c.hunk for c in chunk if c.hunk is not None)])


def _response(
    echo: tuple[str, int],
    budget: int,
    candidates: list[Candidate],
    results: list[SearchResult],
    names: dict[str, str],
    all_projects: bool,
) -> SearchResponse:
    """The response; ``echo`` is the query as its header repeats it, and that header's tokens."""
    return SearchResponse(
        query=echo[0],
        budget=budget,
        tokens_used=echo[1] + sum(r.tokens for r in results),
        matched=len(candidates),
        results=results,
        all_projects=all_projects,
        projects=sorted(names.values()),
    )


async def search(
    engine: Engine,
    text: str,
    budget: int | None = None,
    vector: bool = True,
    as_of: str | None = None,
    now: float | None = None,
    author: str | None = None,
    tracer: Tracer | None = None,
) -> SearchResponse:
    """Rank this repository's memory against ``text`` and pack the best into ``budget``;
    with ``author``, only what that author ran or wrote (authored.py); ``tracer`` records
    how the ranking was made (why.py)."""
    check_query(text, budget)
    moment = parse_as_of(as_of)
    patterns = None if author is None else sources_of(author)
    budget = budget or engine.config.retrieval.budget
    query = await parsed(text)
    candidates, used = await ranked(engine, query, vector, moment, now, patterns, tracer)
    names = {engine.project_id: engine.repo.name}
    echo = echo_query(text, budget)  # the header's tokens come out of the budget first
    cap = engine.config.retrieval.sibling_cap
    packer = Packer(budget - echo[1], cap, query.excerpt_terms, names)
    # Bodies (patches up to maxBodyChars) are read a few at a time, only until the budget
    # is full: most of the 100 candidates never get a look.
    for start in range(0, len(candidates), BODY_CHUNK):
        chunk = candidates[start : start + BODY_CHUNK]
        await _with_bodies(engine, chunk)
        for c in chunk:
            if not packer.full:
                packer.offer(c)
        if packer.full:
            break
    response = _response(echo, budget, candidates, packer.chosen, names, all_projects=False)
    response.vector = used
    return response


async def search_all(
    settings: Settings,
    text: str,
    budget: int | None = None,
    vector: bool = True,
    as_of: str | None = None,
    now: float | None = None,
    within: Callable[[Path], Awaitable[bool]] | None = None,
    author: str | None = None,
    opener: Callable[[Path], AbstractAsyncContextManager[Engine]] | None = None,
) -> SearchResponse:
    """Search every registered repository (those ``within`` allows, when given); fuse them
    by rank within each project. ``opener`` gives a project's engine (a long-running process
    lends the ones it holds open); by default each is opened read-only for this search.

    A BM25 score means different things in a 50-node and a 50,000-node database, so each
    project's ranked list contributes 1/(k + rank) (reciprocal rank fusion, k = 60). A database
    that is missing or unreadable is reported in ``skipped`` and passed over.
    """
    from ..engine import open_engine

    check_query(text, budget)
    moment = parse_as_of(as_of)
    patterns = None if author is None else sources_of(author)
    budget = budget or 2000
    query = await parsed(text)
    fused: list[Candidate] = []
    named: dict[str, tuple[str, str]] = {}
    skipped: list[str] = []
    entries, skipped, outside = await _readable(settings, within)
    for entry in entries:
        try:
            opened = (
                open_engine(settings, Path(entry.root), read_only=True)
                if opener is None
                else opener(Path(entry.root))
            )
            async with opened as engine:
                named[engine.project_id] = (engine.repo.name, str(engine.repo.root))
                # Chains come from the database of the project that found them.
                best, _ = await ranked(engine, query, vector, moment, now, patterns)
                best = best[: CANDIDATES + 20]
                await _with_bodies(engine, best)
        except NexusMemError as err:
            skipped.append(f"{entry.root}: {err}")
            continue
        rank = 0
        for c in best:
            if not c.meta.get("fix_of"):
                rank += 1  # a fix follows its failure at the failure's place
            c.score = 1.0 / (PROJECT_RRF_K + rank)  # each project's list fused by rank
            fused.append(c)
    names = distinct_names(named)
    echo = echo_query(text, budget)
    results = pack(fused, query.excerpt_terms, budget - echo[1], 2, names, tag_project=True)
    response = _response(echo, budget, fused, results, names, all_projects=True)
    if outside:
        skipped.append(f"{outside} registered project(s) outside the folders this search may read")
    response.skipped = skipped
    return response


async def _readable(
    settings: Settings, within: Callable[[Path], Awaitable[bool]] | None
) -> tuple[list[ProjectEntry], list[str], int]:
    """The registered projects a search across them reads, one clone per origin (registry.py);
    a line for each entry passed over and why; how many are outside ``within``."""
    healthy: list[ProjectEntry] = []
    skipped: list[str] = []
    outside = 0
    for entry in load_registry(settings.home):
        if within is not None and not await within(Path(entry.root)):
            outside += 1
            continue
        found = check_entry(entry)
        if found.state != "ok":  # not there (an unmounted disk?), or not a database
            skipped.append(f"{entry.root}: {found.reason}")
            continue
        healthy.append(entry)
    entries, clones = one_per_project(healthy)
    for clone, kept in clones:
        skipped.append(
            f"{clone.root}: another clone of {clone.name}, searched once, in the one synced "
            f"last: {kept.root}"
        )
    return entries, skipped, outside
