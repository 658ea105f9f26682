"""The forget crash harness: ``nexusmem forget --yes VALUE`` killed with SIGKILL at a random
moment, then memory opened once (``nexusmem status``) and its files' bytes searched.

A forget is one transaction (nodes, index entries, vectors, the deny-list entry and the mark
that compaction is due), then a VACUUM and a truncated WAL. Killed before its commit, it
changed nothing: the value is still stored, and the forget run again to its end leaves no copy.
Killed after, the next open of memory, whatever the command, must finish the compaction: then
``memory.db``, ``-wal`` and ``-shm`` hold no copy of the value, byte for byte.

Used by ``tests/hygiene/test_forget.py`` (a few kills) and ``bench/bench_forget_kill.py``
(thirty).
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .crash import Memory, commit, consistency, kill_after, write_hook_lines
from .stress import NEXUSMEM

SUFFIXES = ("", "-wal", "-shm")


@dataclass
class ForgetKill:
    delay: float
    finished: bool  # the forget ended on its own before the kill
    committed: bool = False  # its transaction had landed: the deny list has the value
    after_kill: int = 0  # copies of the value in memory.db, -wal and -shm, just after the kill
    after_open: int = 0  # after the next `nexusmem status`
    after_rerun: int | None = None  # not committed: after `forget --yes` run to its end
    problems: list[str] = field(default_factory=list)


def copies(db: Path, value: str) -> int:
    """How many times ``value`` occurs in the bytes of the database, its WAL and its -shm."""
    needle = value.encode()
    files = [Path(f"{db}{suffix}") for suffix in SUFFIXES]
    return sum(f.read_bytes().count(needle) for f in files if f.exists())


def plant(memory: Memory, value: str, commits: int = 4, lines: int = 6) -> None:
    """Commits, docs and shell and agent hook lines that hold ``value``; then ``init``, a sync,
    and the snapshot ``leaky`` every kill starts from."""
    commit(memory.root, commits, value)  # the value in file names, so in paths and diffs
    write_hook_lines(memory, value, lines)
    for args in (("init",), ("sync",)):
        error, _ = memory.run(*args)
        if error:
            raise RuntimeError(error)
    memory.snapshot("leaky")


def _nexusmem(memory: Memory, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [NEXUSMEM, *args, "-C", str(memory.root)],
        env=memory.env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def forget_argv(memory: Memory, value: str) -> list[str]:
    return [NEXUSMEM, "forget", "--yes", value, "-C", str(memory.root)]


def timing(memory: Memory, value: str) -> tuple[float, float]:
    """(start-up, whole run) in seconds: a ``status`` process, and a forget run to its end."""
    memory.restore("leaky")
    started = time.perf_counter()
    done = subprocess.run(forget_argv(memory, value), env=memory.env(), capture_output=True)
    total = time.perf_counter() - started
    if done.returncode != 0 or copies(memory.db, value):
        raise RuntimeError(f"the uninterrupted forget failed: {done.stderr.decode()[-400:]}")
    return memory.startup(), total


def kill_times(startup: float, total: float, count: int, rng: random.Random) -> list[float]:
    """``count`` kill times, one in each equal slice of the forget's working time (from the
    end of the interpreter's start-up to a little past the end of an uninterrupted run)."""
    start = max(0.0, startup - 0.1)
    span = total + 0.1 - start
    return [start + span * (i + rng.random()) / count for i in range(count)]


def forget_kills(memory: Memory, value: str, kills: list[float]) -> list[ForgetKill]:
    """Kill ``forget --yes value`` once per delay in ``kills``; check what each kill left."""
    results = []
    for delay in kills:
        memory.restore("leaky")
        it = ForgetKill(delay, kill_after(forget_argv(memory, value), memory.env(), delay))
        it.after_kill = copies(memory.db, value)
        _next_open(memory, value, it)
        results.append(it)
    return results


def _next_open(memory: Memory, value: str, it: ForgetKill) -> None:
    status = _nexusmem(memory, "status")
    if status.returncode != 0:
        it.problems.append(f"status failed: {status.stderr.strip()[-400:]}")
        return
    it.after_open = copies(memory.db, value)
    listed = _nexusmem(memory, "forget", "--list", "--json")
    it.committed = listed.returncode == 0 and bool(json.loads(listed.stdout))
    if it.committed and it.after_open:
        it.problems.append(f"{it.after_open} copies left after the next open")
    if not it.committed:
        again = subprocess.run(forget_argv(memory, value), env=memory.env(), capture_output=True)
        it.after_rerun = copies(memory.db, value)
        if again.returncode != 0 or it.after_rerun:
            it.problems.append(f"{it.after_rerun} copies left after forget ran again")
    it.problems += consistency(memory.db)
