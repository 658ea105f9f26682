"""Contradiction checks: does the most similar newer node supersede a stale candidate?

For each candidate, the most similar node recorded about a later moment (sqlite-vec k-NN on
the candidate's own stored vector, within the project) and a yes/no from a local chat model.
Every verdict, whatever it is, is cached per (old, new, model) pair, so no pair is ever sent
twice; a dismissed suggestion keeps its row for the same reason. Nothing is superseded
automatically: a "yes" is a suggestion, and ``mark-stale`` stays a person's call.

A sync runs a small batch (``contradictions.syncBatch`` new pairs) after its embedding pass,
outside the write transaction, and only when that pass reached Ollama; a chat model that was
never there is as quiet as a missing embedding model.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..render import format_date
from ..retrieval.pack import display_title
from ..store import vectors
from ..store.db import Database
from ..store.fts import Candidate
from ..store.nodes import NODE_COLUMNS
from .review import EVENT
from .stale import MIN_AGE_DAYS, StaleReport, candidates, check_args, stale

if TYPE_CHECKING:
    from ..engine import Engine
    from ..models import SyncReport

__all__ = ["check_contradictions", "judge_during_sync"]

NEIGHBOURS = 20  # k-NN depth when looking for the most similar *newer* node
SYNC_SCAN = 50  # never-judged candidates a sync looks at, at most


@dataclass
class _Pass:
    status: str = "ok"
    judged: int = 0
    cached: int = 0


async def check_contradictions(
    engine: Engine, min_age_days: int = MIN_AGE_DAYS, limit: int = 20
) -> StaleReport:
    """``stale``, after asking the chat model about each candidate and its most similar newer
    node (cached pairs are not asked again). Writes only the verdict cache."""
    check_args(min_age_days, limit)
    found = await candidates(engine.db, engine.project_id, min_age_days, limit)
    result = await _judge(engine, found, max_new=None)
    report = await stale(engine, min_age_days, limit)
    report.contradictions, report.judged, report.cached = (
        result.status,
        result.judged,
        result.cached,
    )
    return report


async def judge_during_sync(engine: Engine, report: SyncReport) -> None:
    """A sync's batch of new judgements, outside its transaction, once its embedding pass
    reached the model (``flags.judging_off`` says when it did not)."""
    cfg = engine.config.contradictions
    found = await candidates(
        engine.db, engine.project_id, MIN_AGE_DAYS, SYNC_SCAN, unjudged_by=cfg.model
    )
    result = await _judge(engine, found, max_new=cfg.sync_batch)
    report.judged = result.judged
    report.contradictions = result.status
    if result.status.startswith("skipped") and not await engine.db.fetchone(
        "select 1 from contradictions where model = ? limit 1", (cfg.model,)
    ):
        report.contradictions = "off" + result.status.removeprefix("skipped")


async def _judge(engine: Engine, found: list[tuple[Candidate, int]], max_new: int | None) -> _Pass:
    from ..embed.chat import ChatUnavailableError, OllamaJudge

    embedder = engine.embedder()
    if embedder is None:
        reason = engine.db.vectors.reason or "embed.enabled is false"
        return _Pass(f"off: no vectors ({reason}); nothing was checked")
    db, pid = engine.db, engine.project_id
    if not await vectors.has_vectors(db, embedder.model):
        return _Pass(
            f"off: nothing is embedded with {embedder.model} yet: sync with Ollama running, "
            "then check again"
        )
    cfg = engine.config.contradictions
    judge = OllamaJudge(embedder.host, cfg.model, cfg.timeout_seconds)
    result = _Pass()
    for candidate, event in found:
        newer = await _nearest_newer(db, pid, embedder.model, candidate, event)
        if newer is None:
            continue
        if await db.fetchone(
            "select 1 from contradictions where old_id = ? and new_id = ? and model = ?",
            (candidate.id, newer.id, cfg.model),
        ):
            result.cached += 1
            continue
        if max_new is not None and result.judged >= max_new:
            break
        try:
            verdict = await judge.judge(await _text(db, candidate), await _text(db, newer))
        except ChatUnavailableError as err:
            result.status = f"skipped: {err}"
            break
        async with db.transaction():
            await db.execute(
                "insert into contradictions (old_id, new_id, model, verdict, checked_at) "
                "values (?, ?, ?, ?, ?) on conflict do nothing",
                (candidate.id, newer.id, cfg.model, verdict, int(time.time())),
            )
        result.judged += 1
    return result


async def _nearest_newer(
    db: Database, pid: str, model: str, candidate: Candidate, event: int
) -> Candidate | None:
    """The most similar node recorded about a later moment than ``candidate``, by its stored
    vector; None when it has no current vector or no newer neighbour."""
    if not await db.fetchone(
        "select 1 from embeddings e join nodes n on n.seq = e.seq "
        "and n.content_hash = e.content_hash where e.seq = ? and e.model = ?",
        (candidate.seq, model),
    ):
        return None  # not embedded yet, or its text changed since
    row = await db.fetchone(
        f"select embedding from {vectors.TABLE} where rowid = ?", (candidate.seq,)
    )
    if not row:
        return None
    blob = row[0]
    vector = list(struct.unpack(f"{len(blob) // 4}f", blob))
    hits = await vectors.knn(db, pid, vector, NEIGHBOURS)
    seqs = [seq for seq, _ in hits if seq != candidate.seq]
    if not seqs:
        return None
    marks = ",".join("?" * len(seqs))
    rows = await db.fetchall(
        f"select {NODE_COLUMNS}, {EVENT} from nodes n where n.seq in ({marks})", seqs
    )
    newer = {int(r[13]): Candidate.from_row(r, 0.0) for r in rows if int(r[14]) > event}
    return next((newer[seq] for seq in seqs if seq in newer), None)


async def _text(db: Database, c: Candidate) -> str:
    """What the model reads of a node: its date, and its title unless the body repeats it."""
    row = await db.fetchone("select body from nodes where id = ?", (c.id,))
    body, title = (row[0] if row else ""), display_title(c)
    return f"({format_date(c.ts)}) " + (body if body.startswith(c.title) else f"{title}\n{body}")
