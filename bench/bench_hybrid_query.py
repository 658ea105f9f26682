"""`nexusmem query` on a real corpus with vectors (hybrid) and without (BM25), whole processes.

    .venv/bin/python bench/bench_hybrid_query.py [--repo werkzeug] [--rounds 2] [--port 11500]

The corpus is cloned from ``../shared/corpora/`` into ``bench/out/hybrid/`` and synced once
with the ollama-shim (/work/shared/tools/ollama-shim: all-MiniLM-L6-v2 as Ollama's
``all-minilm``, on ``--port``, never the default 11434) embedding every node; that memory is
kept for the next run (embedding werkzeug takes ~5 minutes on 2 cores). Then its labelled
questions (bench/eval/real/NAME.json) are asked with ``nexusmem query`` as a user types it:
all of them hybrid (the shim reachable), then all of them BM25 (``OLLAMA_HOST`` pointing at a
closed port), ``--rounds`` times, the order of the two blocks alternating. Each block starts
with one untimed query: the settings are validated anew when ``OLLAMA_HOST`` changes (their
snapshot is keyed by the variables they read), which a user's queries do not pay one by one.
Target: hybrid p50 <= 400 ms on the largest corpus, p95 <= 2x p50.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _common import ORIGINS, OUT, ensure_corpus, machine, mark, median, percentile, table
from bench_vectors import SHIM_MODEL, Shim, log

HERE = Path(__file__).resolve().parent
NEXUSMEM = Path(sys.executable).with_name("nexusmem")
CLOSED = "127.0.0.1:9"  # nothing listens there: BM25 alone


def embedded_memory(name: str, shim: Shim, env: dict[str, str]) -> Path:
    """The corpus's clone, its memory synced with every node embedded (once; kept)."""
    clone = ensure_corpus(name, OUT / "hybrid")
    status = subprocess.run(
        [str(NEXUSMEM), "status", "--json", "-C", str(clone)],
        env=dict(env, OLLAMA_HOST=shim.host),
        capture_output=True,
        text=True,
    )
    held = json.loads(status.stdout) if status.returncode == 0 else {}
    if held.get("nodes") and held.get("embedded") == held.get("nodes"):
        return clone
    subprocess.run([str(NEXUSMEM), "init", "-C", str(clone)], env=env, capture_output=True)
    log(f"{name}: syncing with {SHIM_MODEL} embedding every node (minutes) ...")
    started = time.perf_counter()
    done = subprocess.run(
        [str(NEXUSMEM), "sync", "-q", "-C", str(clone)],
        env=dict(env, OLLAMA_HOST=shim.host),
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name}: sync failed: {done.stderr.strip()[-500:]}")
    log(f"{name}: synced and embedded in {time.perf_counter() - started:.0f} s")
    return clone


def timed(clone: Path, question: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [str(NEXUSMEM), "query", question, "-C", str(clone)],
        env=env,
        cwd=clone,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"query failed: {done.stderr.strip()[-300:]}")
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", default="werkzeug", choices=list(ORIGINS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--port", type=int, default=11500)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXUSMEM_", "OLLAMA_"))}
    env.update(NEXUSMEM_HOME=str(OUT / "hybrid" / "home"), NEXUSMEM_EMBED_MODEL=SHIM_MODEL)
    labels = json.loads((HERE / "eval" / "real" / f"{args.repo}.json").read_text())
    questions = [q["query"] for q in labels["queries"]]
    shim = Shim(args.port, OUT / "hybrid" / "shim.log")
    (OUT / "hybrid").mkdir(parents=True, exist_ok=True)
    shim.start()
    try:
        clone = embedded_memory(args.repo, shim, env)
        spent: dict[str, list[float]] = {"hybrid": [], "BM25": []}
        hosts = {"hybrid": shim.host, "BM25": CLOSED}
        for r in range(args.rounds):
            for mode in ("hybrid", "BM25") if r % 2 == 0 else ("BM25", "hybrid"):
                mode_env = dict(env, OLLAMA_HOST=hosts[mode])
                timed(clone, questions[0], mode_env)  # the switch: untimed
                for question in questions:
                    spent[mode].append(timed(clone, question, mode_env))
                log(f"round {r + 1}/{args.rounds}, {mode}: p50 {median(spent[mode]):.0f} ms")
    finally:
        shim.stop()
    rows = []
    for mode, values in spent.items():
        p50, p95 = median(values), percentile(values, 95)
        target = 400 if mode == "hybrid" else 250
        ok = p50 <= target and p95 <= 2 * p50
        rows.append(
            [mode, len(values), f"{p50:.0f}", f"{p95:.0f}", f"{p95 / p50:.2f}", target, mark(ok)]
        )
    print(f"# `nexusmem query` on {args.repo}, hybrid ({SHIM_MODEL}) and BM25\n")
    print(machine() + "\n")
    headers = ["mode", "queries", "p50 (ms)", "p95 (ms)", "p95 / p50", "target p50 (ms)", "result"]
    print(table(headers, rows))


if __name__ == "__main__":
    main()
