"""How the cost of some work grows with its input, as the tests against quadratic work measure
it: CPU time, the least of a few runs, of a small input and one four times as large.

The two are timed in turn, not one after the other: a busy spell on a shared machine (the other
test worker, a CI neighbour) then falls on both sides of the ratio, where a ratio of two
minimums taken apart in time compares two machines. A ratio over the limit is measured again,
both sides, for longer, before a test may fail on it.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["costs"]

T = TypeVar("T")


def _least(run: Callable[[T], object], inputs: tuple[T, T], rounds: int) -> tuple[float, float]:
    best = [float("inf"), float("inf")]
    gc.disable()  # a collection lands on whichever run allocates past its threshold
    try:
        for _ in range(rounds):
            for index, given in enumerate(inputs):
                start = time.process_time()
                run(given)
                best[index] = min(best[index], time.process_time() - start)
    finally:
        gc.enable()
    return best[0], best[1]


def costs(
    run: Callable[[T], object], small: T, large: T, *, limit: float, floor: float = 0.0
) -> tuple[float, float]:
    """The CPU seconds of ``run(small)`` and ``run(large)``, measured again for longer when the
    second is more than ``limit`` times the first (or ``floor``, whichever is more: a step too
    quick to time is kept out of the ratio)."""
    run(small)  # compiles, caches and imports whatever the first run reaches
    first, second = _least(run, (small, large), rounds=2)
    if second > limit * max(first, floor):
        first, second = _least(run, (small, large), rounds=5)
    return first, second
