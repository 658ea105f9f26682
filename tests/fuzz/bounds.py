"""What the fuzz tests share: a watchdog that interrupts a hang, input shapes, and a real
database for the parsers whose output must be storable.

Random text reaches only a parser's first branch; these strategies build inputs out of the
fragments a format is made of (markers, quotes, brackets, field names), repeated and mutated,
which is also what makes a regular expression backtrack.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import strategies as st

from nexusmem_core.models import Node
from nexusmem_core.store.db import Database, open_database
from nexusmem_core.store.nodes import upsert_nodes, upsert_project

__all__ = [
    "HANG",
    "LIMIT",
    "PROJECT",
    "SLOW",
    "Store",
    "Target",
    "TookTooLong",
    "junk_bytes",
    "mutated",
    "open_store",
    "repeated",
    "within",
]

# How long one input may take before the check is interrupted as a hang. Tests assert nothing
# about speed (a loaded machine is slow, not wrong): this only stops a pattern that would
# backtrack for hours, so the suite fails for that reason instead of never ending.
HANG = 60.0

# What bench/bench_fuzz.py counts as a slow input, and sets LIMIT to: linear work over the
# largest inputs generated here (~100 KB) takes milliseconds; a quadratic regular expression
# over them takes seconds. Speed is measured there, on a quiet machine, not in the tests.
SLOW = 1.0

# The bound within() applies when given none.
LIMIT = HANG


class TookTooLong(AssertionError):
    """One input took longer than its bound: a hang, for a parser on the sync path."""


@contextmanager
def within(seconds: float | None = None) -> Iterator[None]:
    """Fail the block when it runs longer than ``seconds`` (default :data:`LIMIT`),
    interrupting it (Python's ``re`` checks for signals while it matches, so a backtracking
    pattern is stopped too)."""
    seconds = LIMIT if seconds is None else seconds

    def expire(_signum: int, _frame: Any) -> None:
        raise TookTooLong(f"one input took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


PROJECT = "p"  # the project every node written by a fuzz test belongs to


@dataclass
class Store:
    """A repository's memory database, open in a portal's event loop and called from
    synchronous code: opening one per example would cost more than the parsing."""

    portal: BlockingPortal
    db: Database
    root: Path  # the repository: ``.git/`` (empty) and ``.nexusmem/memory.db``

    def write(self, nodes: Sequence[Node]) -> int:
        return self.portal.call(upsert_nodes, self.db, nodes)

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.portal.call(self.db.fetchall, sql, params)


@contextmanager
def open_store(directory: Path) -> Iterator[Store]:
    """A repository in ``directory`` with a fresh memory, built by the real migrations."""
    root = (directory / "repo").resolve()
    (root / ".git").mkdir(parents=True)
    (root / ".nexusmem").mkdir()
    path = root / ".nexusmem" / "memory.db"
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(open_database(path, vectors=False)) as db,
    ):
        portal.call(upsert_project, db, PROJECT, PROJECT, str(root), None)
        yield Store(portal, db, root)


@dataclass(frozen=True)
class Target:
    """One parser as the bench drives it: inputs, and the check each input must pass (given
    a :class:`Store` too when ``store`` is set)."""

    strategy: st.SearchStrategy[Any]
    check: Callable[..., None]
    store: bool = False


def repeated(fragments: Sequence[str], max_repeat: int = 4000) -> st.SearchStrategy[str]:
    """A few fragments, one of them repeated up to ``max_repeat`` times: the shape that makes a
    pattern try every split of a long run."""
    piece = st.lists(st.sampled_from(fragments), min_size=1, max_size=4).map("".join)
    return st.builds(
        lambda head, body, times, tail: head + body * times + tail,
        st.text(max_size=8),
        piece,
        st.integers(min_value=1, max_value=max_repeat),
        st.one_of(st.sampled_from(fragments), st.text(max_size=8)),
    )


def mutated(fragments: Sequence[str]) -> st.SearchStrategy[str]:
    """Fragments of a format in a random order, with random text between some of them."""
    return st.lists(st.one_of(st.sampled_from(fragments), st.text(max_size=6)), max_size=40).map(
        "".join
    )


def junk_bytes(text: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """``text`` encoded, with a few bytes that are not UTF-8 spliced in somewhere."""

    def splice(value: str, raw: bytes, at: int) -> bytes:
        data = value.encode("utf-8", "surrogatepass")
        return data[:at] + raw + data[at:]

    return st.builds(splice, text, st.binary(max_size=4), st.integers(min_value=0, max_value=64))
