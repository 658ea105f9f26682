"""Many processes on one memory: 8 MCP servers searching, 2 syncs, hook writers, commits.

    .venv/bin/python bench/bench_stress.py [--seconds 60] [--servers 8] [--commits 300]
    .venv/bin/python bench/bench_stress.py --commits 30000 --unsynced   # a 20 s write lock

A clone of a generated repository (``gen_repo.py``, cached under ``bench/out/``) in a
temporary directory is initialised and synced once (not with ``--unsynced``: then both syncs
race to make the first one). Then, for ``--seconds``: ``--servers`` ``python -m nexusmem_mcp``
processes, each driven by the SDK's stdio client, call ``search_memory`` in a loop; one
``nexusmem sync`` and one ``nexusmem sync --auto`` (as git's post-commit hook starts it) run
back to back; shell-hook writers run the recorder the hooks start, and an agent-hook writer
runs the hook file Claude Code runs, each with a unique command text; a commit lands every
``--commit-every`` seconds. Then one last sync, and the audit (see ``tests/stress.py``): every
appended command in memory exactly once, no node twice, every commit there, SQLite and both
FTS indexes intact.

Prints a table per actor kind (calls, calls/s, p50/p99 latency, "database is locked" errors,
other errors, full walks) and the audit. Exits 1 if any invariant broke. Loopback only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _common import NEXUSMEM, ensure_repo, machine, percentile, run, table

from tests.stress import Outcome, Plan, child_env, run_stress


def _prepare(base: Path, commits: int, seed: int, synced: bool) -> tuple[Path, Path]:
    """A clone of the cached generated repository, initialised (and synced, unless the run
    is to start with every sync racing to make the first one)."""
    root, home = base / "repo", base / "home"
    source = ensure_repo(commits, seed)
    run(["git", "clone", "-q", str(source), str(root)], dict(os.environ))
    env = child_env(home)
    run([NEXUSMEM, "init", "-C", str(root)], env)
    if synced:
        run([NEXUSMEM, "sync", "-q", "-C", str(root)], env)
    return root, home


def _report(outcome: Outcome, plan: Plan) -> str:
    rows = []
    for actor in outcome.actors.values():
        lat = [x * 1000 for x in actor.latencies] or [0.0]
        rows.append(
            [
                actor.kind,
                actor.processes,
                len(actor.latencies),
                f"{len(actor.latencies) / outcome.seconds:.1f}",
                f"{percentile(lat, 50):.0f}",
                f"{percentile(lat, 99):.0f}",
                actor.locked,
                actor.other,
                actor.full_walks if "sync" in actor.kind else "",
            ]
        )
    head = ["actor", "procs", "calls", "calls/s", "p50 ms", "p99 ms", "locked", "other errors"]
    head.append("full walks")
    audit = outcome.audit
    checks = [
        ["commands handed to a hook", audit.appended, ""],
        ["  of them in the hook logs", audit.in_log, "pass" if not audit.lost_in_log else "MISS"],
        ["  log lines that are not a record", len(audit.broken_lines), _ok(audit.broken_lines)],
        ["  missing from memory", len(audit.missing), "pass" if not audit.missing else "MISS"],
        ["  in memory twice or more", len(audit.doubled), "pass" if not audit.doubled else "MISS"],
        ["nodes with the same kind + ref", len(audit.duplicate_nodes), _ok(audit.duplicate_nodes)],
        ["commits made meanwhile", audit.commits, ""],
        ["  missing from memory", len(audit.commits_missing), _ok(audit.commits_missing)],
        ["integrity (SQLite, nodes_fts, nodes_cjk)", len(audit.integrity), _ok(audit.integrity)],
        ["nodes after the final sync", audit.nodes, ""],
    ]
    final = outcome.final_sync
    return "\n".join(
        [
            f"## Stress: {plan.servers} MCP servers, {plan.plain_syncs} + {plan.auto_syncs} "
            f"syncs, {plan.shell_writers} + {plan.agent_writers} hook writers, "
            f"{outcome.seconds:.1f} s",
            "",
            table(head, rows),
            "",
            f"final sync: {final.get('shell', '?')} shell and {final.get('agent', '?')} agent "
            f"command(s), {final.get('commits', '?')} commit(s) left to it, "
            f"{final.get('seconds', '?')} s",
            "",
            table(["check", "count", ""], checks, ["l", "r", "l"]),
        ]
    )


def _ok(items: list[str]) -> str:
    return "pass" if not items else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--servers", type=int, default=8)
    parser.add_argument("--shell-writers", type=int, default=2)
    parser.add_argument("--agent-writers", type=int, default=1)
    parser.add_argument("--commit-every", type=float, default=5.0)
    parser.add_argument("--commits", type=int, default=300, help="size of the repository")
    parser.add_argument(
        "--unsynced",
        action="store_true",
        help="start before the first sync: both syncs race to make it (long write lock)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="nexusmem-stress-"))
    try:
        root, home = _prepare(base, args.commits, args.seed, synced=not args.unsynced)
        plan = Plan(
            root=root,
            home=home,
            seconds=args.seconds,
            servers=args.servers,
            shell_writers=args.shell_writers,
            agent_writers=args.agent_writers,
            commit_every=args.commit_every or None,
            seed=args.seed,
            logs=base / "logs",
            synced=not args.unsynced,
        )
        print(f"{machine()}; load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
        print(f"running for {args.seconds:.0f} s ...", file=sys.stderr, flush=True)
        outcome = anyio.run(run_stress, plan)
        print(_report(outcome, plan))
        print(f"\nload average after: {os.getloadavg()[0]:.1f}", file=sys.stderr)
        problems = outcome.problems()
        for line in problems:
            print(f"PROBLEM: {line}", file=sys.stderr)
        return 1 if problems else 0
    finally:
        if args.keep:
            print(f"kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
