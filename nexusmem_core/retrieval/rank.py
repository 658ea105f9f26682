"""Priors: how signal and recency adjust a query's relevance, and by how much at most.

    score = relevance × signal'^a × recency'^b × penalty

relevance comes from the query (BM25, or a fused rank). signal and recency are priors that hold
before any query exists. Each prior is first floored into [floor, 1] so one weak dimension cannot
zero out a strong match.

The exponents are derived from how far each prior may move a score. Left raw, the priors
overturned the query: a fresh ``fix:`` commit outranked the section that answered the question.
So each prior has a *span*, the most its whole range may overturn as a relevance ratio, and
its exponent follows from its floor:

    (1/floor)^exponent = span  =>  exponent = ln span / ln(1/floor)

Signal may overturn 1.41x (the signal floor 0.2 gives a = 0.215, the original's constant);
recency 1.1x (with the floor 0.3, b = 0.079). Together they overturn at most 1.56x, within the
2x the original gave them. The transform is monotonic, so equally relevant hits are ordered by
the priors exactly as before.

Recency was first given the same span as signal (b = 0.288), set on the generated story, a
seven-month history. On real histories that made every commit of the last year outrank older
ones that answered better: questions about an old commit's reasons, or the fix of an old
symptom, are old by construction, and recent commits also carry their diffs. Measured on
bench/eval/real (216 questions, six public repositories, BM25 MRR@10) beside the story's
(73 questions; its failed-command and shell-target questions are what real histories lack):

    recency span          real    story   story failed commands   story shell targets
    1.41 (b = 0.288)      0.655   0.745   0.338                   0.397
    1.2                   0.665   0.750   0.345                   0.403
    1.1   (kept)          0.668   0.750   0.345                   0.403
    1.05                  0.673   0.743   0.345                   0.403
    1.0   (no recency)    0.676   0.727   0.345                   0.403

A longer half-life instead (730 days: 0.655; 1,825 days: 0.660) spreads the same lift over more
commits and did not help. Recency stays, small: between hits the query cannot tell apart, the
newer is the better guess, and the story's shell questions ("what did I just run") lose without
it. Signal stays at its span: without it the real set
scores 0.683 (0.690 with; measured with the question lifts of retrieval/asked.py in place)
and the story 0.716 (0.750), its failed-command questions 0.316 (0.345).

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

Held out (issue 48; bench/eval/real/loo.py, eleven corpora, 421 questions), without recency:
-0.003 [-0.006, -0.000]; without signal: -0.004 [-0.009, +0.001]. Both are small on questions
about a repository's history and kept for the story's shell and failed-command questions,
which the real corpora do not have.
"""

from __future__ import annotations

import math
import time

__all__ = [
    "HALF_LIFE_DAYS",
    "PRIOR_BUDGET",
    "RECENCY_EXPONENT",
    "RECENCY_SPAN",
    "SIGNAL_EXPONENT",
    "SIGNAL_SPAN",
    "prior_factor",
    "recency",
]

SIGNAL_SPAN = math.sqrt(2)  # the most signal may overturn, as a relevance ratio
RECENCY_SPAN = 1.1  # ... and recency (see above)
PRIOR_BUDGET = SIGNAL_SPAN * RECENCY_SPAN  # both together: 1.56
SIGNAL_FLOOR = 0.2
RECENCY_FLOOR = 0.3


def _exponent(floor: float, span: float) -> float:
    return math.log(span) / math.log(1 / floor)


SIGNAL_EXPONENT = _exponent(SIGNAL_FLOOR, SIGNAL_SPAN)  # 0.215
RECENCY_EXPONENT = _exponent(RECENCY_FLOOR, RECENCY_SPAN)  # 0.079

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
