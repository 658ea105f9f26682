"""Priors: how signal and recency adjust a query's relevance, and by how much at most.

    score = relevance × signal'^a × recency'^b × penalty

relevance comes from the query (BM25, or a fused rank). signal and recency are priors that hold
before any query exists. Each prior is first floored into [floor, 1] so one weak dimension cannot
zero out a strong match.

The exponents are derived, not tuned. Left raw, the priors overturned the query: a fresh ``fix:``
commit outranked the section that answered the question. So the priors share one *overturn
budget*: across their whole range, together, they may overturn at most a 2× relevance gap. The
budget is joint, not per prior, because the score multiplies them: capping each at 2× separately
lets a fresh, high-signal item (every commit of an active day) overturn 4×. Split evenly, each
prior's full span (1/floor) raised to its exponent is worth √2:

    (1/floor)^exponent = PRIOR_BUDGET^(1/2)  =>  exponent = ln √2 / ln(1/floor)

With the signal floor 0.2 and the recency floor 0.3 this gives a = 0.215 and b = 0.288, the
original's constants. A third prior re-divides the same budget instead of enlarging it. The
transform is monotonic, so equally relevant hits are ordered by the priors exactly as before.

Recency halves every HALF_LIFE_DAYS, faster for lower-trust provenance (a doc section is a claim
that ages; a commit is an event). Superseded and rejected nodes are ranked lower, never hidden.

Measured on the labelled set (bench/eval/sweep.py, 73 queries; MRR@10 / Recall@5, BM25 then
hybrid with all-minilm at fusion k = 10):

    prior budget 1.0 (no priors)  0.630 / 0.576    0.671 / 0.612
    prior budget 1.5              0.654 / 0.607    0.677 / 0.667
    prior budget 2.0  (kept)      0.676 / 0.607    0.675 / 0.685
    prior budget 3.0              0.656 / 0.614    0.660 / 0.701
    half-life  60 days            0.642 / 0.600    0.655 / 0.630
    half-life 180 days (kept)     0.676 / 0.607    0.675 / 0.685
    half-life 365 days            0.667 / 0.621    0.686 / 0.689

The priors earn their place (no priors is worst in both modes) and 2x is the best trade; a
longer half-life helps hybrid a little and BM25 not, on a fixture that spans seven months, so
180 days stays until a longer history says otherwise.
"""

from __future__ import annotations

import math
import time

__all__ = [
    "HALF_LIFE_DAYS",
    "PRIOR_BUDGET",
    "RECENCY_EXPONENT",
    "SIGNAL_EXPONENT",
    "prior_factor",
    "recency",
]

PRIOR_BUDGET = 2.0  # the most the priors together may overturn, as a relevance ratio
SIGNAL_FLOOR = 0.2
RECENCY_FLOOR = 0.3
_PRIORS = 2  # priors sharing the budget


def _exponent(floor: float) -> float:
    return math.log(PRIOR_BUDGET ** (1 / _PRIORS)) / math.log(1 / floor)


SIGNAL_EXPONENT = _exponent(SIGNAL_FLOOR)  # 0.215
RECENCY_EXPONENT = _exponent(RECENCY_FLOOR)  # 0.288

HALF_LIFE_DAYS = 180.0
# Lower trust ages faster: a multiplier on the half-life. The order is the design claim; the
# exact ratios are a judgement, not a measured optimum.
PROVENANCE_HALF_LIFE = {"observed": 1.0, "authored": 0.75, "recorded": 0.5, "derived": 0.35}
SUPERSEDED_PENALTY = 0.5
REJECTED_PENALTY = 0.5


def recency(ts: int | None, provenance: str, now: float | None = None) -> float:
    """Exponential decay by age in [0, 1]; an unknown date counts as old, not as new."""
    if ts is None:
        return 0.0
    now = time.time() if now is None else now
    age_days = max(0.0, (now - ts) / 86_400)
    half_life = HALF_LIFE_DAYS * PROVENANCE_HALF_LIFE.get(provenance, 0.5)
    return 0.5 ** (age_days / half_life)


def prior_factor(
    signal: float,
    ts: int | None,
    provenance: str,
    trust: str,
    superseded: bool,
    now: float | None = None,
) -> float:
    """The multiplier the priors apply to a relevance score, in [1/PRIOR_BUDGET, 1] × penalty."""
    s = max(SIGNAL_FLOOR, min(1.0, signal)) ** SIGNAL_EXPONENT
    r = max(RECENCY_FLOOR, min(1.0, recency(ts, provenance, now))) ** RECENCY_EXPONENT
    penalty = 1.0
    if superseded:
        penalty *= SUPERSEDED_PENALTY
    if trust == "rejected":
        penalty *= REJECTED_PENALTY
    return s * r * penalty
