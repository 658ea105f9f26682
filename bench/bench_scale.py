"""Scale: sync on 10k-100k-commit repositories, and search up to a 500k-node database.

    .venv/bin/python bench/bench_scale.py [--sizes 10000 30000 100000] [--runs 3]
        [--nodes 500000] [--rounds 10] [--skip sync full query hybrid] [--regen] [--seed 1]

(1) Sync. For each size, a local clone of the cached ``gen_repo.py`` repository is synced
``--runs`` times from nothing (``init``, then ``nexusmem sync -q --no-embed`` as a measured
process), then once more with nothing new, then after ``--new-commits`` new commits. Peak RSS
is that of the first sync; ``git log`` alone is measured beside it. Then once per size, with
``sources.diff.maxCommits`` raised to the size (every commit's patches), cached under
``bench/out/scale/`` because it takes many minutes at 100k.
(2) The big database: the largest size's all-diffs memory, topped up to ``--nodes`` with shell
and agent commands and doc sections drawn from its own commits (``scale_fill.py``, through the
store's API). BM25 search in process, as bench_query.py does it and with its queries (drawn
once from the 10k memory, so every size answers the same ones), and where its time goes.
(3) Hybrid: a random unit vector of ``--dims`` for every node (``vectors.store``; vectors of a
memory cached before schema v9 are sketched first), the fake Ollama of the test suite answering
the query embedding over HTTP on 127.0.0.1; and the k-NN alone, exact against as shipped.
(4) One table of query latency against size.

Progress goes to stderr, Markdown tables to stdout. Everything lives under bench/out/scale/
(gitignored); ``NEXUSMEM_HOME`` is a temporary directory. The machine may be shared: the load
average is printed beside every part, and only ratios within one run compare well.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from _common import (
    NEXUSMEM,
    OUT,
    ROOT,
    bench_env,
    drop_home,
    ensure_repo,
    fresh_home,
    gen_repo,
    git_walks,
    machine,
    mark,
    measured,
    median,
    percentile,
    run,
    table,
)
from bench_query import (
    Query,
    build_queries,
    count_fts_rows,
    in_process,
    shapes_table,
    slowest_table,
)
from bench_sync import db_size
from bench_vectors import unit_vector

sys.path.insert(0, str(ROOT))

SCALE = OUT / "scale"
TARGET_P50_MS = 25.0
MB = 1024 * 1024
VECTOR_BATCH = 1000
IDENT = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load() -> str:
    return "load average " + " / ".join(f"{v:.1f}" for v in os.getloadavg())


def head(repo: Path) -> str:
    return run(["git", "-C", str(repo), "rev-parse", "HEAD"], os.environ.copy()).stdout.strip()


def nexus_env(home: Path) -> dict[str, str]:
    """bench_env, and an Ollama address nothing answers: no sync here ever embeds."""
    return {**bench_env(home), "OLLAMA_HOST": "127.0.0.1:9"}


def fresh_clone(commits: int, seed: int, name: str) -> Path:
    """A local clone (hard-linked objects) of the cached repository, under bench/out/scale/."""
    src = ensure_repo(commits, seed)
    dest = SCALE / name
    shutil.rmtree(dest, ignore_errors=True)
    SCALE.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", "--local", str(src), str(dest)], check=True)
    return dest


def status(repo: Path, env: dict[str, str]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(
        run([NEXUSMEM, "status", "-C", str(repo), "--json"], env).stdout
    )
    return result


def add_commits(repo: Path, count: int, rng: random.Random) -> None:
    """``count`` small commits, each editing one module, as a day's work would."""
    modules = run(["git", "-C", str(repo), "ls-files", "src"], os.environ.copy()).stdout.split()
    for i in range(count):
        path = repo / rng.choice([m for m in modules if m.endswith(".py")])
        with path.open("a") as fh:
            fh.write(f"\n\ndef scale_check_{i}():\n    return {rng.randrange(1000)}\n")
        subprocess.run(
            [
                "git",
                "-C",
                str(repo),
                *IDENT,
                "commit",
                "-qam",
                f"fix: scale check {i} in {path.stem}",
            ],
            check=True,
        )


# ------------------------------------------------------------------------------ (1) sync


def sync_cmd(repo: Path) -> list[str]:
    return [NEXUSMEM, "sync", "-C", str(repo), "-q", "--no-embed"]


@dataclass
class SyncRuns:
    commits: int
    first: list[float] = field(default_factory=list)
    noop: list[float] = field(default_factory=list)
    incremental: list[float] = field(default_factory=list)
    tree_peak: list[float] = field(default_factory=list)  # MB, the sync and its git children
    self_peak: list[float] = field(default_factory=list)  # MB, the Python process alone
    git_peak: float = 0.0  # MB, `git log --name-status` over the whole history, alone
    git_anon: float = 0.0  # MB of it not file-backed (the rest is mostly the mapped pack)
    nodes: int = 0
    size: int = 0


def bench_sync_size(commits: int, runs: int, new: int, seed: int) -> SyncRuns:
    result = SyncRuns(commits)
    rng = random.Random(seed)
    for i in range(runs):
        repo = fresh_clone(commits, seed, f"repo-{commits}")
        home = fresh_home()
        env = nexus_env(home)
        try:
            run([NEXUSMEM, "init", "-C", str(repo)], env)
            first = measured(sync_cmd(repo), env)
            noop = measured(sync_cmd(repo), env)
            add_commits(repo, new, rng)
            incremental = measured(sync_cmd(repo), env)
            result.nodes, result.size = status(repo, env)["nodes"], db_size(repo)
            if i == 0:
                walk = measured(git_walks(repo)[0], env)
                result.git_peak = walk["tree_maxrss_kb"] / 1024
                result.git_anon = walk["self_anon_kb"] / 1024
        finally:
            drop_home(home)
        result.first.append(first["seconds"])
        result.noop.append(noop["seconds"])
        result.incremental.append(incremental["seconds"])
        result.tree_peak.append(first["tree_maxrss_kb"] / 1024)
        result.self_peak.append(first["self_hwm_kb"] / 1024)
        log(
            f"  {commits:,} commits, run {i + 1}/{runs}: first {first['seconds']:.1f}s "
            f"(peak {result.tree_peak[-1]:.0f} MB, python {result.self_peak[-1]:.0f} MB), "
            f"no-op {noop['seconds']:.2f}s, +{new} commits {incremental['seconds']:.2f}s; {load()}"
        )
    return result


def set_max_commits(repo: Path, value: int) -> None:
    path = repo / ".nexusmem" / "config.json"
    config = json.loads(path.read_text())
    config["sources"]["diff"]["maxCommits"] = value
    path.write_text(json.dumps(config, indent=2) + "\n")


def stamp_path(commits: int, seed: int) -> Path:
    return SCALE / f"full-{commits}-s{seed}.json"


def read_stamp(commits: int, seed: int) -> dict[str, Any]:
    """The all-diffs memory's record, or {} when it is missing or its repository changed."""
    path, repo = stamp_path(commits, seed), SCALE / f"full-{commits}-s{seed}"
    try:
        stamp: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    fresh = (
        stamp.get("head") == head(ensure_repo(commits, seed))
        and stamp.get("gen_version") == gen_repo.GEN_VERSION
        and node_count(repo) >= stamp.get("nodes", 0) > 0
    )
    return stamp if fresh else {}


def node_count(repo: Path) -> int:
    """Nodes in the memory, read straight from the file (0 when there is none)."""
    import sqlite3

    path = repo / ".nexusmem" / "memory.db"
    if not path.exists():
        return 0
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(con.execute("select count(*) from nodes").fetchone()[0])
    except sqlite3.DatabaseError:
        return 0
    finally:
        con.close()


def write_stamp(commits: int, seed: int, stamp: dict[str, Any]) -> None:
    stamp_path(commits, seed).write_text(json.dumps(stamp, indent=1))


def full_sync(commits: int, seed: int, regen: bool) -> dict[str, Any]:
    """Sync with every commit's patches read (maxCommits = commits): once, then cached."""
    stamp = {} if regen else read_stamp(commits, seed)
    if stamp:
        log(f"  all-diffs memory of {commits:,} commits: cached ({stamp_path(commits, seed).name})")
        return stamp
    repo = fresh_clone(commits, seed, f"full-{commits}-s{seed}")
    home = fresh_home()
    env = nexus_env(home)
    try:
        run([NEXUSMEM, "init", "-C", str(repo)], env)
        set_max_commits(repo, commits)
        log(f"  all-diffs sync of {commits:,} commits ({load()}) ...")
        first = measured(sync_cmd(repo), env)
        st = status(repo, env)
    finally:
        drop_home(home)
    stamp = {
        "head": head(ensure_repo(commits, seed)),
        "gen_version": gen_repo.GEN_VERSION,
        "seconds": first["seconds"],
        "tree_peak": first["tree_maxrss_kb"] / 1024,
        "self_peak": first["self_hwm_kb"] / 1024,
        "nodes": st["nodes"],
        "by_kind": st["by_kind"],
        "size": db_size(repo),
        "load": load(),
    }
    write_stamp(commits, seed, stamp)
    log(f"    {first['seconds']:.0f}s, {st['nodes']:,} nodes, {stamp['size'] / MB:.0f} MB")
    return stamp


def print_sync(results: list[SyncRuns], full: dict[int, dict[str, Any]], new: int) -> None:
    print("## (1) Sync against history length\n")
    if results:
        print_runs(results, new)
    if full:
        print_full(full)


def print_runs(results: list[SyncRuns], new: int) -> None:
    runs = len(results[0].first)
    print(
        f"Median of {runs} run(s); each sync timed as a whole process with `--no-embed`; "
        "peak RSS from a fresh helper per sync (the sync and its git children, and the Python "
        f"process alone). {load()} at the end.\n"
    )
    rows = []
    for r in results:
        rows.append(
            [
                f"{r.commits:,}",
                f"{r.nodes:,}",
                f"{median(r.first):.1f}",
                f"{median(r.noop):.2f}",
                f"{median(r.incremental):.2f}",
                f"{r.size / MB:.0f}",
                f"{median(r.tree_peak):.0f}",
                f"{median(r.self_peak):.0f}",
                f"{r.git_peak:.0f} ({r.git_anon:.0f})",
            ]
        )
    print(
        table(
            [
                "commits",
                "nodes",
                "first sync (s)",
                "nothing new (s)",
                f"+{new} commits (s)",
                "db size (MB)",
                "peak RSS (MB)",
                "python alone (MB)",
                "git log alone (anon) (MB)",
            ],
            rows,
        )
    )
    print()
    if len(results) > 1:
        lo, hi = results[0], results[-1]
        ratio = median(hi.self_peak) / median(lo.self_peak)
        print(
            f"Python's peak at {hi.commits:,} commits is {ratio:.2f}x its peak at "
            f"{lo.commits:,} ({mark(ratio < 1.25)}: memory must not grow with history; "
            "git's own walk is the rest of the tree's peak: the pack it maps, which is page "
            "cache, and its anonymous memory in brackets, its table of the objects it read).\n"
        )


def print_full(full: dict[int, dict[str, Any]]) -> None:
    print("With `sources.diff.maxCommits` raised to the history length (every patch read):\n")
    print(
        table(
            [
                "commits",
                "nodes",
                "file diffs",
                "first sync (s)",
                "db size (MB)",
                "peak RSS (MB)",
                "python alone (MB)",
                "measured",
            ],
            [
                [
                    f"{n:,}",
                    f"{s['nodes']:,}",
                    f"{s['by_kind'].get('file_diff', 0):,}",
                    f"{s['seconds']:.0f}",
                    f"{s['size'] / MB:.0f}",
                    f"{s['tree_peak']:.0f}",
                    f"{s['self_peak']:.0f}",
                    s["load"],
                ]
                for n, s in sorted(full.items())
            ],
        )
    )
    print()


# ------------------------------------------------------------------------------ (2) big memory


async def fill_big(repo: Path, target: int, seed: int) -> dict[str, Any]:
    import scale_fill

    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine

    home = fresh_home()
    try:
        started = time.perf_counter()
        async with open_engine(Settings(home=home), repo) as engine:
            report = await scale_fill.fill(engine, target, seed)
        return {
            "added": report.added,
            "links": report.links,
            "seconds": time.perf_counter() - started,
        }
    finally:
        drop_home(home)


def big_memory(commits: int, target: int, seed: int, stamp: dict[str, Any]) -> Path:
    """The all-diffs memory of ``commits`` commits (``stamp``: its record), topped up to
    ``target`` nodes once (cached)."""
    repo = SCALE / f"full-{commits}-s{seed}"
    if stamp.get("filled", {}).get("target") != target or node_count(repo) != target:
        log(f"  topping up to {target:,} nodes ...")
        filled = asyncio.run(fill_big(repo, target, seed))
        stamp["filled"] = {"target": target, **filled, "size": db_size(repo)}
        write_stamp(commits, seed, stamp)
        log(f"    {filled}")
    return repo


# ------------------------------------------------------------------------------ queries


@dataclass
class Memory:
    """One synced memory that queries run against."""

    label: str
    repo: Path
    nodes: int = 0
    size: int = 0
    vector_size: int = 0  # the database with its vectors
    vector_bytes: int = 0  # of which the vectors' tables
    bm25: list[Query] = field(default_factory=list)
    hybrid: list[Query] = field(default_factory=list)
    knn: Knn | None = None
    stages: dict[str, list[float]] = field(default_factory=dict)
    agreement: Agreement | None = None
    lists: Any = None  # wordtops.Refreshed: the common words' lists, made before the queries
    diff_share: float = 0.0  # of the rows the queries hit, file diffs


def samples(queries: list[Query]) -> list[float]:
    return [s for q in queries for s in q.samples]


def copies(queries: list[Query]) -> list[Query]:
    return [Query(q.category, q.text) for q in queries]


def time_queries(
    memory: Memory, base: list[Query], rounds: int, seed: int, vector: bool, **settings: Any
) -> list[Query]:
    queries = copies(base)
    count_fts_rows(memory.repo, queries)
    home = fresh_home()
    try:
        asyncio.run(in_process(memory.repo, home, queries, rounds, seed, vector=vector, **settings))
    finally:
        drop_home(home)
    states = {q.vector for q in queries}
    if vector and states != {"used"}:
        raise RuntimeError(f"{memory.label}: the vector arm was not used: {states}")
    return queries


def diff_share(repo: Path, queries: list[Query]) -> float:
    """Of all the rows the queries' MATCH expressions hit, the share that are file diffs."""
    import sqlite3

    from nexusmem_core.retrieval.query import fts_match

    con = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    hits = diffs = 0
    try:
        for q in queries:
            match = fts_match(q.text)
            if match is None:
                continue
            total, of_diffs = con.execute(
                "select count(*), coalesce(sum(n.kind = 'file_diff'), 0) from nodes_fts f "
                "join nodes n on n.seq = f.rowid where nodes_fts match ?",
                (match,),
            ).fetchone()
            hits, diffs = hits + total, diffs + of_diffs
    finally:
        con.close()
    return diffs / hits if hits else 0.0


async def stage_times(repo: Path, base: list[Query], rounds: int) -> dict[str, list[float]]:
    """Per query, the steps ``handlers.search`` takes, timed one by one: the term counts, the
    whole word arm (counts, then the AND or OR its plan picks), the chains lookup, and the
    whole search (the rest is bodies and packing)."""
    from nexusmem_core import handlers
    from nexusmem_core.chains import follow
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine
    from nexusmem_core.retrieval.query import query_terms
    from nexusmem_core.retrieval.search import CANDIDATES
    from nexusmem_core.retrieval.words import word_candidates
    from nexusmem_core.store.fts import term_counts

    out: dict[str, list[float]] = {"terms": [], "words": [], "follow": [], "search": []}
    home = fresh_home()
    try:
        async with open_engine(Settings(home=home), repo, read_only=True) as engine:
            db, pid = engine.db, engine.project_id
            for r in range(rounds + 1):
                for q in base:
                    terms = query_terms(q.text)
                    t0 = time.perf_counter()
                    await term_counts(db, terms)
                    t1 = time.perf_counter()
                    found = await word_candidates(db, terms, pid, CANDIDATES)
                    t2 = time.perf_counter()
                    await follow(db, found)
                    t3 = time.perf_counter()
                    await handlers.search(engine, q.text, vector=False)
                    t4 = time.perf_counter()
                    if r:  # the first round warms the caches
                        for key, dt in zip(out, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
                            out[key].append(dt * 1000)
    finally:
        drop_home(home)
    return out


@dataclass
class Agreement:
    overlap: list[float] = field(default_factory=list)  # per query: top-10 shared with exact
    planned: list[float] = field(default_factory=list)  # search ms, the word arm's plan
    exact: list[float] = field(default_factory=list)  # search ms, every hit scored
    worst: list[tuple[float, str]] = field(default_factory=list)


async def exact_agreement(repo: Path, base: list[Query], rounds: int) -> Agreement:
    """What retrieval/words.py's plan costs in ranking and buys in time: each query's top 10
    with the plan, and with every hit of the OR scored (the plan's bounds lifted), timed in
    alternation on one engine so both see the same machine."""
    from nexusmem_core import handlers
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine
    from nexusmem_core.retrieval import words
    from nexusmem_core.retrieval.query import MAX_TERMS

    planned = (words.EXACT_HITS, words.MAX_MATCHED)
    exact = (10**12, MAX_TERMS)
    out = Agreement()
    home = fresh_home()
    try:
        async with open_engine(Settings(home=home), repo, read_only=True) as engine:
            for r in range(rounds + 1):
                for q in base:
                    tops = []
                    for mode, (bound, longest) in (("planned", planned), ("exact", exact)):
                        words.EXACT_HITS, words.MAX_MATCHED = bound, longest
                        t = time.perf_counter()
                        response = await handlers.search(engine, q.text, vector=False)
                        if r:
                            getattr(out, mode).append((time.perf_counter() - t) * 1000)
                        tops.append([x.id for x in response.results[:10]])
                    if r == 0 and tops[1]:
                        shared = len(set(tops[0]) & set(tops[1])) / len(tops[1])
                        out.overlap.append(shared)
                        out.worst.append((shared, q.text))
    finally:
        words.EXACT_HITS, words.MAX_MATCHED = planned
        drop_home(home)
    out.worst = sorted(out.worst)[:3]
    return out


# ------------------------------------------------------------------------------ (3) vectors


async def add_vectors(repo: Path, model: str, dims: int, seed: int) -> float:
    """A random unit vector for every node that has none, stored as a sync stores them."""
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine
    from nexusmem_core.store import sketches, vectors

    rng = random.Random(seed)
    home = fresh_home()
    spent = 0.0
    try:
        async with open_engine(Settings(home=home), repo) as engine:
            db = engine.db
            if not db.vectors.loaded:
                raise RuntimeError(f"sqlite-vec did not load: {db.vectors.reason}")
            async with db.transaction():  # vectors of a memory made before schema v9 / v10
                t = time.perf_counter()
                if sketched := await vectors.backfill_sketches(db):
                    log(f"    sketched {sketched:,} vectors in {time.perf_counter() - t:.0f}s")
                t = time.perf_counter()
                if paged := await sketches.refresh_pages(db):
                    log(f"    {paged:,} sign pages in {time.perf_counter() - t:.1f}s")
            last = 0
            while True:
                rows = await db.fetchall(
                    "select n.seq, n.project_id, n.content_hash from nodes n left join "
                    "embeddings e on e.seq = n.seq where e.seq is null and n.seq > ? "
                    "order by n.seq limit ?",
                    (last, VECTOR_BATCH),
                )
                if not rows:
                    async with db.transaction():  # as sync does after embedding
                        await sketches.refresh_pages(db)
                    return spent
                last = rows[-1][0]
                items = [vectors.Pending(seq, pid, "", digest) for seq, pid, digest in rows]
                batch = [unit_vector(rng, dims) for _ in items]
                t = time.perf_counter()
                async with db.transaction():
                    await vectors.store(db, model, items, batch)
                spent += time.perf_counter() - t
                if last // VECTOR_BATCH % 50 == 0:
                    log(f"    vectors up to seq {last:,}")
    finally:
        drop_home(home)


@dataclass
class Knn:
    """``vectors.knn`` alone, as the vector arm calls it (on the second connection), for the
    same random query vectors: the shipped path (approximate past ``sketches.EXACT_UP_TO``
    vectors) against sqlite-vec's exact scan, in alternation, and how many of the exact
    nearest the shipped path returns."""

    shipped: list[float] = field(default_factory=list)  # ms
    exact: list[float] = field(default_factory=list)  # ms
    recall10: list[float] = field(default_factory=list)
    recall100: list[float] = field(default_factory=list)
    first_read: float = 0.0  # s: the process's first read of the sketch
    approximate: bool = False


async def knn_times(repo: Path, dims: int, count: int, seed: int) -> Knn:
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine
    from nexusmem_core.retrieval.search import CANDIDATES
    from nexusmem_core.store import sketches, vectors

    rng = random.Random(seed)
    home = fresh_home()
    out = Knn()
    bound = sketches.EXACT_UP_TO
    try:
        async with open_engine(Settings(home=home), repo, read_only=True) as engine:
            db = await engine.db.beside()
            t = time.perf_counter()
            out.approximate = await sketches.current(db, wait=True) is not None
            out.first_read = time.perf_counter() - t
            for i in range(count + 2):
                q = unit_vector(rng, dims)
                found = {}
                for mode, limit in (("shipped", bound), ("exact", 10**12)):
                    sketches.EXACT_UP_TO = limit
                    t = time.perf_counter()
                    hits = await vectors.knn(db, engine.project_id, q, CANDIDATES)
                    if i >= 2:  # two warm-up queries
                        getattr(out, mode).append((time.perf_counter() - t) * 1000)
                    found[mode] = [seq for seq, _ in hits]
                if i >= 2:
                    got, want = found["shipped"], found["exact"]
                    out.recall10.append(len(set(got[:10]) & set(want[:10])) / 10)
                    out.recall100.append(len(set(got) & set(want)) / max(1, len(want)))
    finally:
        sketches.EXACT_UP_TO = bound
        drop_home(home)
    return out


def vector_bytes(repo: Path) -> int:
    """Bytes of the pages the vector tables, their sign pages and bookkeeping use (dbstat)."""
    import sqlite3

    con = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    try:
        (total,) = con.execute(
            "select coalesce(sum(pgsize), 0) from dbstat "
            "where name like 'nodes_vec%' or name like 'embeddings%' or name like 'vec_%'"
        ).fetchone()
    finally:
        con.close()
    return int(total)


def ensure_vectors(memory: Memory, model: str, dims: int, seed: int) -> None:
    before = db_size(memory.repo)
    log(f"  vectors for {memory.label} ({load()}) ...")
    spent = asyncio.run(add_vectors(memory.repo, model, dims, seed))
    memory.vector_size = db_size(memory.repo)
    memory.vector_bytes = vector_bytes(memory.repo)
    if spent:
        log(f"    stored in {spent:.0f}s; {before / MB:.0f} -> {memory.vector_size / MB:.0f} MB")


# ------------------------------------------------------------------------------ output


def pcts(values: list[float]) -> str:
    return " / ".join(f"{percentile(values, p):.1f}" for p in (50, 95, 99))


def print_big(memory: Memory, stamp: dict[str, Any], rounds: int) -> None:
    print(f"## (2) Search on {memory.nodes:,} nodes (BM25)\n")
    filled = stamp.get("filled", {})
    added = ", ".join(f"{v:,} {k}" for k, v in filled.get("added", {}).items())
    print(
        f"The all-diffs memory of {memory.label} ({stamp['nodes']:,} nodes from the sync), "
        f"topped up with {added} ({filled.get('links', 0):,} failure -> fix links) in "
        f"{filled.get('seconds', 0):.0f}s. Database file {memory.size / MB:,.0f} MB "
        f"(with an earlier run's vectors, if any: part (4) gives the size without them). "
        f"`handlers.search` in process, engine opened once read-only, BM25 only; "
        f"{len(memory.bm25)} queries (bench_query.py's, drawn from the 10k memory) x {rounds} "
        f"rounds. {load()}.\n"
    )
    values = samples(memory.bm25)
    p50 = percentile(values, 50)
    cpu = [c for q in memory.bm25 for c in q.cpu]
    print(
        table(
            [
                "searches",
                "p50 / p95 / p99 (ms)",
                "CPU p50 / p95 / p99 (ms)",
                f"target p50 < {TARGET_P50_MS:g} ms",
            ],
            [[len(values), pcts(values), pcts(cpu), mark(p50 < TARGET_P50_MS)]],
        )
    )
    print()
    print(shapes_table(memory.bm25))
    print("\nSlowest queries (median over rounds):\n")
    print(slowest_table(memory.bm25))
    if memory.stages:
        print("\nWhere a search's time goes (each step timed alone, same queries, ms):\n")
        st = memory.stages
        rest = [s - b - c for s, b, c in zip(st["search"], st["words"], st["follow"], strict=True)]
        rows = [
            ["`term_counts` (each term's hits, probed in four parts)", pcts(st["terms"])],
            ["`word_candidates` (counts, then bm25 top 300 of the AND or OR)", pcts(st["words"])],
            ["`follow` (failure -> fix chains)", pcts(st["follow"])],
            ["the rest: priors, `load_bodies`, packing", pcts(rest)],
            ["whole `handlers.search`", pcts(st["search"])],
        ]
        print(table(["step", "p50 / p95 / p99 (ms)"], rows))
        by_kind = ", ".join(f"{v:,} {k}" for k, v in stamp["by_kind"].items())
        print(
            f"\nFTS5 scores every row a MATCH hits, and {memory.diff_share:.0%} of the rows these "
            f"queries hit are file diffs (the sync wrote {by_kind}).\n"
        )
    if memory.agreement:
        print_agreement(memory.agreement)
    print()


def print_agreement(ag: Agreement) -> None:
    from nexusmem_core.retrieval import words

    print(
        "\nThe word arm's plan against exact BM25 (retrieval/words.py: past "
        f"{words.EXACT_HITS:,} hits a single word read from its list, several words the rows "
        f"holding every term first, at most {words.MAX_MATCHED} terms matched), same queries, "
        "timed in alternation:\n"
    )
    shared = sum(ag.overlap) / len(ag.overlap) if ag.overlap else 0.0
    rows = [
        ["every hit scored (exact)", pcts(ag.exact), "1.00"],
        ["the plan (shipped)", pcts(ag.planned), f"{shared:.2f}"],
    ]
    print(table(["search", "p50 / p95 / p99 (ms)", "top 10 shared with exact"], rows))
    worst = "; ".join(f"{v:.1f} for {t[:40]!r}" for v, t in ag.worst)
    print(f"\nLeast shared: {worst}.")


def print_knn(memories: list[Memory], dims: int) -> None:
    """The vector arm's scan: sqlite-vec's exact one against the shipped path."""
    from nexusmem_core.store import sketches

    done = [m for m in memories if m.knn]
    if not done:
        return
    print(
        f"### k-NN: exact scan against the shipped path ({dims} dims, median of "
        f"{len(done[0].knn.exact) if done[0].knn else 0} random query vectors)\n\n"
        f"`vectors.knn` for k = 100 on the second connection, as the vector arm calls it. Up to "
        f"{sketches.EXACT_UP_TO:,} vectors the shipped path is sqlite-vec's exact scan; beyond, "
        f"sign bits scanned in memory and the nearest {sketches.SHARE:.0%} rescored from int8 "
        "copies (store/sketches.py). Recall is against the exact scan, on random unit vectors: "
        "the worst case for sign bits (real all-minilm vectors keep 96% of the top 10 at 2%; "
        "README).\n"
    )
    rows = []
    for m in done:
        k = m.knn
        assert k is not None
        rows.append(
            [
                m.label,
                f"{m.nodes:,}",
                f"{median(k.exact):.1f}",
                f"{median(k.shipped):.1f}",
                "sketch" if k.approximate else "exact",
                f"{mean(k.recall10):.2f}",
                f"{mean(k.recall100):.2f}",
                f"{k.first_read:.2f}",
            ]
        )
    print(
        table(
            [
                "memory",
                "vectors",
                "exact p50 (ms)",
                "shipped p50 (ms)",
                "shipped path",
                "recall@10",
                "recall@100",
                "first read of the sketch (s)",
            ],
            rows,
        )
    )
    print()


def print_scaling(memories: list[Memory], dims: int) -> None:
    print("## (4) Query latency against size\n")
    print(
        f"Same queries at every size, in process, {load()} at the end. Hybrid: a random unit "
        f"vector of {dims} dims per node, the query embedded by the test suite's fake Ollama "
        "over HTTP on 127.0.0.1; k-NN is `vectors.knn` alone, as shipped (below).\n"
    )
    rows = []
    for m in memories:
        bm25, hybrid = samples(m.bm25), samples(m.hybrid)
        rows.append(
            [
                m.label,
                f"{m.nodes:,}",
                f"{(m.vector_size - m.vector_bytes if m.vector_size else m.size) / MB:,.0f}",
                pcts(bm25),
                f"{median([c for q in m.bm25 for c in q.cpu]):.1f}",
                mark(percentile(bm25, 50) < TARGET_P50_MS),
                pcts(hybrid) if hybrid else "-",
                f"{median([c for q in m.hybrid for c in q.cpu]):.1f}" if hybrid else "-",
                f"{median(m.knn.shipped):.1f}" if m.knn else "-",
                f"{m.vector_bytes / MB:,.0f}" if m.vector_size else "-",
                f"{m.lists.tokens} in {m.lists.seconds:.1f} s" if m.lists else "-",
            ]
        )
    print(
        table(
            [
                "memory",
                "nodes",
                "db without vectors (MB)",
                "BM25 p50 / p95 / p99 (ms)",
                "CPU p50",
                f"p50 < {TARGET_P50_MS:g} ms",
                "hybrid p50 / p95 / p99 (ms)",
                "CPU p50",
                "k-NN p50 (ms)",
                "vectors (MB)",
                "word lists made",
            ],
            rows,
        )
    )
    print(
        "\nWord lists: the best rows of every word in 8,000 rows or more, which a one-word "
        "query reads instead of scoring them all (store/wordtops.py); made by the first sync "
        "of a memory this size, in the time shown, and kept up by later syncs.\n"
    )


# ------------------------------------------------------------------------------ main


def query_memories(args: argparse.Namespace, big: Path | None) -> list[Memory]:
    """The default-config memories of the query sizes, and the big one: synced if needed."""
    memories = []
    for n in args.query_sizes:
        repo = SCALE / f"repo-{n}"
        if not (repo / ".git").exists():
            repo = fresh_clone(n, args.seed, f"repo-{n}")
        memories.append(Memory(f"{n // 1000}k commits", repo))
    if big is not None:
        memories.append(Memory(f"{args.big // 1000}k commits + fill", big))
    home = fresh_home()
    try:
        for m in memories:
            st = ready(m.repo, nexus_env(home))
            m.nodes, m.size = st["nodes"], db_size(m.repo)
            log(f"word lists of {m.label} ...")
            m.lists = asyncio.run(build_word_lists(m.repo))
    finally:
        drop_home(home)
    return memories


async def build_word_lists(repo: Path) -> Any:
    """The common words' best rows (store/wordtops.py), made anew and timed: what the first
    sync of a memory this size (or the first after the upgrade) spends on them."""
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine
    from nexusmem_core.store import wordtops

    home = fresh_home()
    try:
        async with open_engine(Settings(home=home), repo) as engine:
            async with engine.db.transaction():
                await engine.db.execute("delete from word_tops")
                await engine.db.execute("delete from word_top_tokens")
                await engine.db.execute("update word_top_state set upto = 0")
            return await wordtops.refresh(engine.db, force=True)
    finally:
        drop_home(home)


def ready(repo: Path, env: dict[str, str]) -> dict[str, Any]:
    """The memory's status, after a sync if it has none yet, is behind HEAD, or was written by
    an older schema. Never deleted and rebuilt (bench_query's way): the big memory took most
    of an hour to make, and a sync migrates it in place."""
    if not (repo / ".nexusmem" / "memory.db").exists():
        run([NEXUSMEM, "init", "-C", str(repo)], env)
    proc = subprocess.run(
        [NEXUSMEM, "status", "-C", str(repo), "--json"], env=env, capture_output=True, text=True
    )
    st = json.loads(proc.stdout) if proc.returncode == 0 else {}
    if not st.get("nodes") or st.get("cursor") != st.get("head"):
        log(f"syncing {repo.name} ...")
        run(sync_cmd(repo), env)
        st = status(repo, env)
    return st


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 30_000, 100_000])
    parser.add_argument("--runs", type=int, default=3, help="default-config syncs per size")
    parser.add_argument("--new-commits", type=int, default=10, help="for the incremental sync")
    parser.add_argument("--big", type=int, default=100_000, help="commits of the big memory")
    parser.add_argument("--nodes", type=int, default=500_000, help="nodes of the big memory")
    parser.add_argument(
        "--query-sizes",
        type=int,
        nargs="+",
        default=[10_000, 100_000],
        help="default-config memories queried beside the big one",
    )
    parser.add_argument("--rounds", type=int, default=10, help="timed passes over the queries")
    parser.add_argument("--dims", type=int, default=384, help="vector size (all-minilm: 384)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--regen", action="store_true", help="rebuild the cached big memory")
    parser.add_argument(
        "--skip",
        nargs="+",
        default=[],
        choices=["sync", "full", "big", "hybrid"],
        help="leave parts out: default-config syncs, all-diffs syncs, the big memory, vectors",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    log(f"{machine()}; {load()}")
    print(f"# bench_scale\n\n{machine()}; {load()} at the start.\n")

    results, full = [], {}
    if "sync" not in args.skip:
        for n in args.sizes:
            results.append(bench_sync_size(n, args.runs, args.new_commits, args.seed))
    if "full" not in args.skip:
        full = {n: full_sync(n, args.seed, args.regen) for n in args.sizes}
    if results or full:
        print_sync(results, full, args.new_commits)

    big = None
    if "big" not in args.skip:
        stamp = full.get(args.big) or full_sync(args.big, args.seed, args.regen)
        big = big_memory(args.big, args.nodes, args.seed, stamp)
    memories = query_memories(args, big)
    base = build_queries(memories[0].repo, args.seed)
    for m in memories:
        log(f"BM25 on {m.label} ({m.nodes:,} nodes; {load()}) ...")
        m.bm25 = time_queries(m, base, args.rounds, args.seed, vector=False)
    if big is not None:
        memory = memories[-1]
        memory.stages = asyncio.run(stage_times(memory.repo, base, max(3, args.rounds // 2)))
        memory.diff_share = diff_share(memory.repo, base)
        memory.agreement = asyncio.run(exact_agreement(memory.repo, base, 3))
        print_big(memory, read_stamp(args.big, args.seed), args.rounds)

    if "hybrid" not in args.skip:
        sys.path.insert(0, str(ROOT / "tests"))
        from fake_ollama import FakeOllama

        with FakeOllama() as fake:
            fake.dims = args.dims
            for m in memories:
                ensure_vectors(m, fake.model, args.dims, args.seed)
                log(f"hybrid on {m.label} ({load()}) ...")
                m.knn = asyncio.run(knn_times(m.repo, args.dims, 20, args.seed))
                m.hybrid = time_queries(
                    m,
                    base,
                    args.rounds,
                    args.seed,
                    vector=True,
                    warm=True,  # as an MCP server searches once it has read the sketch
                    ollama_host=fake.url,
                    embed_model=fake.model,
                )
    print_scaling(memories, args.dims)
    print_knn(memories, args.dims)
    log(f"total benchmark time {time.perf_counter() - started:.0f}s; {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
