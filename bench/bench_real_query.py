"""In-process search latency on the real corpora, with the labelled questions as the query mix.

    .venv/bin/python bench/bench_real_query.py [--repo werkzeug ...] [--rounds 5] [--out DIR]

Each corpus of ``../shared/corpora/`` is cloned and synced (BM25 only) into ``--out`` (default
``bench/out/real-query``), then all 216 questions of ``bench/eval/real/*.json`` are asked of
it ``--rounds`` times through ``handlers.search`` in one process, and the table gives the
median, p95 and mean per corpus. It only uses ``handlers.search(engine, text, budget,
vector=False)``, so the same file times an older checkout too: run it with
``PYTHONPATH=<that checkout>`` and another ``--out``, and alternate the two runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

from _common import ORIGINS, ensure_corpus

HERE = Path(__file__).resolve().parent
LABELS = HERE / "eval" / "real"
NAMES = tuple(ORIGINS)


async def timings(name: str, out: Path, questions: list[str], rounds: int) -> list[float]:
    from nexusmem_core import handlers
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine

    home = out / "home"
    settings = Settings.from_env(
        {**os.environ, "NEXUSMEM_HOME": str(home), "NEXUSMEM_VECTOR": "off"}
    )
    repo = ensure_corpus(name, out / "clones")
    if not (repo / ".nexusmem" / "memory.db").exists():
        async with open_engine(settings, repo, create=True) as engine:
            await handlers.sync(engine, embed=False)
    spent = []
    async with open_engine(settings, repo, read_only=True) as engine:
        for text in questions[:10]:  # warm the caches, as a long-lived server has them
            await handlers.search(engine, text, 8000, vector=False)
        for _ in range(rounds):
            for text in questions:
                started = time.perf_counter()
                await handlers.search(engine, text, 8000, vector=False)
                spent.append((time.perf_counter() - started) * 1000)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", nargs="*", default=list(NAMES), choices=NAMES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "real-query")
    args = parser.parse_args()
    questions = [
        q["query"]
        for name in NAMES
        for q in json.loads((LABELS / f"{name}.json").read_text())["queries"]
    ]
    import nexusmem_core

    print(f"code: {Path(nexusmem_core.__file__).parent.parent}", file=sys.stderr)
    print("| corpus | queries | p50 (ms) | p95 (ms) | mean (ms) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in args.repo:
        spent = asyncio.run(timings(name, args.out, questions, args.rounds))
        p95 = statistics.quantiles(spent, n=20)[18]
        print(
            f"| {name} | {len(spent)} | {statistics.median(spent):.1f} | {p95:.1f} | "
            f"{statistics.fmean(spent):.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
