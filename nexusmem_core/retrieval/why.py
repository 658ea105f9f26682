"""Why a result ranked where it did: the search pipeline traced, and read back per result.

``ranked`` (search.py) takes an optional :class:`Tracer`. Before fusion it records what each
arm found, in order; after each stage, the order of the candidates and their relevance and
score. A result's moves are the differences between consecutive snapshots, each labelled with
the name of the function that made it (``rrf``, ``group_commits``, ``lift_reasons``, ...), so
a person tuning the ranking can find the code that moved it. A candidate that leaves the list
is explained by what holds it now: a diff by the commit it was grouped under, a copied section
by the one kept. Without a tracer each stage pays one call to a function that does nothing.

:func:`explained` turns a trace and the packed response into a :class:`Why` per result: the
arms' ranks, the fused relevance, the priors with each factor's input, the moves, and what
came with it (a commit's diffs, a failure's fix, a revert's partner, a release).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ..models import SearchResponse
from ..reverts import REVERTS
from ..store.db import Database
from ..store.fts import Candidate
from .rank import (
    HALF_LIFE_DAYS,
    PROVENANCE_HALF_LIFE,
    RECENCY_EXPONENT,
    RECENCY_FLOOR,
    REJECTED_PENALTY,
    SIGNAL_EXPONENT,
    SIGNAL_FLOOR,
    SUPERSEDED_PENALTY,
    prior_factor,
    recency,
)

__all__ = [
    "Companion",
    "Explained",
    "Move",
    "Tracer",
    "Why",
    "explained",
    "explained_text",
    "untraced",
    "why_lines",
]

# The stages whose output is the fused relevance: the word arm's alone, or both arms fused.
FUSION_STAGES = ("lexical_candidates", "lift_explained", "rrf", "neutral_when_unembedded")
EPSILON = 1e-12  # a relative change smaller than this is rounding, not a stage's doing


@dataclass(frozen=True)
class Move:
    """One stage that changed a result's place (1-based; None: not in the list), brought it
    in, grouped something under it, or changed its relevance or score."""

    stage: str
    before: int | None
    after: int | None
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "before": self.before, "after": self.after, "note": self.note}


@dataclass(frozen=True)
class Companion:
    """What came with a result: ``relation`` is hunk (the diff its excerpt shows), grouped (a
    diff folded into it), copy (a section with its text, dropped), fix / fix_of, reverts /
    reverted_by, or release (the version bump after it)."""

    relation: str
    id: str
    ref: str

    def to_dict(self) -> dict[str, str]:
        return {"relation": self.relation, "id": self.id, "ref": self.ref}


@dataclass
class Why:
    """Why one result ranked where it did. ``bm25_rank`` and ``vector_rank`` are 1-based in
    each arm's list as fusion read it; ``fused`` is the relevance fusion gave it (for one a
    later stage brought in, the relevance it came with); ``relevance`` is what the priors
    weighed (after import expansion and grouping); ``score`` = ``relevance`` x
    ``priors["product"]`` unless a move after the priors says otherwise."""

    id: str
    bm25_rank: int | None
    bm25_relevance: float | None
    vector_rank: int | None
    vector_distance: float | None
    fused: float
    relevance: float
    priors: dict[str, Any]
    score: float
    moves: list[Move]
    packed_rank: int
    tokens: int
    came_with: list[Companion] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "bm25_rank": self.bm25_rank,
            "bm25_relevance": self.bm25_relevance,
            "vector_rank": self.vector_rank,
            "vector_distance": self.vector_distance,
            "fused": self.fused,
            "relevance": self.relevance,
            "priors": self.priors,
            "score": self.score,
            "moves": [m.to_dict() for m in self.moves],
            "packed_rank": self.packed_rank,
            "tokens": self.tokens,
            "came_with": [c.to_dict() for c in self.came_with],
        }


@dataclass
class Explained:
    """A search's response, why each of its results ranked where it did (by result id), the
    stages that ran in order, what each arm found before fusion, and the stage that took out
    each candidate that left the list (by its id: a diff grouped, a copy dropped)."""

    response: SearchResponse
    why: dict[str, Why]
    stages: list[str]
    arms: dict[str, Any]
    left: dict[str, Move] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The response's dict with ``why``, ``stages``, ``arms`` and ``left`` beside its
        keys."""
        return {
            **self.response.to_dict(),
            "why": {key: w.to_dict() for key, w in self.why.items()},
            "stages": list(self.stages),
            "arms": self.arms,
            "left": {key: m.to_dict() for key, m in self.left.items()},
        }


@dataclass
class _Snapshot:
    stage: str
    measure: str  # what the list is sorted by here: relevance, or score from the priors on
    place: dict[str, int]  # id -> 1-based place
    values: dict[str, tuple[float, float]]  # id -> (relevance, score)
    held: dict[str, Candidate]


def untraced(stage: str, candidates: list[Candidate], measure: str = "relevance") -> None:
    """The trace of a search nobody asked to explain: nothing."""


class Tracer:
    """What a search did, stage by stage (see the module text)."""

    def __init__(self) -> None:
        self.snapshots: list[_Snapshot] = []
        self.arms: dict[str, list[tuple[Candidate, float]]] = {}
        self.distances: dict[int, float] = {}  # a vector hit's seq -> its cosine distance
        self.moment: float | None = None  # when recency was measured from

    def stage(self, stage: str, candidates: list[Candidate], measure: str = "relevance") -> None:
        """The list as ``stage`` left it."""
        place: dict[str, int] = {}
        for n, c in enumerate(candidates, start=1):
            place.setdefault(c.id, n)
        values = {c.id: (c.relevance, c.score) for c in candidates}
        self.snapshots.append(
            _Snapshot(stage, measure, place, values, {c.id: c for c in candidates})
        )

    def arm(self, name: str, candidates: list[Candidate]) -> None:
        """What one arm found, best first, as fusion reads it."""
        self.arms[name] = [(c, c.relevance) for c in candidates]

    @property
    def stages(self) -> list[str]:
        return [s.stage for s in self.snapshots]

    def arms_seen(self) -> dict[str, Any]:
        """Each arm's list: id, kind, ref, title and its relevance (the word arm) or cosine
        distance (the vector arm)."""
        out: dict[str, Any] = {}
        for name, found in self.arms.items():
            rows = []
            for c, relevance in found:
                row: dict[str, Any] = {"id": c.id, "kind": c.kind, "ref": c.ref, "title": c.title}
                if name == "vector":
                    row["distance"] = self.distances.get(c.seq)
                else:
                    row["relevance"] = relevance
                rows.append(row)
            out[name] = rows
        return out


async def explained(db: Database, tracer: Tracer, response: SearchResponse) -> Explained:
    """Why each of ``response``'s results ranked where it did, read from ``tracer`` (the
    trace of the search that made ``response``)."""
    final = tracer.snapshots[-1].held if tracer.snapshots else {}
    reading = _Reading(tracer)
    partners = await _revert_links(db, list(final))
    why: dict[str, Why] = {}
    for n, result in enumerate(response.results, start=1):
        c = final.get(result.id)
        if c is None:  # cannot happen: every result is a ranked candidate
            continue
        why[c.id] = reading.why(c, n, result.tokens, partners)
    left = {
        key: moves[-1]
        for key, moves in reading.moves.items()
        if key not in final and moves[-1].after is None
    }
    return Explained(response, why, tracer.stages, tracer.arms_seen(), left)


async def _revert_links(db: Database, ids: list[str]) -> list[tuple[str, str]]:
    """(revert, undone) links between the ranked candidates."""
    if not ids:
        return []
    given = json.dumps(ids)
    rows = await db.fetchall(
        "select src, dst from links where kind = ? "
        "and src in (select value from json_each(?)) and dst in (select value from json_each(?))",
        (REVERTS, given, given),
    )
    return [(str(src), str(dst)) for src, dst in rows]


class _Reading:
    """A trace read back: every candidate's moves, once, then each result's record."""

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.moves: dict[str, list[Move]] = {}
        self.came_with: dict[str, list[Companion]] = {}
        self.ranks = {
            name: {c.id: n for n, (c, _) in enumerate(found, start=1)}
            for name, found in tracer.arms.items()
        }
        for prev, cur in pairwise(tracer.snapshots):
            self._compare(prev, cur)

    def _compare(self, prev: _Snapshot, cur: _Snapshot) -> None:
        held: dict[str, list[Candidate]] = {}  # a kept candidate's id -> those grouped into it
        for key, place in prev.place.items():
            if key in cur.place:
                continue
            holder, note = _left(cur, prev.held[key])
            self._move(key, Move(cur.stage, place, None, note))
            if holder is not None:
                held.setdefault(holder, []).append(prev.held[key])
        for key, after in cur.place.items():
            before = prev.place.get(key)
            taken = held.get(key, [])
            if before is None:
                notes = [self._entered(cur, key, taken)]
            else:  # a fix that ranked on its own is placed after its failure too
                moved_fix = cur.stage == "follow" and prev.held[key] is not cur.held[key]
                notes = [_fix_of(cur, cur.held[key]) if moved_fix else "", _changed(prev, cur, key)]
            if prev.measure != cur.measure and before == after:
                notes = []  # the priors that did not move it are told once, in ``priors``
            notes.append(self._absorbed(cur, key, taken))
            text = "; ".join(n for n in notes if n)
            if before != after or text:
                self._move(key, Move(cur.stage, before, after, text or _shifted(before, after)))

    def _move(self, key: str, move: Move) -> None:
        self.moves.setdefault(key, []).append(move)

    def _with(self, key: str, relation: str, c: Candidate) -> None:
        self.came_with.setdefault(key, []).append(Companion(relation, c.id, c.ref))

    def _entered(self, cur: _Snapshot, key: str, taken: list[Candidate]) -> str:
        c = cur.held[key]
        if cur.stage == "rrf":
            return f"found by the vector arm alone (its rank {self.ranks['vector'].get(key)})"
        if cur.stage == "group_commits":
            return "brought in by its diff" + "".join(f" {self._found(d)}" for d in taken[:1])
        if cur.stage == "shipped_in":
            after = _neighbour(cur, key, +1)
            if after is not None:
                self._with(after.id, "release", c)
                return f"the version bump after {_short(after)}"
        if cur.stage == "pair_reverts":
            before = _neighbour(cur, key, -1)
            return f"the revert partner of {_short(before)}" if before else "a revert partner"
        if cur.stage == "follow":
            return _fix_of(cur, c) or "a fix"
        return "brought in"

    def _found(self, c: Candidate) -> str:
        """Where the arms ranked ``c``, as ``path (bm25 #2, vector #5)``."""
        ranks = [f"{arm} #{found[c.id]}" for arm, found in self.ranks.items() if c.id in found]
        return f"{_path(c)} ({', '.join(ranks)})" if ranks else _path(c)

    def _absorbed(self, cur: _Snapshot, key: str, taken: list[Candidate]) -> str:
        if not taken:
            return ""
        holder = cur.held[key]
        if cur.stage == "drop_copies":
            for c in taken:
                self._with(key, "copy", c)
            return "its copies dropped: " + ", ".join(c.ref for c in taken)
        names = []
        for c in taken:
            best = holder.hunk is not None and holder.hunk.id == c.id
            self._with(key, "hunk" if best else "grouped", c)
            names.append(_path(c) + (" (its best hunk)" if best else ""))
        return "absorbed its diffs: " + ", ".join(names)

    def why(
        self, c: Candidate, packed_rank: int, tokens: int, partners: list[tuple[str, str]]
    ) -> Why:
        """The record of ``c``, the result packed ``packed_rank``-th."""
        arms = self.tracer.arms
        bm25 = self.ranks.get("bm25", {}).get(c.id)
        vector = self.ranks.get("vector", {}).get(c.id)
        fused = self._value(c.id, FUSION_STAGES)
        if fused is None:  # brought in after fusion: the relevance it came with
            fused = next(s.values[c.id][0] for s in self.tracer.snapshots if c.id in s.values)
        weighed = self._value(c.id, ("prior_factor",))
        came_with = list(self.came_with.get(c.id, []))
        came_with += self._followers(c, partners)
        return Why(
            id=c.id,
            bm25_rank=bm25,
            bm25_relevance=arms["bm25"][bm25 - 1][1] if bm25 else None,
            vector_rank=vector,
            vector_distance=self.tracer.distances.get(c.seq) if vector else None,
            fused=fused,
            relevance=fused if weighed is None else weighed,
            priors=self._priors(c),
            score=c.score,
            moves=list(self.moves.get(c.id, [])),
            packed_rank=packed_rank,
            tokens=tokens,
            came_with=came_with,
        )

    def _value(self, key: str, stages: tuple[str, ...]) -> float | None:
        """The relevance ``key`` had after the last of ``stages`` that held it."""
        found = None
        for s in self.tracer.snapshots:
            if s.stage in stages and key in s.values:
                found = s.values[key][0]
        return found

    def _followers(self, c: Candidate, partners: list[tuple[str, str]]) -> list[Companion]:
        final = self.tracer.snapshots[-1].held
        out = []
        for other in final.values():
            if other.meta.get("fix_of") == c.id:
                out.append(Companion("fix", other.id, other.ref))
        failure = final.get(str(c.meta.get("fix_of")))
        if failure is not None:
            out.append(Companion("fix_of", failure.id, failure.ref))
        for revert, undone in partners:
            if revert == c.id:
                out.append(Companion("reverts", undone, final[undone].ref))
            elif undone == c.id:
                out.append(Companion("reverted_by", revert, final[revert].ref))
        return out

    def _priors(self, c: Candidate) -> dict[str, Any]:
        """Each prior's input and the factor it gave (rank.py's formula, term by term)."""
        now = self.tracer.moment
        signal = max(SIGNAL_FLOOR, min(1.0, c.signal)) ** SIGNAL_EXPONENT
        fresh = recency(c.ts, c.provenance, now)
        aged = max(RECENCY_FLOOR, min(1.0, fresh)) ** RECENCY_EXPONENT
        superseded = SUPERSEDED_PENALTY if c.superseded else 1.0
        rejected = REJECTED_PENALTY if c.trust == "rejected" else 1.0
        age = None if c.ts is None or now is None else max(0.0, (now - c.ts) / 86_400)
        applied = any(s.stage == "prior_factor" and c.id in s.place for s in self.tracer.snapshots)
        return {
            "signal": {"value": c.signal, "factor": signal},
            "recency": {
                "age_days": age,
                "half_life_days": HALF_LIFE_DAYS * PROVENANCE_HALF_LIFE.get(c.provenance, 0.5),
                "value": fresh,
                "factor": aged,
            },
            "provenance": c.provenance,  # it sets the half-life
            "trust": {"value": c.trust, "factor": rejected},
            "superseded": {"value": c.superseded, "factor": superseded},
            "penalty": superseded * rejected,
            "product": prior_factor(c.signal, c.ts, c.provenance, c.trust, c.superseded, now),
            "applied": applied,  # False: a later stage brought it in, at another's score
        }


def _left(cur: _Snapshot, c: Candidate) -> tuple[str | None, str]:
    """Who holds ``c`` now that ``cur.stage`` took it out of the list, and why it left."""
    if cur.stage == "group_commits" and c.kind == "file_diff":
        sha = c.meta.get("sha")
        holder = next(
            (h for h in cur.held.values() if h.kind == "git_commit" and h.ref == sha), None
        )
        if holder is not None:
            return holder.id, f"grouped under commit {_short(holder)}"
        return None, "left out: a diff of a prose file lends its commit nothing"
    if cur.stage == "drop_copies":
        holder = next((h for h in cur.held.values() if c.ref in h.meta.get("copies", [])), None)
        if holder is not None:
            return holder.id, f"dropped as a copy of {holder.ref}"
    if cur.stage == "authored":
        return None, "left out: not by the author asked for"
    return None, "left the list"


def _changed(prev: _Snapshot, cur: _Snapshot, key: str) -> str:
    """What ``cur.stage`` did to ``key``'s relevance or score, in words ("" for nothing)."""
    relevance, score = cur.values[key]
    if prev.measure != cur.measure:  # the priors: relevance becomes a score
        return f"priors x{score / relevance:.3f} -> score {score:.4g}" if relevance else ""
    index = 0 if cur.measure == "relevance" else 1
    old, new = prev.values[key][index], cur.values[key][index]
    if abs(new - old) <= EPSILON * max(abs(old), abs(new), 1.0):
        return ""
    if old:
        return f"{cur.measure} x{new / old:.2f} ({old:.4g} -> {new:.4g})"
    return f"{cur.measure} {old:.4g} -> {new:.4g}"


def _fix_of(cur: _Snapshot, c: Candidate) -> str:
    failure = cur.held.get(str(c.meta.get("fix_of")))
    if failure is None:
        return ""
    return f"the fix of {_short(failure)} (linked by {c.meta.get('link')})"


def _shifted(before: int | None, after: int | None) -> str:
    if before is None or after is None:
        return ""
    way = "up" if after < before else "down"
    return f"{way} {abs(after - before)}: others above it moved, it did not"


def _neighbour(cur: _Snapshot, key: str, step: int) -> Candidate | None:
    want = cur.place[key] + step
    return next((cur.held[k] for k, n in cur.place.items() if n == want), None)


def _short(c: Candidate | None) -> str:
    """A candidate named in a note: a commit by its short sha and subject, a diff or a
    section by its reference, anything else (a command, a turn) by its title."""
    if c is None:
        return "?"
    if c.kind == "git_commit":
        return f"{c.ref[:7]} ({c.title[:80]})"
    if c.kind in ("file_diff", "doc_section"):
        return c.ref
    return c.title[:80]


def _path(c: Candidate) -> str:
    return c.ref.partition(":")[2] or c.ref  # a diff's ref is ``<sha>:<path>``


def why_lines(why: Why) -> list[str]:
    """Two to four lines a person reads under a result: how the arms found it, what the
    priors made of it, each stage that moved it, and what came with it."""
    found = []
    if why.bm25_rank is not None:
        found.append(f"bm25 #{why.bm25_rank} ({why.bm25_relevance:.4g})")
    if why.vector_rank is not None:
        distance = "" if why.vector_distance is None else f" (distance {why.vector_distance:.3f})"
        found.append(f"vector #{why.vector_rank}{distance}")
    fused = "fused" if why.vector_rank is not None else "relevance"
    lines = [f"why: {', '.join(found) or 'in no arm itself'} -> {fused} {why.fused:.4g}"]
    lines.append("     " + _priors_text(why.priors) + f" -> score {why.score:.4g}")
    if why.moves:
        lines.append("     moved: " + "; ".join(_move_text(m) for m in why.moves))
    if why.came_with:
        lines.append(
            "     with: " + ", ".join(f"{c.relation} {_short_ref(c.ref)}" for c in why.came_with)
        )
    return lines


def explained_text(explained: Explained) -> str:
    """The context block with :func:`why_lines` under each result."""
    from ..render import render_explained

    notes = {key: why_lines(w) for key, w in explained.why.items()}
    return render_explained(explained.response, notes)


def _priors_text(priors: dict[str, Any]) -> str:
    if not priors["applied"]:
        return "priors not applied (placed by a later stage)"
    age = priors["recency"]["age_days"]
    aged = "undated" if age is None else f"{age:.0f}d old"
    text = (
        f"priors x{priors['product']:.3f} (signal {priors['signal']['value']:.2f} "
        f"x{priors['signal']['factor']:.3f}, {aged}/{priors['recency']['half_life_days']:.0f}d "
        f"half-life x{priors['recency']['factor']:.3f}"
    )
    if priors["penalty"] != 1.0:
        text += f", penalty x{priors['penalty']:.2f}"
    return text + ")"


def _move_text(m: Move) -> str:
    if m.before is None:
        where = f"in at {m.after}"
    elif m.after is None:
        where = f"{m.before}->out"
    else:
        where = f"{m.before}->{m.after}"
    return f"{m.stage} {where} {m.note}".rstrip()


def _short_ref(ref: str) -> str:
    sha, colon, path = ref.partition(":")
    if len(sha) == 40 and all(ch in "0123456789abcdef" for ch in sha):
        return f"{sha[:7]}{colon}{path}"
    return ref
