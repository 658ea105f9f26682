"""The priors: derived exponents, floors, and what each may overturn."""

from __future__ import annotations

import math

from nexusmem_core.retrieval import rank

NOW = 1_800_000_000.0


def test_exponents_match_the_derivation():
    assert round(rank.SIGNAL_EXPONENT, 3) == 0.215
    assert round(rank.RECENCY_EXPONENT, 3) == 0.079
    # Signal's full range is worth √2, recency's 1.1: together at most 1.56×.
    span_s = (1 / rank.SIGNAL_FLOOR) ** rank.SIGNAL_EXPONENT
    span_r = (1 / rank.RECENCY_FLOOR) ** rank.RECENCY_EXPONENT
    assert math.isclose(span_s, math.sqrt(2)) and math.isclose(span_r, 1.1)
    assert math.isclose(span_s * span_r, rank.PRIOR_BUDGET)


def test_priors_together_overturn_at_most_the_budget():
    best = rank.prior_factor(1.0, int(NOW), "observed", "candidate", False, NOW)
    worst = rank.prior_factor(0.0, None, "derived", "candidate", False, NOW)
    assert math.isclose(best / worst, rank.PRIOR_BUDGET)
    # So a match with more than 1.56 times the relevance always wins on priors alone.
    assert 1.57 * worst > 1.0 * best


def test_a_weak_dimension_cannot_zero_a_strong_match():
    assert rank.prior_factor(0.0, None, "observed", "candidate", False, NOW) > 0.4


def test_recency_decays_faster_for_lower_trust():
    year_ago = int(NOW - 365 * 86_400)
    assert rank.recency(year_ago, "observed", NOW) > rank.recency(year_ago, "authored", NOW)
    assert rank.recency(year_ago, "authored", NOW) > rank.recency(year_ago, "derived", NOW)
    assert rank.recency(None, "observed", NOW) == 0.0


def test_superseded_and_rejected_rank_lower_but_are_not_hidden():
    base = rank.prior_factor(0.8, int(NOW), "observed", "candidate", False, NOW)
    assert 0 < rank.prior_factor(0.8, int(NOW), "observed", "rejected", False, NOW) < base
    assert 0 < rank.prior_factor(0.8, int(NOW), "observed", "candidate", True, NOW) < base
