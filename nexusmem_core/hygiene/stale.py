"""Stale candidates: old claims that nothing has confirmed since, and the suggestions on them.

A *stale candidate* is a non-observed node (authored, recorded, derived) whose event time
(``ts``, else when it was recorded) is older than the age, with nothing confirming it:

- no person verified it (or rejected it: that is a judgement already made);
- nothing supersedes it yet (``mark-stale`` was not run on it);
- its source was not revisited since: no observed event (a commit, a diff) touched the file
  its group names after it. A doc section's group is its document, so a later commit that
  edits the document confirms the sections it left standing (such a commit also re-dates
  them). The files a conversation talks about are not its source: a later change to them is
  how a claim goes stale, not a confirmation.

This is a heuristic of time and provenance, not of content; ``contradictions.py`` adds
content. Its "yes" verdicts show under their candidate as "likely superseded by" until a
person acts on them: dismisses them here, reviews the node, or marks it stale.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..render import format_date
from ..retrieval.pack import display_title
from ..store import audit
from ..store.db import Database
from ..store.fts import Candidate
from ..store.nodes import NODE_COLUMNS
from .flags import OPEN, count_open
from .review import EVENT, SHORT, resolve

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = [
    "MIN_AGE_DAYS",
    "DismissResult",
    "OpenSuggestion",
    "OpenSuggestions",
    "StaleCandidate",
    "StaleReport",
    "Suggestion",
    "candidates",
    "check_args",
    "count_candidates",
    "count_open",
    "dismiss",
    "open_suggestions",
    "stale",
]

MIN_AGE_DAYS = 45


@dataclass
class DismissResult:
    id: str
    title: str
    dismissed: int  # suggestions silenced

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Suggestion:
    """A newer node a chat model judged to supersede or contradict a stale candidate."""

    id: str
    title: str
    date: str
    model: str


@dataclass
class StaleCandidate:
    id: str
    kind: str
    title: str
    date: str
    ts: int | None
    provenance: str
    age_days: int
    suggestions: list[Suggestion] = field(default_factory=list)


@dataclass
class StaleReport:
    min_age_days: int
    candidates: list[StaleCandidate]  # the oldest ``limit`` of them
    total: int = 0  # how many there are in all
    contradictions: str = "not checked"  # "ok", or "off: ..." / "skipped: ..." and why
    judged: int = 0  # pairs the chat model answered in this call
    cached: int = 0  # pairs answered from the cache

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def counted(self) -> str:
        """How many were listed of how many there are: "the oldest 20 of 407 ..."."""
        what = (
            f"non-observed node{'' if self.total == 1 else 's'} older than {self.min_age_days} "
            "days with nothing confirming them"
        )
        shown = len(self.candidates)
        if shown < self.total:
            return f"the oldest {shown:,} of {self.total:,} {what}"
        return f"{self.total:,} {what}"

    def lines(self) -> list[str]:
        """One line per candidate, oldest first, its open suggestions indented under it."""
        out = []
        for c in self.candidates:
            out.append(f"{c.date}  {c.id[:SHORT]}  [{c.provenance}] {c.title}  ({c.age_days} days)")
            out += [
                f"    likely superseded by {s.id[:SHORT]} {s.title} ({s.date})"
                for s in c.suggestions
            ]
        return out


@dataclass
class OpenSuggestion:
    """A "likely superseded" suggestion nobody has acted on: the older node, the newer one."""

    old_id: str
    old_title: str
    old_date: str
    new_id: str
    new_title: str
    new_date: str
    model: str
    checked_at: int


@dataclass
class OpenSuggestions:
    suggestions: list[OpenSuggestion]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ``cross join``: the files first, by their path index, then each one's node by seq. Left to
# itself the planner walked every node of the project for each candidate (quadratic: 747 ms
# for the review queue of requests with 9,468 nodes, 8 ms this way; bench/bench_viewer.py).
_STALE = f"""
from nodes n
where n.project_id = ? and n.provenance != 'observed' and n.trust = 'candidate'
  and {EVENT} < ?
  and not exists (select 1 from nodes s where s.supersedes = n.id)
  and not exists (
      select 1 from node_files f cross join nodes o on o.seq = f.node_seq
      where f.path = n.grp and o.project_id = n.project_id and o.provenance = 'observed'
        and coalesce(o.ts, o.created_at) > {EVENT})
"""
_CANDIDATES = (
    f"select {NODE_COLUMNS}, {EVENT} as event {_STALE} {{unjudged}} order by event, n.seq limit ?"
)


async def candidates(
    db: Database, pid: str, min_age_days: int, limit: int, unjudged_by: str | None = None
) -> list[tuple[Candidate, int]]:
    """Stale candidates with their event times, oldest first; with ``unjudged_by``, only those
    that model never judged (a sync's batch: what was judged once waits for an explicit
    ``--check-contradictions``, so a sync with nothing new to ask costs one query)."""
    unjudged, params = "", [pid, _cutoff(min_age_days)]
    if unjudged_by:
        unjudged = (
            "and not exists(select 1 from contradictions c where c.old_id = n.id and c.model = ?)"
        )
        params.append(unjudged_by)
    rows = await db.fetchall(_CANDIDATES.format(unjudged=unjudged), (*params, limit))
    return [(Candidate.from_row(row, 0.0), int(row[14])) for row in rows]


async def count_candidates(db: Database, pid: str, min_age_days: int) -> int:
    """How many stale candidates there are in all: one query, the list's without its limit."""
    row = await db.fetchone(f"select count(*) {_STALE}", (pid, _cutoff(min_age_days)))
    return int(row[0]) if row else 0


def _cutoff(min_age_days: int) -> int:
    return int(time.time()) - min_age_days * 86_400


def check_args(min_age_days: int, limit: int) -> None:
    if not 0 <= min_age_days <= 36_500:
        raise UsageError("must be between 0 and 36500", argument="min_age_days")
    if not 1 <= limit <= 1000:
        raise UsageError("must be between 1 and 1000", argument="limit")


async def stale(engine: Engine, min_age_days: int = MIN_AGE_DAYS, limit: int = 20) -> StaleReport:
    """Non-observed nodes older than ``min_age_days`` with nothing confirming them, the oldest
    ``limit`` first, each with its open "likely superseded" suggestions, and how many there
    are in all. Writes nothing."""
    check_args(min_age_days, limit)
    db, pid = engine.db, engine.project_id
    found = await candidates(db, pid, min_age_days, limit)
    # Counted only when the list is full: a shorter one is all there is.
    total = len(found) if len(found) < limit else await count_candidates(db, pid, min_age_days)
    now = time.time()
    report = StaleReport(min_age_days, [], total=total)
    for c, event in found:
        report.candidates.append(
            StaleCandidate(
                id=c.id,
                kind=c.kind,
                title=display_title(c),
                date=format_date(c.ts),
                ts=c.ts,
                provenance=c.provenance,
                age_days=int((now - event) // 86_400),
                suggestions=await _suggestions(engine.db, c.id),
            )
        )
    return report


async def _suggestions(db: Database, old_id: str) -> list[Suggestion]:
    rows = await db.fetchall(
        f"select {NODE_COLUMNS}, min(c.model) from contradictions c join nodes n on n.id = "
        "c.new_id where c.old_id = ? and c.verdict = 'yes' and not c.dismissed "
        "group by n.id order by n.ts desc, n.seq desc",
        (old_id,),
    )
    return [
        Suggestion(row[0], display_title(c), format_date(c.ts), row[14])
        for row in rows
        for c in [Candidate.from_row(row, 0.0)]
    ]


async def open_suggestions(engine: Engine, limit: int = 50) -> OpenSuggestions:
    """The open suggestions, oldest claim first: the older node, the newer one, which model."""
    if not 1 <= limit <= 1000:
        raise UsageError("limit: must be between 1 and 1000")
    rows = await engine.db.fetchall(
        f"select o.id, o.title, o.ts, n.id, n.title, n.ts, c.model, c.checked_at {OPEN} "
        "order by coalesce(o.ts, o.created_at), o.seq limit ?",
        (engine.project_id, limit),
    )
    return OpenSuggestions(
        [
            OpenSuggestion(
                old_id=oid,
                old_title=otitle,
                old_date=format_date(ots),
                new_id=nid,
                new_title=ntitle,
                new_date=format_date(nts),
                model=model,
                checked_at=checked,
            )
            for oid, otitle, ots, nid, ntitle, nts, model, checked in rows
        ]
    )


async def dismiss(engine: Engine, node_id: str) -> DismissResult:
    """Silence the "likely superseded" suggestions under one stale candidate. The verdicts stay
    cached, so the same pair is never asked about again. Audited."""
    db = engine.db
    async with db.transaction():
        node = await resolve(db, engine.project_id, node_id)
        count = await db.execute(
            "update contradictions set dismissed = 1 "
            "where old_id = ? and verdict = 'yes' and not dismissed",
            (node.id,),
        )
        if not count:
            raise UsageError(
                f"{node.id[:SHORT]} has no open suggestion to dismiss (`nexusmem stale` lists them)"
            )
        await audit.record(db, engine.project_id, "stale-dismiss", count, node=node.id)
    return DismissResult(node.id, node.title, count)
