"""Sync speed and memory on synthetic repositories of 5,000 and 10,000 commits, and corpora.

    .venv/bin/python bench/bench_sync.py [--runs 3] [--sizes 5000 10000] [--seed 1] [--regen]
                                         [--corpora werkzeug click]

For each repository (built once by ``gen_repo.py`` and cached under ``bench/out/``; a corpus of
``../shared/corpora/`` in a throwaway clone) and each run: delete ``.nexusmem/``, ``nexusmem
init``, then time ``nexusmem sync -q`` as a whole process twice (the first sync is a full walk,
the second finds nothing new), then ``nexusmem sync -q --rebuild``, which should cost what the
first sync did. Each timed command runs inside a
fresh helper process, so the peak RSS it reports (``RUSAGE_CHILDREN``) belongs to that one sync:
the Python process and the git processes it started. Medians over the runs are printed as
Markdown tables, with the targets. ``NEXUSMEM_HOME`` points at a temporary directory, so the
user's registry is never touched.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _common import (
    NEXUSMEM,
    bench_env,
    drop_home,
    ensure_corpus,
    ensure_repo,
    fresh_home,
    git,
    git_walks,
    machine,
    mark,
    measured,
    median,
    run,
    table,
    throwaway_clone,
)

TARGET_FIRST = {5000: 1.0, 10000: 3.0}  # seconds
TARGET_SECOND = 0.3  # seconds
TARGET_REBUILD = 1.25  # a rebuild's time over the first sync's (run by run)
TARGET_PEAK_MB = 150.0
MB = 1024 * 1024


def db_size(repo: Path) -> int:
    ws = repo / ".nexusmem"
    return sum(
        (ws / name).stat().st_size
        for name in ("memory.db", "memory.db-wal")
        if (ws / name).exists()
    )


@dataclass
class RepoResult:
    first: list[float] = field(default_factory=list)
    second: list[float] = field(default_factory=list)
    rebuild: list[float] = field(default_factory=list)
    # CPU seconds of the process tree (git and the walk's second process included): on a
    # shared machine they move less than wall time does.
    first_cpu: list[float] = field(default_factory=list)
    rebuild_cpu: list[float] = field(default_factory=list)
    tree_peak: list[float] = field(default_factory=list)  # MB, python + git children
    self_peak: list[float] = field(default_factory=list)  # MB, the python process alone
    nodes: int = 0
    size: int = 0  # bytes


def bench_repo(repo: Path, runs: int) -> RepoResult:
    r = RepoResult()
    for i in range(runs):
        home = fresh_home()
        env = bench_env(home)
        try:
            shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
            run([NEXUSMEM, "init", "-C", str(repo)], env)
            a = measured([NEXUSMEM, "sync", "-C", str(repo), "-q"], env)
            b = measured([NEXUSMEM, "sync", "-C", str(repo), "-q"], env)
            c = measured([NEXUSMEM, "sync", "-C", str(repo), "-q", "--rebuild"], env)
            status = json.loads(run([NEXUSMEM, "status", "-C", str(repo), "--json"], env).stdout)
            r.nodes, r.size = status["nodes"], db_size(repo)
        finally:
            drop_home(home)
        r.first.append(a["seconds"])
        r.second.append(b["seconds"])
        r.rebuild.append(c["seconds"])
        r.first_cpu.append(a["cpu_seconds"])
        r.rebuild_cpu.append(c["cpu_seconds"])
        r.tree_peak.append(max(a["tree_maxrss_kb"], b["tree_maxrss_kb"]) / 1024)
        r.self_peak.append(max(a["self_hwm_kb"], b["self_hwm_kb"]) / 1024)
        print(
            f"  {repo.name} run {i + 1}/{runs}: first {a['seconds']:.2f}s, second "
            f"{b['seconds']:.3f}s, rebuild {c['seconds']:.2f}s, peak {r.tree_peak[-1]:.0f} MB "
            f"(python {r.self_peak[-1]:.0f} MB)",
            file=sys.stderr,
            flush=True,
        )
    return r


def git_floor(repo: Path, runs: int) -> tuple[float, float]:
    """What git alone takes for the two walks a first sync makes (commits, then 200 patches)."""
    env = bench_env(fresh_home())
    walk, patches = git_walks(repo)
    try:
        return (
            median([measured(walk, env)["seconds"] for _ in range(runs)]),
            median([measured(patches, env)["seconds"] for _ in range(runs)]),
        )
    finally:
        drop_home(Path(env["NEXUSMEM_HOME"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per repository (median)")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[5000, 10000],
        help="commit counts of the repositories",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--regen", action="store_true", help="rebuild the cached repositories")
    parser.add_argument(
        "--corpora", nargs="*", default=[], help="corpora of ../shared/corpora/ to sync too"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    clones = Path(tempfile.mkdtemp(prefix="nexusmem-bench-sync-"))
    try:
        return report(args, clones, started)
    finally:
        shutil.rmtree(clones, ignore_errors=True)


def report(args: argparse.Namespace, clones: Path, started: float) -> int:
    """Sync every repository, then print the tables."""
    repos = {n: ensure_repo(n, args.seed, args.regen) for n in args.sizes}
    for name in args.corpora:  # a clone of its own: the cached one is other benches' too
        repo = throwaway_clone(ensure_corpus(name), clones / name)
        repos[int(git(repo, "rev-list", "--count", "HEAD"))] = repo
    results = {}
    for n, repo in repos.items():
        results[n] = bench_repo(repo, args.runs)

    print("## nexusmem sync\n")
    print(
        f"{machine()}; median of {args.runs} run(s) each; `nexusmem sync -q` timed as a whole "
        "process (interpreter start-up included).\n"
    )
    rows = []
    for n, r in results.items():
        first, second, peak = median(r.first), median(r.second), median(r.tree_peak)
        ratio = median([b / a for a, b in zip(r.first, r.rebuild, strict=True)])
        target_first = TARGET_FIRST.get(n)
        rows.append(
            [
                repos[n].name,
                f"{n:,}",
                f"{r.nodes:,}",
                f"{first:.2f} " + (mark(first < target_first) if target_first else ""),
                f"{second:.3f} {mark(second < TARGET_SECOND)}",
                f"{median(r.rebuild):.2f} ({ratio:.2f}x) {mark(ratio <= TARGET_REBUILD)}",
                f"{peak:.0f} {mark(peak < TARGET_PEAK_MB)}",
                f"{r.size / MB:.1f}",
            ]
        )
    print(
        table(
            [
                "repo",
                "commits",
                "nodes",
                "first sync (s)",
                "second sync (s)",
                "rebuild (s, x first)",
                "peak RSS (MB)",
                "db size (MB)",
            ],
            rows,
        )
    )
    targets = ", ".join(f"{n // 1000}k < {t:g} s" for n, t in TARGET_FIRST.items())
    print(
        f"\nTargets: first sync {targets}; second sync < {TARGET_SECOND:g} s; rebuild <= "
        f"{TARGET_REBUILD:g}x the first sync; peak RSS < {TARGET_PEAK_MB:g} MB.\n"
    )

    print("### Spread and peak split\n")
    rows = []
    for n, r in results.items():
        rows.append(
            [
                repos[n].name,
                " / ".join(f"{v:.2f}" for v in r.first),
                " / ".join(f"{v:.3f}" for v in r.second),
                " / ".join(f"{v:.2f}" for v in r.rebuild),
                f"{median(r.first_cpu):.2f} / {median(r.rebuild_cpu):.2f}",
                f"{median(r.tree_peak):.0f}",
                f"{median(r.self_peak):.0f}",
            ]
        )
    print(
        table(
            [
                "repo",
                "first sync, each run (s)",
                "second sync, each run (s)",
                "rebuild, each run (s)",
                "CPU, first / rebuild (s)",
                "peak RSS incl. git (MB)",
                "python process alone (MB)",
            ],
            rows,
        )
    )
    print(
        "\n(python process alone: its VmHWM sampled every 10 ms; it excludes the git children.)\n"
    )

    print("### git alone (the floor a sync cannot go under)\n")
    rows = []
    for repo in repos.values():
        walk, patches = git_floor(repo, args.runs)
        rows.append([repo.name, f"{walk:.2f}", f"{patches:.2f}"])
    print(table(["repo", "git log --name-status, all commits (s)", "git log -p -n 200 (s)"], rows))
    print(f"\ntotal benchmark time {time.perf_counter() - started:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
