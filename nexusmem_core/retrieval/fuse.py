"""Reciprocal rank fusion: lists ranked on unrelated scales, merged by rank position only.

A BM25 score and a cosine distance share no unit; position is the one thing they agree on. Each
list contributes 1/(k + rank) for every item it holds; an item found by both arms sums both.

k is set on the real set (bench/eval/real, 216 questions on six public repositories, all-minilm
through the Ollama stand-in). First measured when BM25 alone scored 0.641 (hybrid MRR@10 /
Recall@5 / Recall@10):

    k = 1       0.706 / 0.861 / 0.903
    k = 3       0.707 / 0.870 / 0.898
    k = 5       0.707 / 0.866 / 0.898   <- kept then: the middle of that plateau
    k = 10      0.693 / 0.861 / 0.903   (set on the generated story before the real set)
    k = 30      0.639 / 0.838 / 0.898

Measured again at BM25 0.801, with commits fused as one answer per arm (``unit_relevance``)
and the word arm's own lists fused at their own constant (lexical.LEXICAL_K):

    k = 3       0.842 / 0.940 / 0.958
    k = 5       0.848 / 0.949 / 0.958
    k = 8       0.850 / 0.949 / 0.958
    k = 10      0.851 / 0.944 / 0.958   <- kept: the middle of a plateau from 5 to 20
    k = 15      0.848 / 0.940 / 0.968
    k = 20      0.850 / 0.940 / 0.968

The plateau is flat (0.848-0.851): the constant is not what the vector arm's worth turns on.
Between 5 and 10, how-to (0.831 -> 0.856) and broke (0.761 -> 0.789) questions rose and
recent (0.813 -> 0.793) and release (0.834 -> 0.816) ones fell. A large k flattens the
fused relevance and hands the ordering to whatever both arms found somewhere in their lists:
a release's section, found first by BM25 but whose vector saw only its first changes, lost
to commits each arm placed second or third (k = 30 above). ``retrieval.fusionK`` in
config.json overrides it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..store.fts import Candidate

__all__ = ["PROJECT_RRF_K", "RRF_K", "rrf", "unit_relevance"]

RRF_K = 10  # the BM25 and vector arms of one project (see above); config's default too
PROJECT_RRF_K = 60  # projects' lists in --all-projects: not measured yet, the customary value


def rrf(lists: dict[str, list[Candidate]], k: int = RRF_K) -> list[Candidate]:
    """Fuse ranked lists (arm name -> best-first candidates) into one, best first."""
    fused: dict[str, Candidate] = {}
    for arm, ranked in lists.items():
        for rank, candidate in enumerate(ranked, start=1):
            kept = fused.setdefault(candidate.id, candidate)
            if kept is not candidate:
                kept.relevance += 1.0 / (k + rank)
            else:
                candidate.relevance = 1.0 / (k + rank)
                candidate.arms = []
            kept.arms.append(arm)
    return sorted(fused.values(), key=lambda c: c.relevance, reverse=True)


def unit_relevance(
    lists: dict[str, list[Candidate]], unit: Callable[[Candidate], str | None], k: int = RRF_K
) -> dict[str, float]:
    """Each answer unit's fused relevance (a commit with its diffs: ``unit`` names a
    candidate's unit, or None): every list contributes 1/(k + rank) once per unit, at the
    best rank any of its members holds there, so a commit whose diff one arm ranks first and
    whose message the other ranks fifth is found by both. The ranks are the lists' own, so
    no other candidate's contribution moves."""
    fused: dict[str, float] = {}
    for ranked in lists.values():
        seen: set[str] = set()
        for rank, candidate in enumerate(ranked, start=1):
            key = unit(candidate)
            if key is not None and key not in seen:
                seen.add(key)
                fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused
