"""SIGKILL ``nexusmem forget --yes VALUE`` at random moments; count the copies of the value left.

    .venv/bin/python bench/bench_forget_kill.py [--iterations 30] [--commits 1500] [--seed 1]

A generated repository (``gen_repo.py``), with commits, doc sections and shell and agent hook
lines holding a made-up value, is synced once (see ``tests/crash_forget.py``). Each iteration
starts from that memory, runs ``nexusmem forget --yes VALUE``, kills it with SIGKILL after a
delay spread over an uninterrupted forget's time, runs ``nexusmem status`` (the next open of
memory) and counts the value's copies in the bytes of ``memory.db``, ``-wal`` and ``-shm``. A
kill that landed before the forget's commit changed nothing: the forget is then run again to
its end, and counted after that. Exits 1 if a committed forget left a copy after the next
open, or a forget run again did.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import gen_repo, machine, table

from tests.crash import Memory
from tests.crash_forget import ForgetKill, copies, forget_kills, kill_times, plant, timing

VALUE = "tangerine-osprey-4417"  # made up: no redaction rule knows it


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--commits", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="nexusmem-forget-kill-"))
    try:
        memory = Memory(base / "repo", base / "home", base / "snapshots")
        print(machine(), file=sys.stderr)
        print(f"generating {args.commits} commits, first sync ...", file=sys.stderr, flush=True)
        gen_repo.generate(memory.root, args.commits, args.seed, quiet=True)
        plant(memory, VALUE, commits=8, lines=20)
        memory.restore("leaky")
        stored = copies(memory.db, VALUE)
        startup, total = timing(memory, VALUE)
        print(
            f"{stored} copies stored; start-up {startup:.2f} s, forget {total:.2f} s; "
            f"killing {args.iterations} times",
            file=sys.stderr,
            flush=True,
        )
        kills = kill_times(startup, total, args.iterations, random.Random(args.seed))
        results = forget_kills(memory, VALUE, kills)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(_report(results, stored))
    failed = [it for it in results if it.problems]
    for it in failed:
        print(f"FAILED after {it.delay:.2f} s: {it.problems}", file=sys.stderr)
    return 1 if failed else 0


def _landed(it: ForgetKill) -> str:
    if it.finished:
        return "after it ended"
    return "after the commit" if it.committed else "before the commit"


def _report(results: list[ForgetKill], stored: int) -> str:
    rows = [
        [
            i,
            f"{it.delay:.2f}",
            _landed(it),
            it.after_kill,
            it.after_open,
            "" if it.after_rerun is None else it.after_rerun,
        ]
        for i, it in enumerate(results, start=1)
    ]
    head = ["kill", "after s", "landed", "copies after the kill", "after next open", "after rerun"]
    summary = []
    for landed in ("before the commit", "after the commit", "after it ended"):
        group = [it for it in results if _landed(it) == landed]
        if group:
            left = sum(it.after_open for it in group)
            rerun = sum(it.after_rerun or 0 for it in group)
            summary.append([landed, len(group), sum(it.after_kill for it in group), left, rerun])
    totals = ["kills landed", "kills", "copies after the kills", "after next open", "after rerun"]
    committed = [it for it in results if it.committed]
    left = sum(it.after_open for it in committed)
    return "\n".join(
        [
            f"## forget --yes killed with SIGKILL ({stored} copies stored before)",
            "",
            table(head, rows),
            "",
            table(totals, summary),
            "",
            f"{len(committed)} kills after the commit (or the end), "
            f"{sum(1 for it in committed if it.after_open)} left copies after the next open "
            f"({left} copies in all)",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
