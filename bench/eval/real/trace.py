"""Where a question's answer is placed at each stage of the search pipeline.

    .venv/bin/python bench/eval/real/trace.py click-10 [werkzeug-21 ...] [--top 5]

For each question id of ``bench/eval/real/*.json``, runs the BM25 search (with ``--hybrid``,
both arms, the model at ``OLLAMA_HOST``) on its cached memory (made by ``run.py``: run that
first) and prints, after every stage of ``retrieval/search.py`` (BM25, coverage, the vector
arm and the fusion, grouping, priors, the question's lift, pairs), the rank of the first
target and the candidates above it with their scores. A tool for reading a miss, not a
score.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402


def _rank(cands: list[Any], targets: list[str]) -> int | None:
    for i, c in enumerate(cands, 1):
        if any(run.answers(c.ref, t) for t in targets):
            return i
    return None


def _show(stage: str, cands: list[Any], targets: list[str], top: int, key: str) -> None:
    rank = _rank(cands, targets)
    if top == 0:
        print(f" {stage}={rank}", end="")
        return
    print(f"  {stage:<14} target at {rank} of {len(cands)}")
    last = min(len(cands), max(top, rank or 0))
    for i, c in enumerate(cands[:last], 1):
        if i <= top or i == rank:
            mark = "*" if i == rank else " "
            value = getattr(c, key)
            title = (c.title or "").replace("\n", " ")[:70]
            print(f"   {mark}{i:>3} {value:9.4f} {c.kind[:8]:<8} {c.ref[:12]:<12} {title}")


async def trace(qid: str, top: int, hybrid: bool) -> None:
    from nexusmem_core.engine import open_engine
    from nexusmem_core.retrieval import lexical, query, search, semantic

    name = qid.rsplit("-", 1)[0]
    labelled = json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))
    q = next(q for q in labelled["queries"] if q["id"] == qid)
    targets = q["targets"]
    parsed = query.parse_query(q["query"])
    flags = [f for f in ("undone", "release", "howto", "commit", "why") if getattr(parsed, f)]
    if top == 0:
        print(f"{qid:<12} {q['kind']:<8} {','.join(flags):<8}", end="")
    else:
        print(f"{qid} [{q['kind']}]: {q['query']}")
        print(f"  terms {parsed.terms}")
        print(f"  asks {flags or 'nothing in particular'}")
    clone = run.ensure_clone(name)
    now = float(run.git(clone, "log", "-1", "--format=%ct").strip()) + 86_400

    saved: dict[tuple[Any, str], Any] = {}

    def wrap(module: Any, attr: str, stage: str, key: str = "relevance", arg: int = -1) -> None:
        original = getattr(module, attr)
        saved[(module, attr)] = original

        async def awrapped(*a: Any, **k: Any) -> Any:
            out = await original(*a, **k)
            cands = out if arg < 0 else a[arg]
            _show(stage, cands, targets, top, key)
            return out

        def wrapped(*a: Any, **k: Any) -> Any:
            out = original(*a, **k)
            _show(stage, out, targets, top, key)
            return out

        is_async = asyncio.iscoroutinefunction(original)
        setattr(module, attr, awrapped if is_async else wrapped)

    wrap(lexical, "word_candidates", "bm25")
    wrap(lexical, "cover", "coverage", arg=3)
    wrap(search, "lexical_candidates", "lexical")
    wrap(semantic, "resolve", "vector")
    wrap(search, "rrf", "fused")
    wrap(search, "group_commits", "grouped")
    wrap(search, "drop_copies", "priors", key="score")
    for lift in ("lift_releases", "lift_howto", "lift_commits", "lift_reasons"):
        wrap(search, lift, lift, key="score")
    wrap(search, "pair_reverts", "pairs", key="score")
    wrap(search, "follow", "follow", key="score")
    try:
        settings = run.settings_for(run.OUT / "home", hybrid)
        async with open_engine(settings, clone, read_only=True) as engine:
            await search.ranked(engine, parsed, hybrid, None, now)
    finally:
        for (module, attr), original in saved.items():
            setattr(module, attr, original)
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="+")
    parser.add_argument("--top", type=int, default=5, help="0: one line a question, its ranks")
    parser.add_argument("--hybrid", action="store_true", help="with the vector arm")
    args = parser.parse_args()
    for qid in args.ids:
        asyncio.run(trace(qid, args.top, args.hybrid))


if __name__ == "__main__":
    main()
