"""SIGKILL ``nexusmem sync`` at random moments; count the iterations whose memory survived.

    .venv/bin/python bench/bench_crash.py [--iterations 100] [--commits 300]

A generated repository (``gen_repo.py``) and a hook log of shell and agent commands are set
up in a temporary directory (see ``tests/crash.py``). Each scenario is one command: the first
sync of the repository, an incremental sync with new commits and hook lines, a ``--rebuild``,
git's post-commit ``sync --auto``, and the embedding pass against the fake Ollama of the test
suite (real HTTP on 127.0.0.1, slowed down so the pass takes a while). Each is first run
uninterrupted (its node set, vectors and duration are the reference), then started again from
the same snapshot ``--iterations`` / 5 times and killed with SIGKILL after a delay spread over
its working time. After each kill: ``nexusmem status`` must succeed, SQLite's
``integrity_check`` and FTS5's ``integrity-check`` of both indexes must pass, vectors must
match their bookkeeping, the next ``nexusmem sync`` must complete (a killed ``--auto`` is
followed by another ``--auto``, which must not skip), and the node set (ids, content hashes)
and embedded nodes must equal the reference. Exits 1 if any iteration did not survive.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import gen_repo, machine, table

from tests.crash import Iteration, Memory, crash_loop, delays, prepare, reference
from tests.crash import scenarios as all_scenarios
from tests.fake_ollama import FakeOllama


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=100, help="in all, over 5 scenarios")
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", nargs="*", help="scenario names to run (default: all)")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="nexusmem-crash-"))
    rng = random.Random(args.seed)
    results: list[Iteration] = []
    timing: dict[str, tuple[float, float]] = {}
    try:
        with FakeOllama() as fake:
            fake.mode, fake.delay = "slow", 0.05  # each batch of 32 waits: a pass to kill in
            memory = Memory(base / "repo", base / "home", base / "snapshots")
            print(f"{machine()}", file=sys.stderr)
            print(f"generating {args.commits} commits, first sync ...", file=sys.stderr)
            gen_repo.generate(memory.root, args.commits, args.seed, quiet=True)
            prepare(memory)
            ollama = (("OLLAMA_HOST", fake.url), ("NEXUSMEM_EMBED_MODEL", fake.model))
            chosen = [s for s in all_scenarios(ollama) if not args.only or s.name in args.only]
            per = max(1, args.iterations // len(chosen))
            for scenario in chosen:
                ref = reference(memory, scenario, runs=2)
                timing[scenario.name] = (ref.startup, ref.work)
                print(
                    f"{scenario.name}: {ref.work:.1f} s of work, killing {per} times",
                    file=sys.stderr,
                    flush=True,
                )
                results += crash_loop(memory, scenario, ref, delays(ref, per, rng))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(_report(results, timing))
    failed = [it for it in results if it.problems]
    for it in failed:
        print(f"FAILED {it.scenario} after {it.delay:.2f} s: {it.problems}", file=sys.stderr)
    return 1 if failed else 0


def _report(results: list[Iteration], timing: dict[str, tuple[float, float]]) -> str:
    groups: dict[str, list[Iteration]] = defaultdict(list)
    for it in results:
        groups[it.scenario].append(it)
    rows = []
    for name, its in groups.items():
        startup, work = timing[name]
        killed = sum(not it.finished for it in its)
        survived = sum(not it.problems for it in its)
        rows.append([name, f"{startup:.1f}", f"{work:.1f}", len(its), killed, survived])
    total = len(results)
    survived = sum(not it.problems for it in results)
    killed = sum(not it.finished for it in results)
    rows.append(["all", "", "", total, killed, survived])
    head = ["scenario", "start-up s", "sync s", "iterations", "killed mid-run", "survived"]
    return "\n".join(
        [
            "## Crash loop: SIGKILL during sync",
            "",
            table(head, rows),
            "",
            f"{survived}/{total} iterations survived",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
