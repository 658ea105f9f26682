"""Sweep the ranking constants over the labelled evaluation and print one table per constant.

    .venv/bin/python bench/eval/sweep.py [--mode bm25|hybrid]

Each setting is applied in-process (the module constants of ``retrieval/rank.py``, the sibling
cap of the packer) and the 73 queries of ``queries.json`` are run against the fixture's memory
as ``run.py`` leaves it (``--reuse``: build it once with ``run.py --mode hybrid`` for hybrid).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run

from nexusmem_core.retrieval import pack, rank
from nexusmem_core.retrieval import search as pipeline


@contextlib.contextmanager
def priors(budget: float | None = None, half_life: float | None = None) -> Iterator[None]:
    """``budget``: what signal and recency together may overturn, shared as they are now."""
    saved = (rank.PRIOR_BUDGET, rank.SIGNAL_EXPONENT, rank.RECENCY_EXPONENT, rank.HALF_LIFE_DAYS)
    if budget is not None:
        share = math.log(budget) / math.log(rank.PRIOR_BUDGET)
        rank.PRIOR_BUDGET = budget
        rank.SIGNAL_EXPONENT = rank._exponent(rank.SIGNAL_FLOOR, rank.SIGNAL_SPAN**share)
        rank.RECENCY_EXPONENT = rank._exponent(rank.RECENCY_FLOOR, rank.RECENCY_SPAN**share)
    if half_life is not None:
        rank.HALF_LIFE_DAYS = half_life
    try:
        yield
    finally:
        (rank.PRIOR_BUDGET, rank.SIGNAL_EXPONENT, rank.RECENCY_EXPONENT, rank.HALF_LIFE_DAYS) = (
            saved
        )


@contextlib.contextmanager
def sibling_cap(cap: int) -> Iterator[None]:
    original = pipeline.Packer

    class Capped(pack.Packer):
        def __init__(self, budget: int, _cap: int, *args: Any, **kwargs: Any) -> None:
            super().__init__(budget, cap, *args, **kwargs)

    pipeline.Packer = Capped  # type: ignore[misc]
    try:
        yield
    finally:
        pipeline.Packer = original  # type: ignore[misc]


def evaluate(mode: str) -> dict[str, float]:
    args = argparse.Namespace(
        mode=mode,
        budget=8000,
        regen=False,
        reuse=True,
        fusion_k=None,
        now="fixture",
        embed_model="all-minilm",
        embed_batch=8,
        embed_timeout=120,
        passes=1,
    )
    with contextlib.redirect_stderr(io.StringIO()):
        result = asyncio.run(run.evaluate(args))
    return result["overall"]


def row(name: str, value: Any, mode: str) -> str:
    o = evaluate(mode)
    return f"| {name} | {value} | {o['mrr10']:.3f} | {o['recall5']:.3f} | {o['recall10']:.3f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("bm25", "hybrid"), default="bm25")
    mode = parser.parse_args().mode
    print(f"## Ranking constants on the labelled set ({mode})\n")
    print("| constant | value | MRR@10 | Recall@5 | Recall@10 |")
    print("|:--|--:|--:|--:|--:|")
    with run.fixture_lock():
        for budget in (1.0, 1.5, 2.0, 3.0, 4.0):
            with priors(budget=budget):
                print(row("prior budget", budget, mode), flush=True)
        for days in (60.0, 180.0, 365.0, 730.0):
            with priors(half_life=days):
                print(row("half-life (days)", days, mode), flush=True)
        for cap in (1, 2, 3, 5):
            with sibling_cap(cap):
                print(row("sibling cap", cap, mode), flush=True)


if __name__ == "__main__":
    main()
