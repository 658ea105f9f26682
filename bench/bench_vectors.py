"""Vector search: sqlite-vec k-NN latency at 10k/100k vectors, and embedding with a real model.

    .venv/bin/python bench/bench_vectors.py [--sizes 10000 100000] [--dims 384 768]
        [--queries 50] [--commits 5000] [--embed-limit 1000] [--process-runs 10]
        [--inproc-queries 20] [--port 11435] [--skip knn embed]

(1) k-NN, no model needed: a fresh database (``open_database``) in a temporary directory gets
N random unit vectors stored with ``vectors.store`` (batches of 1,000, one transaction each,
project "p"); then ``vectors.knn(db, "p", q, 100)`` is timed for ``--queries`` random queries.
Reported: insert time, database size, p50/p95/p99, and the same SQL on a plain synchronous
connection (what aiosqlite adds).
(2) Embedding with a real model: the ollama-shim (/work/shared/tools/ollama-shim, all-MiniLM-L6-v2
as Ollama's ``all-minilm``) is started on ``--port`` (never the default 11434), a clone of the
cached ``--commits`` repository is synced without embedding, then ``nexusmem sync --embed-limit N
--json`` is timed: nodes embedded per second, next to the shim alone on the same texts. Then
``nexusmem query`` as a process and ``handlers.search`` in process, hybrid against BM25 only,
and a breakdown of the query-embedding round trip. ``NEXUSMEM_HOME`` is a temporary directory
and the cached repository under ``bench/out/`` is never written to (the clone is).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from _common import (
    NEXUSMEM,
    PYTHON,
    ROOT,
    bench_env,
    drop_home,
    ensure_repo,
    fresh_home,
    machine,
    median,
    percentile,
    run,
    table,
)

sys.path.insert(0, str(ROOT))

SHIM_DIR = Path("/work/shared/tools/ollama-shim")
SHIM_MODEL = "all-minilm"
BATCH = 1000  # vectors per store() call and transaction
BATCH_EMBED = 32  # texts per /api/embed request: the default embed.batch
K = 100  # what handlers.search asks for (CANDIDATES)
MB = 1024 * 1024


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ms(seconds: float) -> float:
    return seconds * 1000


def pcts(values: list[float]) -> tuple[float, float, float]:
    return percentile(values, 50), percentile(values, 95), percentile(values, 99)


# ------------------------------------------------------------------------------ (1) k-NN


def unit_vector(R: random.Random, dims: int) -> list[float]:
    """A random direction (uniform in the cube, normalised: fine for timing a full scan)."""
    v = [R.random() - 0.5 for _ in range(dims)]
    norm = math.sqrt(sum(x * x for x in v))
    return [x / norm for x in v]


def raw_knn(path: Path, queries: list[list[float]], dims: int) -> list[float]:
    """The same k-NN SQL on a plain synchronous connection: the floor under aiosqlite."""
    import sqlite_vec  # type: ignore[import-untyped]

    from nexusmem_core.store.db import sqlite_module

    con = sqlite_module().connect(str(path))
    try:
        con.enable_load_extension(True)
        sqlite_vec.load(con)
        sql = (
            "select rowid, distance from nodes_vec where embedding match ? and k = ? "
            "and project_id = ? order by distance"
        )
        samples = []
        for q in queries[:3] + queries:  # three warm-up queries first
            blob = struct.pack(f"{dims}f", *q)
            t = time.perf_counter()
            con.execute(sql, (blob, K, "p")).fetchall()
            samples.append(ms(time.perf_counter() - t))
        return samples[3:]
    finally:
        con.close()


async def knn_case(n: int, dims: int, nqueries: int, seed: int) -> dict[str, Any]:
    from nexusmem_core.store import sketches, vectors
    from nexusmem_core.store.db import open_database

    # sqlite-vec's exact scan at every size (the shipped path turns approximate past
    # ``sketches.EXACT_UP_TO`` vectors: bench_scale.py compares the two).
    sketches.EXACT_UP_TO = 10**12

    R = random.Random(seed * 1000 + dims)
    tmp = Path(tempfile.mkdtemp(prefix="nexusmem-bench-vec-"))
    path = tmp / "memory.db"
    try:
        insert = 0.0
        keep: list[list[float]] = []  # a few stored vectors, to check the search finds them
        async with open_database(path) as db:
            if not db.vectors.loaded:
                raise RuntimeError(f"sqlite-vec did not load: {db.vectors.reason}")
            for start in range(0, n, BATCH):
                batch = [unit_vector(R, dims) for _ in range(min(BATCH, n - start))]
                items = [vectors.Pending(start + i + 1, "p", "", "h") for i in range(len(batch))]
                keep.append(batch[0])
                t = time.perf_counter()
                async with db.transaction():
                    await vectors.store(db, "bench", items, batch)
                insert += time.perf_counter() - t
            queries = [unit_vector(R, dims) for _ in range(nqueries)]
            for q in queries[:3]:  # warm-up: page cache
                await vectors.knn(db, "p", q, K)
            samples = []
            for q in queries:
                t = time.perf_counter()
                hits = await vectors.knn(db, "p", q, K)
                samples.append(ms(time.perf_counter() - t))
                if len(hits) != K:
                    raise RuntimeError(f"knn returned {len(hits)} rows, not {K}")
            # Sanity: a stored vector is its own nearest neighbour.
            probe = len(keep) // 2
            (seq, dist), *_ = await vectors.knn(db, "p", keep[probe], K)
            if seq != probe * BATCH + 1 or dist > 1e-4:
                raise RuntimeError(f"knn did not find a stored vector first: {seq}, {dist}")
            other = await vectors.knn(db, "other", queries[0], K)
        size = sum(f.stat().st_size for f in tmp.iterdir() if f.name.startswith("memory.db"))
        raw = raw_knn(path, queries, dims)
        return {
            "n": n,
            "dims": dims,
            "insert": insert,
            "size": size,
            "samples": samples,
            "raw": raw,
            "other_partition": len(other),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def vec_build_flags() -> str:
    import sqlite_vec  # type: ignore[import-untyped]

    from nexusmem_core.store.db import sqlite_module

    con = sqlite_module().connect(":memory:")
    try:
        con.enable_load_extension(True)
        sqlite_vec.load(con)
        (debug,) = con.execute("select vec_debug()").fetchone()
    finally:
        con.close()
    info = dict(
        line.split(":", 1) for line in str(debug).splitlines() if ":" in line
    )  # Version, Date, Commit, Build flags
    version = info.get("Version", "?").strip()
    flags = info.get("Build flags", "").strip() or "none (no AVX/NEON distance kernels)"
    return f"sqlite-vec {version}, build flags: {flags}"


def part_knn(args: argparse.Namespace) -> None:
    results = []
    for dims in args.dims:
        for n in args.sizes:
            log(f"k-NN: {n:,} vectors of {dims} dims ...")
            r = asyncio.run(knn_case(n, dims, args.queries, args.seed))
            p50, p95, p99 = pcts(r["samples"])
            log(f"  insert {r['insert']:.1f}s, p50 {p50:.1f} ms")
            results.append(r)

    print("## Vector k-NN (sqlite-vec, exact)\n")
    print(
        f"{machine()}; {vec_build_flags()}. One `vec0` table partitioned by project, cosine "
        f"distance, k = {K}; random unit vectors, all in project `p`; {args.queries} queries "
        f"after 3 warm-up ones. Insert: `vectors.store` in batches of {BATCH:,}, one "
        "transaction each (vector generation not counted).\n"
    )
    rows = []
    for r in results:
        p50, p95, p99 = pcts(r["samples"])
        raw50 = median(r["raw"])
        rows.append(
            [
                f"{r['n']:,}",
                str(r["dims"]),
                f"{r['insert']:.2f}",
                f"{r['n'] / r['insert']:,.0f}",
                f"{r['size'] / MB:.1f}",
                f"{p50:.1f}",
                f"{p95:.1f}",
                f"{p99:.1f}",
                f"{raw50:.1f}",
                f"{1000 * p50 / r['n']:.2f}",
            ]
        )
    print(
        table(
            [
                "vectors",
                "dims",
                "insert (s)",
                "insert (vec/s)",
                "db size (MB)",
                "knn p50 (ms)",
                "knn p95 (ms)",
                "knn p99 (ms)",
                "plain sqlite p50 (ms)",
                "µs per vector",
            ],
            rows,
        )
    )
    print(
        "\n(plain sqlite: the same SQL on a synchronous connection, without aiosqlite. "
        "vec0 scans every vector of the partition, so latency grows linearly with N.)\n"
    )


# ------------------------------------------------------------------------------ (2) the model


def port_free(port: int) -> bool:
    """Nothing listens there (SO_REUSEADDR, as the shim's server: TIME_WAIT does not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def http(url: str, body: dict[str, Any] | None = None, timeout: float = 60) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


class Shim:
    """The ollama-shim on a port of its own, started here and stopped here."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.port, self.log_path = port, log_path
        self.host = f"127.0.0.1:{port}"
        self.url = f"http://{self.host}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, wait: float = 180) -> None:
        log("ollama-shim: setup (builds /tmp/ollama-shim-venv once) ...")
        cmd = subprocess.run(
            ["bash", str(SHIM_DIR / "setup.sh")], capture_output=True, text=True, check=True
        ).stdout.split()
        if not port_free(self.port):
            raise RuntimeError(f"port {self.port} is taken: pass --port")
        with self.log_path.open("wb") as errors:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [*cmd, "--port", str(self.port), "--model", SHIM_MODEL],
                stdout=subprocess.DEVNULL,
                stderr=errors,
                start_new_session=True,
            )
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"ollama-shim exited: {tail}")
            try:
                http(self.url + "/api/version", timeout=2)
                log(f"ollama-shim: serving {SHIM_MODEL} on {self.url} (pid {self.proc.pid})")
                return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise RuntimeError(f"ollama-shim did not answer on {self.url} within {wait:g}s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def clone(src: Path, dest: Path) -> Path:
    """A local clone (hard-linked objects): the cached repository's memory is never touched."""
    subprocess.run(["git", "clone", "-q", "--local", str(src), str(dest)], check=True)
    return dest


def embedded_texts(repo: Path) -> list[str]:
    """The texts the sync embedded, as ``vectors.pending`` built them."""
    from nexusmem_core.store.vectors import EMBED_CHARS

    con = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "select n.title, n.body from nodes n join embeddings e on e.seq = n.seq order by n.seq"
        ).fetchall()
    finally:
        con.close()
    return [f"{t}\n{b}"[:EMBED_CHARS] for t, b in rows]


def embedded_kinds(repo: Path) -> str:
    con = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "select n.kind, count(*) from nodes n join embeddings e on e.seq = n.seq "
            "group by n.kind order by 2 desc"
        ).fetchall()
    finally:
        con.close()
    return ", ".join(f"{k} {c}" for k, c in rows)


def shim_alone(shim: Shim, texts: list[str], batch: int) -> tuple[float, int, float]:
    """Seconds the shim takes for ``texts`` in batches of ``batch``, the tokens it saw, and
    its slowest request (seconds)."""
    tokens, slowest = 0, 0.0
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        t = time.perf_counter()
        reply = http(
            shim.url + "/api/embed",
            {"model": SHIM_MODEL, "input": texts[start : start + batch]},
            timeout=600,
        )
        slowest = max(slowest, time.perf_counter() - t)
        tokens += int(reply.get("prompt_eval_count") or 0)
    return time.perf_counter() - started, tokens, slowest


def pick_queries(repo: Path, count: int, seed: int) -> list[str]:
    """Natural-language queries from commit subjects (their scope prefix dropped)."""
    con = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    try:
        titles = [t for (t,) in con.execute("select title from nodes where kind = 'git_commit'")]
    finally:
        con.close()
    R = random.Random(seed)
    out: list[str] = []
    for title in R.sample(titles, len(titles)):
        words = title.split(": ", 1)[-1].split()
        if len(words) >= 3:
            out.append(" ".join(words[:5]))
        if len(out) == count:
            break
    return out


def wall_ms(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = ms(time.perf_counter() - t)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-2000:]}")
    return dt


async def in_process(
    repo: Path, home: Path, shim: Shim, queries: list[str], rounds: int, embedded: int
) -> dict[str, Any]:
    """``handlers.search`` hybrid against BM25 only, and what the query embedding costs."""
    import ollama

    from nexusmem_core import handlers
    from nexusmem_core.config import Settings
    from nexusmem_core.embed.ollama import OllamaEmbedder
    from nexusmem_core.engine import open_engine
    from nexusmem_core.store import vectors

    settings = Settings(home=home, ollama_host=shim.url, embed_model=SHIM_MODEL)
    out: dict[str, Any] = {"hybrid": [], "bm25": [], "used": 0, "vector_states": set()}
    async with open_engine(settings, repo, read_only=True) as engine:
        for q in queries:  # warm-up: imports, page cache, the shim's first request
            await handlers.search(engine, q)
            await handlers.search(engine, q, vector=False)
        for _ in range(rounds):
            for q in queries:
                t = time.perf_counter()
                response = await handlers.search(engine, q)
                out["hybrid"].append(ms(time.perf_counter() - t))
                out["used"] += response.vector == "used"
                out["vector_states"].add(response.vector)
                t = time.perf_counter()
                await handlers.search(engine, q, vector=False)
                out["bm25"].append(ms(time.perf_counter() - t))

        # The parts of the vector arm, each over the same queries.
        fresh, reused, client, knn = [], [], [], []
        shared = OllamaEmbedder(shim.url, SHIM_MODEL, 5.0)
        await shared.embed(["warm up"])
        qvecs = []
        for q in queries:
            t = time.perf_counter()
            # What handlers._semantic does on every search: engine.embedder() builds a new
            # OllamaEmbedder, so a new ollama.AsyncClient (an httpx client) and a TCP probe.
            (vec,) = await engine.embedder(for_query=True).embed([q])  # type: ignore[union-attr]
            fresh.append(ms(time.perf_counter() - t))
            qvecs.append(vec)
            t = time.perf_counter()
            await shared.embed([q])
            reused.append(ms(time.perf_counter() - t))
            t = time.perf_counter()
            ollama.AsyncClient(host=shim.url, timeout=5.0)
            client.append(ms(time.perf_counter() - t))
        for vec in qvecs:
            t = time.perf_counter()
            await vectors.knn(engine.db, engine.project_id, vec, K)
            knn.append(ms(time.perf_counter() - t))
    raw = []
    for q in queries:
        t = time.perf_counter()
        http(shim.url + "/api/embed", {"model": SHIM_MODEL, "input": [q]})
        raw.append(ms(time.perf_counter() - t))
    out.update(fresh=fresh, reused=reused, client=client, knn=knn, raw=raw, embedded=embedded)
    return out


def part_embed(args: argparse.Namespace) -> None:
    src = ensure_repo(args.commits, args.seed)
    home = fresh_home()
    tmp = Path(tempfile.mkdtemp(prefix="nexusmem-bench-vecrepo-"))
    shim = Shim(args.port, tmp / "ollama-shim.log")
    try:
        shim.start()
        repo = clone(src, tmp / src.name)
        env = {
            **bench_env(home),
            "OLLAMA_HOST": shim.host,
            "NEXUSMEM_EMBED_MODEL": SHIM_MODEL,
        }
        env.pop("NEXUSMEM_VECTOR", None)
        run([NEXUSMEM, "init", "-C", str(repo)], env)
        config_file = repo / ".nexusmem" / "config.json"
        config = json.loads(config_file.read_text())
        config.setdefault("embed", {})["timeoutSeconds"] = args.embed_timeout
        config_file.write_text(json.dumps(config, indent=2))
        log(f"sync {repo.name} without embedding ...")
        ingest = json.loads(
            run([NEXUSMEM, "sync", "-C", str(repo), "--no-embed", "--json"], env).stdout
        )
        status = json.loads(run([NEXUSMEM, "status", "-C", str(repo), "--json"], env).stdout)
        nodes = status["nodes"]
        log(f"  {nodes:,} nodes in {ingest['seconds']:.2f}s; embedding {args.embed_limit} ...")
        t = time.perf_counter()
        report = json.loads(
            run(
                [
                    NEXUSMEM,
                    "sync",
                    "-C",
                    str(repo),
                    "--embed-limit",
                    str(args.embed_limit),
                    "--json",
                ],
                env,
            ).stdout
        )
        wall = time.perf_counter() - t
        embedded, seconds = report["embedded"], report["seconds"]
        if report.get("vectors") != "ok" or not embedded:
            raise RuntimeError(f"the embedding pass did not run: {report.get('vectors')}")
        log(f"  embedded {embedded} in {seconds:.1f}s; the shim alone on the same texts ...")
        texts = embedded_texts(repo)
        kinds = embedded_kinds(repo)
        alone, tokens, slowest = shim_alone(shim, texts, BATCH_EMBED)
        titles = [t.split("\n", 1)[0] for t in texts]
        alone_titles, title_tokens, _ = shim_alone(shim, titles, BATCH_EMBED)

        print(f"## Embedding during sync ({SHIM_MODEL} via the ollama-shim)\n")
        print(
            f"`{src.name}` cloned ({nodes:,} nodes; ingest without embedding "
            f"{ingest['seconds']:.2f}s), then `nexusmem sync --embed-limit {args.embed_limit} "
            f"--json` (nothing new to ingest). The shim runs all-MiniLM-L6-v2 in numpy, "
            f"truncating at 256 tokens, on the same {os.cpu_count()} CPU(s). Embedded: {kinds}; "
            f"mean text {sum(map(len, texts)) / len(texts):,.0f} chars, "
            f"{tokens / len(texts):.0f} tokens.\n"
        )
        print(
            table(
                ["what", "nodes", "seconds", "nodes/s"],
                [
                    [
                        "`nexusmem sync --embed-limit` (report `seconds`)",
                        f"{embedded:,}",
                        f"{seconds:.2f}",
                        f"{embedded / seconds:.0f}",
                    ],
                    [
                        "the same, whole process",
                        f"{embedded:,}",
                        f"{wall:.2f}",
                        f"{embedded / wall:.0f}",
                    ],
                    [
                        f"shim alone, same texts, batches of {BATCH_EMBED} (the floor)",
                        f"{len(texts):,}",
                        f"{alone:.2f}",
                        f"{len(texts) / alone:.0f}",
                    ],
                    [
                        f"shim alone, their titles only ({title_tokens / len(titles):.0f} tokens)",
                        f"{len(titles):,}",
                        f"{alone_titles:.2f}",
                        f"{len(titles) / alone_titles:.0f}",
                    ],
                ],
            )
        )
        eta = nodes / (embedded / seconds)
        print(
            f"\nAt this rate all {nodes:,} nodes would take {eta / 60:.1f} min. The shim's "
            f"slowest request of {BATCH_EMBED} texts took {slowest:.1f} s; the sync's per-request "
            f"timeout (`embed.timeoutSeconds`) was raised to {args.embed_timeout} s for this run "
            "(the default is 30 s).\n"
        )

        queries = pick_queries(repo, max(args.process_runs, args.inproc_queries), args.seed)
        log(f"nexusmem query, {args.process_runs} runs each, hybrid and --no-vector ...")
        base = [NEXUSMEM, "query", "-C", str(repo)]
        check = json.loads(run([*base, "--json", queries[0]], env).stdout)
        wall_ms([*base, "--no-vector", queries[0]], env)  # warm-up
        hybrid, bm25 = [], []
        for q in queries[: args.process_runs]:
            hybrid.append(wall_ms([*base, q], env))
            bm25.append(wall_ms([*base, "--no-vector", q], env))
        imports = {
            name: median([wall_ms([PYTHON, "-c", code], env) for _ in range(5)])
            for name, code in (
                ("python -c pass", "pass"),
                ("python -c 'import ollama'", "import ollama"),
            )
        }

        log(f"handlers.search in process, {args.inproc_queries} queries ...")
        inproc = asyncio.run(
            in_process(repo, home, shim, queries[: args.inproc_queries], 1, embedded)
        )

        print("## Hybrid query against BM25 only\n")
        print(
            f"{embedded:,} of {nodes:,} nodes embedded; the vector arm reported "
            f"`{check['vector']}` for a process query and `used` for {inproc['used']}/"
            f"{len(inproc['hybrid'])} in-process ones. Queries: commit subjects' first words.\n"
        )
        rows = []
        for name, h, b in (
            (f"`nexusmem query` process ({len(hybrid)} runs)", hybrid, bm25),
            (
                f"`handlers.search` in process ({len(inproc['hybrid'])} queries)",
                inproc["hybrid"],
                inproc["bm25"],
            ),
        ):
            rows.append(
                [
                    name,
                    f"{median(h):.1f}",
                    f"{percentile(h, 95):.1f}",
                    f"{median(b):.1f}",
                    f"{percentile(b, 95):.1f}",
                    f"+{median(h) - median(b):.1f}",
                ]
            )
        print(
            table(
                [
                    "",
                    "hybrid p50 (ms)",
                    "hybrid p95 (ms)",
                    "BM25 only p50 (ms)",
                    "BM25 only p95 (ms)",
                    "vector arm costs (ms)",
                ],
                rows,
            )
        )
        print(
            "\nStart-up baselines (median of 5): "
            + ", ".join(f"{k} {v:.0f} ms" for k, v in imports.items())
            + ". A hybrid process also imports `ollama` (with httpx and pydantic), which a "
            "`--no-vector` one never does.\n"
        )

        print("### Where the vector arm's time goes (in process, p50 over the same queries)\n")
        print(
            table(
                ["step", "p50 (ms)", "p95 (ms)"],
                [
                    [name, f"{median(v):.1f}", f"{percentile(v, 95):.1f}"]
                    for name, v in (
                        (
                            "query embedding as `handlers.search` does it (new `OllamaEmbedder` "
                            "per call)",
                            inproc["fresh"],
                        ),
                        ("query embedding, one `OllamaEmbedder` reused", inproc["reused"]),
                        (
                            "`ollama.AsyncClient(...)` construction alone (an httpx client)",
                            inproc["client"],
                        ),
                        ("raw `POST /api/embed` (urllib, no client)", inproc["raw"]),
                        (f"`vectors.knn` over {embedded:,} vectors", inproc["knn"]),
                    )
                ],
            )
        )
        print()
    finally:
        shim.stop()
        drop_home(home)
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--dims", type=int, nargs="+", default=[384, 768], help="all-minilm 384, nomic 768"
    )
    parser.add_argument("--queries", type=int, default=50, help="k-NN queries per case")
    parser.add_argument("--commits", type=int, default=5000, help="cached repository to embed")
    parser.add_argument("--embed-limit", type=int, default=128, help="nodes to embed (3-7/s here)")
    parser.add_argument(
        "--embed-timeout",
        type=int,
        default=300,
        help="embed.timeoutSeconds for the sync (default config: 30)",
    )
    parser.add_argument("--process-runs", type=int, default=10)
    parser.add_argument("--inproc-queries", type=int, default=20)
    parser.add_argument("--port", type=int, default=11435, help="the shim's port (not 11434)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip", nargs="+", choices=["knn", "embed"], default=[])
    args = parser.parse_args(argv)

    started = time.perf_counter()
    log(f"load average {os.getloadavg()}")
    if "knn" not in args.skip:
        part_knn(args)
    if "embed" not in args.skip:
        part_embed(args)
    log(f"load average {os.getloadavg()}")
    log(f"total benchmark time {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
