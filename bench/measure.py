"""One measurement of each path ``python -m bench`` times, each a whole process as users run it.

The sync paths work in a throwaway clone of the cached repository (``throwaway_clone``), so
the cache stays pinned at its commit; the query and MCP paths ask that clone's memory.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from _common import BENCH, ROOT, git, git_walks, measured, run
from bench_query import build_queries, wall
from variants import Variant

sys.path.insert(0, str(ROOT))
from tests.mcp.wire import INITIALIZE, INITIALIZED, Wire, tool_call

__all__ = [
    "McpRun",
    "Samples",
    "SyncRun",
    "Target",
    "agent_hook",
    "floor",
    "mcp_bare_import",
    "mcp_session",
    "query_ms",
    "questions_for",
    "shell_prompt",
    "sync_paths",
]

LABELS = BENCH / "eval" / "real"


def floor(repo: Path, env: dict[str, str]) -> dict[str, float]:
    """The git floor: ``git log --name-status`` over all history, then the patches of the
    newest 200 commits, one after the other as a first sync runs them. Seconds (wall, CPU)
    and the larger of the two peaks (KiB)."""
    walks = [measured(cmd, env) for cmd in git_walks(repo)]
    return {
        "seconds": sum(w["seconds"] for w in walks),
        "cpu_seconds": sum(w["cpu_seconds"] for w in walks),
        "rss_kb": max(w["tree_maxrss_kb"] for w in walks),
    }


@dataclass
class SyncRun:
    """``measured`` results of a first sync, the no-op sync after it, and the sync after one
    new commit."""

    first: dict[str, Any]
    noop: dict[str, Any]
    incremental: dict[str, Any]


def commit_one(clone: Path) -> None:
    """One new commit, as a person makes it: a line added to a file the last commit changed."""
    changed = git(clone, "log", "-1", "--name-only", "--diff-filter=AM", "--format=").split()
    target = next((clone / p for p in changed if (clone / p).is_file()), clone / "BENCH.txt")
    with open(target, "a", encoding="utf-8") as out:
        out.write("\nOne more line, for the incremental sync.\n")
    ident = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]
    git(clone, "add", "-A")
    git(clone, *ident, "commit", "-q", "-m", "bench: one new commit")


def sync_paths(clone: Path, variant: Variant, env: dict[str, str]) -> SyncRun:
    """``init``, then the three syncs of ``clone`` as ``nexusmem sync -q`` processes."""
    variant.ready()
    run([variant.nexusmem, "init", "-C", str(clone)], env)
    sync = [variant.nexusmem, "sync", "-C", str(clone), "-q"]
    first = measured(sync, env)
    variant.ready()
    noop = measured(sync, env)
    commit_one(clone)
    variant.ready()
    return SyncRun(first, noop, measured(sync, env))


def questions_for(name: str, clone: Path, count: int, seed: int) -> list[str]:
    """``count`` questions: for a corpus, its labelled ones (bench/eval/real/NAME.json), one
    of each kind in turn; for a generated repository, bench_query's question shapes drawn from
    its memory."""
    path = LABELS / f"{name}.json"
    if not path.exists():
        picked = [q.text for q in build_queries(clone, seed) if q.category == "question"]
        return (picked * count)[:count]
    by_kind: dict[str, list[str]] = {}
    for q in json.loads(path.read_text())["queries"]:
        by_kind.setdefault(q["kind"], []).append(q["query"])
    turns = [q for group in zip(*by_kind.values(), strict=False) for q in group]
    return turns[:count]


def query_ms(
    clone: Path, variant: Variant, env: dict[str, str], questions: Sequence[str]
) -> list[float]:
    """``nexusmem query "<q>" -C clone`` once per question: milliseconds each."""
    out = []
    for q in questions:
        variant.ready()
        out.append(wall([variant.nexusmem, "query", q, "-C", str(clone)], env, cwd=clone))
    return out


def mcp_bare_import(variant: Variant, env: dict[str, str], cwd: Path) -> float:
    """Milliseconds of ``python -c "import mcp.server.mcpserver"``: the SDK's own start-up."""
    variant.ready()
    return wall([variant.python, "-c", "import mcp.server.mcpserver"], env, cwd=cwd)


@dataclass
class McpRun:
    start_ms: float  # process start to the ``initialize`` reply
    first_ms: float  # the first search_memory after ``initialized``
    warm_ms: list[float] = field(default_factory=list)  # the searches after it


@dataclass
class Target:
    name: str  # a corpus, or "generated 10k"
    repo: Path  # the cached repository, never synced or committed in
    commits: int
    generated: bool


@dataclass
class Samples:
    """Everything measured for one repository and one variant, run after run."""

    first: list[dict[str, Any]] = field(default_factory=list)
    noop: list[dict[str, Any]] = field(default_factory=list)
    incremental: list[dict[str, Any]] = field(default_factory=list)
    query_ms: list[float] = field(default_factory=list)
    bare_ms: list[float] = field(default_factory=list)
    mcp: list[McpRun] = field(default_factory=list)


async def mcp_session(
    clone: Path, variant: Variant, env: dict[str, str], questions: Sequence[str], warm: int
) -> McpRun:
    """``python -m nexusmem_mcp`` in ``clone`` over raw stdio (tests/mcp/wire.py): the time to
    ``initialize`` answered, then a first search and ``warm`` more, each to its reply."""
    variant.ready()
    asked = [questions[i % len(questions)] for i in range(warm + 1)]
    random.Random(len(asked)).shuffle(asked[1:])
    with open(clone.parent / f"{clone.name}-server.log", "ab") as log:
        started = time.perf_counter()
        process = await anyio.open_process(
            [variant.python, "-m", "nexusmem_mcp"], cwd=clone, env=env, stderr=log
        )
        async with process:
            wire = Wire(process)
            with anyio.fail_after(300):  # a hang guard, far beyond any figure here
                await wire.send(INITIALIZE)
                if "result" not in await wire.reply(1):
                    raise RuntimeError(f"initialize refused: see {log.name}")
                start_ms = (time.perf_counter() - started) * 1000
                await wire.send(INITIALIZED)
                searches = []
                for i, text in enumerate(asked, start=2):
                    t = time.perf_counter()
                    await wire.send(
                        tool_call(i, "search_memory", json.dumps({"query": text}).encode())
                    )
                    reply = await wire.reply(i)
                    searches.append((time.perf_counter() - t) * 1000)
                    if "result" not in reply or reply["result"].get("isError"):
                        raise RuntimeError(f"search_memory failed: {json.dumps(reply)[:400]}")
            await process.stdin.aclose()  # EOF: the server stops
            await process.wait()
    return McpRun(start_ms, searches[0], searches[1:])


def shell_prompt(
    variant: Variant, shell: str, iterations: int, warmup: int = 5
) -> dict[str, list[float]]:
    """Enter to the next prompt in ``shell`` without the hook, with it, and with its recorder
    stubbed (bench_shell.py), ``iterations`` times each: seconds per variant of the shell."""
    from bench_shell import bench_prompt

    variant.ready()
    (case,) = bench_prompt(
        shell, ["true"], iterations, warmup, block=10, pause=0.02, extra_env=variant.bytecode_env()
    )
    return case.times


def agent_hook(runs: int, seed: int) -> dict[str, list[float]]:
    """bench_agent.py's hook latency on its own memory (a clone of the generated 5,000-commit
    repository and a 20,000-command shell log): milliseconds per event, with bytecode and
    without NexusMem's (``PYTHONDONTWRITEBYTECODE=1``)."""
    import argparse
    import shutil
    import tempfile

    import bench_agent

    base = Path(tempfile.mkdtemp(prefix="nexusmem-bench-agent-"))
    try:
        setup = argparse.Namespace(commits=5000, lines=20_000, seed=seed)
        repo, env, records = bench_agent.setup_memory(base, setup)
        failed = bench_agent.failed_command(records)
        return bench_agent.hook_latency(base, repo, env, failed, runs, every_cold=True).times
    finally:
        bench_agent.reap(timeout=30)  # the detached syncs SessionStart started
        shutil.rmtree(base, ignore_errors=True)
