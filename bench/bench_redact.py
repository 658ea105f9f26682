"""Redaction throughput on ordinary commit text, and its share of a real first sync.

    .venv/bin/python bench/bench_redact.py [--repo werkzeug ...] [--rounds 5] [--out DIR]

For each corpus of ``../shared/corpora/`` (cloned into ``--out``, default
``bench/out/redact``), a first sync runs in-process with BM25 only while every call the
ingest step makes to ``redact`` is timed and its text kept: commit messages, subjects, patches
and doc sections, exactly as the sync hands them over. The table gives, per corpus:

* texts and MB redacted during the sync, the seconds redaction took, and the whole sync's;
* throughput: the same texts redacted again ``--rounds`` times, median MB/s (the target is
  20 MB/s on this machine), with the per-text cost.

A second table splits all six corpora's texts by what they are (commit messages with their
subjects, patches, doc sections: the ingest function that handed them over).

It only patches ``nexusmem_core.ingest.redact``, so the same file measures an older checkout:
run it with ``PYTHONPATH=<that checkout>`` and another ``--out``, and compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import sys
import time
import types
from pathlib import Path
from typing import Any

from _common import ORIGINS, ensure_corpus

HERE = Path(__file__).resolve().parent
NAMES = tuple(ORIGINS)
TARGET_MB_S = 20.0


# What each batch handed over was, by the ingest function that handed it over; filled by
# first_sync() in the order of its batches.
KINDS: list[str] = []


def _kind() -> str:
    """What the texts being redacted are, from the nearest ingest function up the stack."""
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_name
        if name.startswith("commit_node"):
            return "commit messages"
        if name.startswith("diff_node"):
            return "patches"
        if name.startswith("doc_"):
            return "doc sections"
        frame = frame.f_back
    return "other"


async def first_sync(name: str, out: Path) -> tuple[list[list[str]], float, float]:
    """Sync ``name`` from scratch; return the texts redacted (as the batches the sync handed
    over), the seconds redaction took and the seconds the sync took."""
    from nexusmem_core import handlers, ingest
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine

    repo = ensure_corpus(name, out / "clones")
    shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
    home = out / "home"
    shutil.rmtree(home, ignore_errors=True)
    settings = Settings.from_env(
        {**os.environ, "NEXUSMEM_HOME": str(home), "NEXUSMEM_VECTOR": "off"}
    )
    batches: list[list[str]] = []
    spent = 0.0
    one, many = getattr(ingest, "redact", None), getattr(ingest, "redact_many", None)

    def timed(redact: Any) -> Any:
        """``redact`` (one text, or a list of them), timed, its texts kept as one batch."""

        def call(texts: Any) -> Any:
            nonlocal spent
            started = time.perf_counter()
            try:
                return redact(texts)
            finally:
                spent += time.perf_counter() - started
                batches.append([texts] if isinstance(texts, str) else list(texts))
                KINDS.append(_kind())

        return call

    if one is not None:  # this checkout hands every text over in batches
        ingest.redact = timed(one)  # type: ignore[attr-defined]
    if many is not None:  # an older checkout redacts one text at a time
        ingest.redact_many = timed(many)  # type: ignore[attr-defined]
    try:
        started = time.perf_counter()
        async with open_engine(settings, repo, create=True) as engine:
            await handlers.sync(engine, embed=False)
        total = time.perf_counter() - started
    finally:
        if one is not None:
            ingest.redact = one  # type: ignore[attr-defined]
        if many is not None:
            ingest.redact_many = many  # type: ignore[attr-defined]
    return batches, spent, total


def megabytes(batches: list[list[str]]) -> float:
    return sum(len(t.encode("utf-8", "surrogatepass")) for batch in batches for t in batch) / 1e6


def throughput(batches: list[list[str]], rounds: int) -> float:
    """MB/s redacting the batches again as the sync did: a batch of one with ``redact``, a
    larger one with ``redact_many``."""
    from nexusmem_core import redact as table

    many = getattr(table, "redact_many", None)
    # The syncs before leave a large heap, which the cyclic collector would walk again and
    # again while the rounds allocate: measure the table, not that heap.
    gc.collect()
    gc.freeze()
    runs = []
    for _ in range(rounds):
        started = time.perf_counter()
        for batch in batches:
            if len(batch) == 1 or many is None:
                for text in batch:
                    table.redact(text)
            else:
                many(batch)
        runs.append(time.perf_counter() - started)
    return megabytes(batches) / statistics.median(runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", action="append", choices=NAMES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "redact")
    args = parser.parse_args()
    import nexusmem_core

    print(f"code: {Path(nexusmem_core.__file__).parent.parent}", file=sys.stderr)
    rows = []
    everything: list[list[str]] = []
    for name in args.repo or NAMES:
        batches, spent, total = asyncio.run(first_sync(name, args.out))
        everything += batches
        size = megabytes(batches)
        texts = [text for batch in batches for text in batch]
        rate = throughput(batches, args.rounds)
        rows.append(
            f"| {name} | {len(texts):,} | {size:.1f} | {spent:.2f} | {total:.1f} | "
            f"{spent / total:.0%} | {rate:.1f} | {size / rate / len(texts) * 1e6:.0f} |"
        )
    print("| corpus | texts | MB | redact s (in sync) | sync s | share | MB/s (median) | µs/text |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    rate = throughput(everything, args.rounds)
    mark = "ok" if rate >= TARGET_MB_S else "MISS"
    print("\n| texts, all corpora | MB | MB/s (median) |")
    print("| --- | ---: | ---: |")
    for kind in dict.fromkeys(KINDS):
        chosen = [batch for batch, k in zip(everything, KINDS, strict=True) if k == kind]
        print(f"| {kind} | {megabytes(chosen):.1f} | {throughput(chosen, args.rounds):.1f} |")
    print(f"\nall corpora: {rate:.1f} MB/s median of {args.rounds} (target ≥ {TARGET_MB_S}) {mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
