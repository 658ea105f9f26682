"""Search latency on the synced 10,000-commit synthetic repository.

    .venv/bin/python bench/bench_query.py [--commits 10000] [--rounds 20] [--process-runs 20]

(a) In process: the engine is opened once (read-only, as the MCP server does) and
``handlers.search`` is timed for ~30 varied queries drawn from the corpus (common and rare words,
phrases from commit subjects, questions, identifiers, paths, doc headings, pasted text, a query
matching nothing), each repeated ``--rounds`` times in shuffled order after one warm-up pass.
(b) As a whole process: ``nexusmem query "<q>" -C repo``, ``--process-runs`` times, next to the
interpreter start-up and import baselines that bound it. Percentiles are printed as Markdown.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    NEXUSMEM,
    PYTHON,
    bench_env,
    drop_home,
    ensure_repo,
    fresh_home,
    machine,
    mark,
    median,
    percentile,
    run,
    table,
)

TARGET_INPROC_P50_MS = 10.0
TARGET_PROCESS_P50_MS = 300.0
STOP = set(
    """a an and are as at be but by can did do does for from has have how i if in into is
it its me my of on or our should so that the their then there these this to was we were what when
where which who why will with would you your not after before while only once per via""".split()
)


@dataclass
class Query:
    category: str
    text: str
    samples: list[float] = field(default_factory=list)  # ms
    cpu: list[float] = field(default_factory=list)  # ms of CPU, all threads: less load-bound
    matched: int = 0  # candidates the search kept (at most 100)
    results: int = 0  # results packed into the budget
    fts_rows: int | None = None  # rows the FTS MATCH hits before ranking: what ranking costs
    vector: str = ""  # what became of the vector arm in the warm-up search ("used", "off"...)


def ensure_synced(repo: Path, env: dict[str, str]) -> dict[str, Any]:
    """The repository's status; init and sync it first if its memory is missing or behind."""
    proc = subprocess.run(
        [NEXUSMEM, "status", "-C", str(repo), "--json"], env=env, capture_output=True, text=True
    )
    status = json.loads(proc.stdout) if proc.returncode == 0 else None
    if not status or not status.get("nodes") or status.get("cursor") != status.get("head"):
        print(f"syncing {repo.name} ...", file=sys.stderr, flush=True)
        shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
        run([NEXUSMEM, "init", "-C", str(repo)], env)
        run([NEXUSMEM, "sync", "-C", str(repo), "-q"], env)
        status = json.loads(run([NEXUSMEM, "status", "-C", str(repo), "--json"], env).stdout)
    return status


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z_]+", text.lower()) if len(w) >= 3 and w not in STOP]


def build_queries(repo: Path, seed: int) -> list[Query]:
    """About 30 queries of several shapes, drawn deterministically from the stored corpus."""
    con = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    try:
        rows = con.execute("select kind, title, body from nodes order by seq").fetchall()
        paths = [p for (p,) in con.execute("select distinct path from node_files order by path")]
    finally:
        con.close()
    R = random.Random(seed)
    commits = [(t, b) for k, t, b in rows if k == "git_commit"]
    headings = sorted(
        {t.split(" — ", 1)[1] for k, t, _ in rows if k == "doc_section" and " — " in t}
    )
    counts = Counter(w for _, t, _ in rows for w in words(t) if "_" not in w)
    ranked = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    common, mid = ranked[:40], ranked[100:400]
    rare = sorted(w for w, c in counts.items() if c <= 2) or ranked[-40:]
    idents = sorted({w for _, t, _ in rows for w in re.findall(r"\b[a-z]+_[a-z_]+\b", t)})
    bodies = [b for _, b in commits if len(b) > 300]

    def subject_words() -> list[str]:
        while True:
            ws = [w for w in words(R.choice(commits)[0].split(": ", 1)[-1]) if "_" not in w]
            if len(ws) >= 3:
                return ws

    out = [Query("common word", w) for w in R.sample(common, 5)]
    out += [Query("rare word", w) for w in R.sample(rare, 4)]
    out += [Query("mid-frequency words", " ".join(R.sample(mid, 2))) for _ in range(2)]
    for _ in range(6):
        ws = subject_words()
        out.append(Query("subject phrase", " ".join(ws[: R.randint(2, 3)])))
    templates = [
        "why does the {} {} {}",
        "how do we {} the {} {}",
        "what broke {} {} {}",
        "when was {} {} {} changed",
        "why did {} {} fail with {}",
    ]
    for t in R.sample(templates, 5):
        ws = subject_words()
        out.append(Query("question", t.format(*(ws + ws)[:3])))
    out += [Query("identifier", w) for w in R.sample(idents, 3)]
    out += [Query("path", p) for p in R.sample([p for p in paths if p.endswith(".py")], 2)]
    out += [Query("doc heading", h) for h in R.sample(headings, 2)]
    for _ in range(2):
        ws = R.choice(bodies).split()
        start = R.randrange(max(1, len(ws) - 25))
        out.append(Query("pasted text (25 words)", " ".join(ws[start : start + 25])))
    out.append(Query("many common words", " ".join(R.sample(common, 8))))
    out.append(Query("no match", "qwxzv plorbnik"))
    return out


def count_fts_rows(repo: Path, queries: list[Query]) -> None:
    """How many nodes each query's MATCH expression hits (needs FTS5 in the stdlib sqlite3)."""
    from nexusmem_core.retrieval.query import fts_match

    con = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    try:
        for q in queries:
            match = fts_match(q.text)
            if match is None:
                q.fts_rows = 0
                continue
            sql = "select count(*) from nodes_fts where nodes_fts match ?"
            q.fts_rows = con.execute(sql, (match,)).fetchone()[0]
    except sqlite3.OperationalError:
        pass  # no FTS5 in this sqlite3: leave the column empty
    finally:
        con.close()


def rows_text(values: list[int | None]) -> str:
    known = [v for v in values if v is not None]
    return f"{median(known):,.0f}" if known else "?"


async def in_process(
    repo: Path,
    home: Path,
    queries: list[Query],
    rounds: int,
    seed: int,
    *,
    vector: bool = True,
    warm: bool = False,
    **settings: Any,
) -> float:
    """Time ``handlers.search`` per query; return the time to open the engine (ms).

    ``vector`` is passed to every search; ``warm`` reads the vector sketch first, as a
    long-lived MCP server has it (store/sketches.py); ``settings`` (``ollama_host``,
    ``embed_model``) go to the engine's ``Settings``."""
    from nexusmem_core import handlers
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine
    from nexusmem_core.store import sketches

    R = random.Random(seed)
    started = time.perf_counter()
    async with open_engine(Settings(home=home, **settings), repo, read_only=True) as engine:
        opened = (time.perf_counter() - started) * 1000
        if warm:
            await sketches.current(await engine.db.beside(), wait=True)
        for q in queries:  # warm-up: page cache, statement cache
            response = await handlers.search(engine, q.text, vector=vector)
            q.matched, q.results = response.matched, len(response.results)
            q.vector = response.vector
        for _ in range(rounds):
            order = queries[:]
            R.shuffle(order)
            for q in order:
                t, c = time.perf_counter_ns(), time.process_time_ns()
                await handlers.search(engine, q.text, vector=vector)
                q.samples.append((time.perf_counter_ns() - t) / 1e6)
                q.cpu.append((time.process_time_ns() - c) / 1e6)
    return opened


def shapes_table(queries: list[Query]) -> str:
    """Latency per query shape, with how many rows the shape's MATCH hits."""
    cats: dict[str, list[Query]] = {}
    for q in queries:
        cats.setdefault(q.category, []).append(q)
    rows = []
    for cat, qs in cats.items():
        vals = [s for q in qs for s in q.samples]
        c50, c95, _ = pcts(vals)
        cpu = [s for q in qs for s in q.cpu]
        rows.append(
            [
                cat,
                len(qs),
                rows_text([q.fts_rows for q in qs]),
                f"{c50:.2f}",
                f"{c95:.2f}",
                f"{max(vals):.2f}",
                f"{median(cpu):.2f}",
            ]
        )
    return table(
        [
            "query shape",
            "queries",
            "FTS rows hit (median)",
            "p50 (ms)",
            "p95 (ms)",
            "max (ms)",
            "CPU p50 (ms)",
        ],
        rows,
    )


def slowest_table(queries: list[Query], count: int = 6) -> str:
    """The ``count`` slowest queries by their median over the rounds."""
    slow = sorted(queries, key=lambda q: -median(q.samples))[:count]
    return table(
        ["query", "shape", "FTS rows hit", "results", "median (ms)"],
        [
            [
                (q.text if len(q.text) <= 60 else q.text[:57] + "...").replace("|", "\\|"),
                q.category,
                rows_text([q.fts_rows]),
                q.results,
                f"{median(q.samples):.2f}",
            ]
            for q in slow
        ],
        align=["l", "l", "r", "r", "r"],
    )


def wall(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    t = time.perf_counter()
    proc = subprocess.run(
        cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    dt = (time.perf_counter() - t) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    return dt


def pcts(values: list[float]) -> tuple[float, float, float]:
    return percentile(values, 50), percentile(values, 95), percentile(values, 99)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=10000, help="size of the repository")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=20, help="timed passes over the queries")
    parser.add_argument(
        "--process-runs", type=int, default=20, help="`nexusmem query` processes to time"
    )
    parser.add_argument("--baseline-runs", type=int, default=10)
    args = parser.parse_args(argv)

    repo = ensure_repo(args.commits, args.seed)
    home = fresh_home()
    env = bench_env(home)
    try:
        status = ensure_synced(repo, env)
        queries = build_queries(repo, args.seed)
        count_fts_rows(repo, queries)
        opened = asyncio.run(in_process(repo, home, queries, args.rounds, args.seed))

        procs = []
        for i in range(args.process_runs):
            q = queries[i % len(queries)]
            procs.append(wall([NEXUSMEM, "query", q.text, "-C", str(repo)], env))
        baselines = [
            ("python -c pass", [PYTHON, "-c", "pass"]),
            ('python -c "import cli"', [PYTHON, "-c", "import cli"]),
            (
                "+ nexusmem_core.config (settings, config.json)",
                [PYTHON, "-c", "import cli, nexusmem_core.config"],
            ),
            (
                "+ everything `query` imports (anyio, handlers, engine, logging)",
                [
                    PYTHON,
                    "-c",
                    "import cli, anyio, nexusmem_core.config, nexusmem_core.handlers, "
                    "nexusmem_core.engine, nexusmem_core.logging",
                ],
            ),
            ("nexusmem --help", [NEXUSMEM, "--help"]),
        ]
        base_rows = []
        for label, cmd in baselines:
            times = [wall(cmd, env, cwd=home) for _ in range(args.baseline_runs)]
            base_rows.append([label, f"{median(times):.0f}"])
    finally:
        drop_home(home)

    samples = [s for q in queries for s in q.samples]
    p50, p95, p99 = pcts(samples)
    nodes = status["nodes"]
    print("## nexusmem search\n")
    print(
        f"{machine()}; repository {repo.name}: {args.commits:,} commits, **{nodes:,} nodes** "
        f"({', '.join(f'{v:,} {k}' for k, v in status['by_kind'].items())}).\n"
    )
    print(
        f"### (a) in process: `handlers.search`, engine opened once read-only "
        f"({opened:.0f} ms to open)\n"
    )
    print(
        f"{len(queries)} queries x {args.rounds} rounds = {len(samples)} timed searches "
        "after one warm-up pass.\n"
    )
    print(
        table(
            [
                "queries",
                "searches",
                "p50 (ms)",
                "p95 (ms)",
                "p99 (ms)",
                "mean (ms)",
                f"target p50 < {TARGET_INPROC_P50_MS:g} ms",
            ],
            [
                [
                    "all",
                    len(samples),
                    f"{p50:.2f}",
                    f"{p95:.2f}",
                    f"{p99:.2f}",
                    f"{sum(samples) / len(samples):.2f}",
                    mark(p50 < TARGET_INPROC_P50_MS),
                ]
            ],
        )
    )
    print()
    print(shapes_table(queries))
    print("\nSlowest queries (median over rounds):\n")
    print(slowest_table(queries))

    pp50, pp95, _ = pcts(procs)
    print('\n### (b) whole process: `nexusmem query "<q>" -C repo`\n')
    print(
        table(
            [
                "command",
                "runs",
                "p50 (ms)",
                "p95 (ms)",
                "min (ms)",
                f"target p50 < {TARGET_PROCESS_P50_MS:g} ms",
            ],
            [
                [
                    "nexusmem query",
                    len(procs),
                    f"{pp50:.0f}",
                    f"{pp95:.0f}",
                    f"{min(procs):.0f}",
                    mark(pp50 < TARGET_PROCESS_P50_MS),
                ]
            ],
            align=["l", "r", "r", "r", "r", "l"],
        )
    )
    print(f"\nStart-up baselines (median of {args.baseline_runs} runs each, same interpreter):\n")
    print(table(["process", "median (ms)"], base_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
