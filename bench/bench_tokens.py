"""Token savings: what NexusMem sends for a query, against reading the files it points at.

    .venv/bin/python bench/bench_tokens.py [--budget 2000] [--rows]
    .venv/bin/python bench/bench_tokens.py -C PATH [--queries FILE] [--sample 40]

For each query, ``handlers.search(engine, query, budget)`` returns the packed context; its size
is the sum of the results' ``tokens`` (what the agent reads, shell results included). Against
it, two baselines built from the same results:

(a) **files at HEAD**: the current contents (``git cat-file`` of ``HEAD:<path>``) of every file
    the packed results touch: a commit's changed files, a diff's file, a doc section's file.
    Results with no file (shell commands) add nothing; a file gone from HEAD is skipped.
(b) **their history**: ``git log -p -- <those files>``, one call over the union of the paths,
    so a commit that touched several of them is counted once.

Both baselines are counted with the estimator the product packs with
(``nexusmem_core.retrieval.pack.estimate_tokens``). A query whose results touch no file has no
baseline and is left out of the savings (it is counted). Saving = 1 - packed / baseline, per
query (median reported) and over the totals.

This is the narrow claim of the spec's "What it costs you": the file set is whatever NexusMem's
own ranking picked, not an outside judge's answer, so it measures what packing (rank, budget,
excerpt) saves once retrieval has chosen, not whether the choice was right (``bench/eval/run.py``
measures that).

Queries: by default the 70-odd queries of ``bench/eval/queries.json`` on the evaluation fixture
(built and synced like ``bench/eval/run.py --mode bm25``, same frozen clock). With ``-C PATH`` an
already synced repository is opened read-only (``--sync`` syncs it first). Its queries come from
``--queries`` (a JSON list of strings or of ``{"query": ...}`` objects, or a text file with one
query a line) or, by default, mechanically: an even sample (``--sample``) over the history of
the fix/feat/perf/refactor commits with an explanatory body, each turned into "why <subject
without its type>", plus the doc sections whose heading reads as a rationale.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH / "eval"))
sys.path.insert(0, str(ROOT))

import run as eval_run  # noqa: E402  (bench/eval/run.py)

from nexusmem_core import handlers  # noqa: E402
from nexusmem_core.config import Settings  # noqa: E402
from nexusmem_core.engine import open_engine  # noqa: E402
from nexusmem_core.errors import NexusMemError  # noqa: E402
from nexusmem_core.retrieval.pack import estimate_tokens  # noqa: E402

_CONVENTIONAL = re.compile(r"^(fix|feat|perf|refactor)(\([^)]*\))?!?:\s*(?P<rest>.+)$", re.I)
_RATIONALE = re.compile(r"\b(why|rationale|decision|design|trade-?offs?|caveats?)\b", re.I)


@dataclass
class Row:
    query: str
    kind: str
    packed: int
    results: int
    files: list[str] = field(default_factory=list)
    missing: int = 0  # files gone from HEAD
    head_tokens: int = 0
    history_tokens: int = 0

    def saving(self, baseline: int) -> float | None:
        return None if baseline <= 0 else 1 - self.packed / baseline


# --------------------------------------------------------------------------------- baselines


class Baselines:
    """Token counts of files at HEAD and of their ``git log -p``, cached per path set."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._head: dict[str, int | None] = {}
        self._history: dict[tuple[str, ...], int] = {}

    def head(self, paths: list[str]) -> tuple[int, int]:
        """(tokens of the files that exist at HEAD, how many do not)."""
        todo = [p for p in paths if p not in self._head]
        if todo:
            batch = subprocess.run(
                ["git", "-C", str(self.repo), "cat-file", "--batch"],
                input="".join(f"HEAD:{p}\n" for p in todo).encode(),
                capture_output=True,
                check=True,
            ).stdout
            pos = 0
            for path in todo:
                end = batch.index(b"\n", pos)
                header = batch[pos:end].decode()
                pos = end + 1
                if header.endswith(" missing"):
                    self._head[path] = None
                    continue
                size = int(header.rsplit(" ", 1)[1])
                text = batch[pos : pos + size].decode("utf-8", "replace")
                pos += size + 1
                self._head[path] = estimate_tokens(text)
        found = [self._head[p] for p in paths]
        return sum(t for t in found if t is not None), sum(1 for t in found if t is None)

    def history(self, paths: list[str]) -> int:
        key = tuple(sorted(paths))
        if key not in self._history:
            out = subprocess.run(
                [
                    "git",
                    "-C",
                    str(self.repo),
                    "log",
                    "-p",
                    "--no-color",
                    "--no-ext-diff",
                    "--",
                    *key,
                ],
                capture_output=True,
                check=True,
            ).stdout
            self._history[key] = estimate_tokens(out.decode("utf-8", "replace"))
        return self._history[key]


# ----------------------------------------------------------------------------------- queries


def load_queries(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    if path.suffix == ".json":
        data = json.loads(text)
        return [
            (q, "given") if isinstance(q, str) else (q["query"], q.get("kind", "given"))
            for q in data
        ]
    return [(line.strip(), "given") for line in text.splitlines() if line.strip()]


async def derived_queries(engine: Any, sample: int) -> list[tuple[str, str]]:
    """The spec's mechanical query set: explained fix/feat/perf/refactor commits, evenly sampled
    over the history, as "why <description>"; and rationale-bearing doc headings."""
    rows = await engine.db.fetchall(
        "select title, body from nodes where project_id = ? and kind = 'git_commit' "
        "order by ts, seq",
        (engine.project_id,),
    )
    picked = []
    for title, body in rows:
        m = _CONVENTIONAL.match(title)
        _, _, message = body.partition("\n")
        if m and len(message.strip()) >= 200:
            picked.append(f"why {m.group('rest').strip().rstrip('.')}")
    if len(picked) > sample:
        step = len(picked) / sample
        picked = [picked[int(i * step)] for i in range(sample)]
    docs = await engine.db.fetchall(
        "select json_extract(meta, '$.heading') from nodes where project_id = ? "
        "and kind = 'doc_section'",
        (engine.project_id,),
    )
    headings = sorted({h for (h,) in docs if h and _RATIONALE.search(h)})
    return [(q, "commit-derived") for q in picked] + [(h, "doc-heading") for h in headings]


# ------------------------------------------------------------------------------------- run


async def files_of(engine: Any, result: Any, cache: dict[str, list[str]]) -> list[str]:
    if result.kind == "shell_command":
        return []
    if result.id not in cache:
        node = await handlers.get_node(engine, result.id)
        cache[result.id] = list(node["files"]) if node else []
    return cache[result.id]


async def measure(
    engine: Any, repo: Path, queries: list[tuple[str, str]], budget: int, search_kw: dict
) -> list[Row]:
    baselines = Baselines(repo)
    node_files: dict[str, list[str]] = {}
    rows = []
    for query, kind in queries:
        response = await handlers.search(engine, query, budget, **search_kw)
        files: dict[str, None] = {}
        for r in response.results:
            for path in await files_of(engine, r, node_files):
                files.setdefault(path, None)
        row = Row(query, kind, sum(r.tokens for r in response.results), len(response.results))
        row.files = list(files)
        if row.files:
            row.head_tokens, row.missing = baselines.head(row.files)
            row.history_tokens = baselines.history(row.files)
        rows.append(row)
    return rows


def summarize(rows: list[Row]) -> list[list[Any]]:
    out = []
    for label, attr in (
        ("(a) files at HEAD", "head_tokens"),
        ("(b) git log -p of them", "history_tokens"),
    ):
        graded = [r for r in rows if getattr(r, attr) > 0]
        savings = [r.saving(getattr(r, attr)) for r in graded]
        packed = sum(r.packed for r in graded)
        base = sum(getattr(r, attr) for r in graded)
        out.append(
            [
                label,
                len(graded),
                f"{statistics.median(savings) * 100:.1f}%" if savings else "-",
                f"{min(savings) * 100:.1f}%" if savings else "-",
                f"{packed:,}",
                f"{base:,}",
                f"{(1 - packed / base) * 100:.1f}%" if base else "-",
            ]
        )
    return out


def render(rows: list[Row], title: str, budget: int, per_row: bool, by_kind: bool) -> str:
    skipped = [r for r in rows if not r.files]
    lines = [
        f"## Token savings: {title}",
        "",
        f"{len(rows)} queries, budget {budget} tokens. Packed = sum of the packed results' tokens "
        "(all results, shell included). (a) = current contents of the files the packed results "
        "touch; (b) = `git log -p -- <those files>`. Same estimator as the packer "
        f"(`estimate_tokens`). {len(skipped)} queries had no file-backed result and no baseline.",
        f"Median packed: {statistics.median(r.packed for r in rows):,.0f} tokens in "
        f"{statistics.median(r.results for r in rows):.0f} results; median files touched: "
        f"{statistics.median(len(r.files) for r in rows):.0f}; files gone from HEAD skipped: "
        f"{sum(r.missing for r in rows)}.",
        "",
        eval_run.table(
            [
                "baseline",
                "queries",
                "median saving",
                "worst",
                "packed total",
                "baseline total",
                "total saving",
            ],
            summarize(rows),
        ),
        "",
    ]
    if by_kind:
        groups: dict[str, list[Row]] = defaultdict(list)
        for r in rows:
            groups[r.kind].append(r)
        table_rows = []
        for kind, group in sorted(groups.items()):
            a = [r.saving(r.head_tokens) for r in group if r.head_tokens]
            b = [r.saving(r.history_tokens) for r in group if r.history_tokens]
            table_rows.append(
                [
                    kind,
                    len(group),
                    f"{statistics.median(r.packed for r in group):,.0f}",
                    f"{statistics.median(a) * 100:.1f}%" if a else "-",
                    f"{statistics.median(b) * 100:.1f}%" if b else "-",
                ]
            )
        lines += [
            eval_run.table(
                [
                    "query kind",
                    "queries",
                    "median packed",
                    "median saving (a)",
                    "median saving (b)",
                ],
                table_rows,
            ),
            "",
        ]
    if per_row:
        table_rows = [
            [
                r.query[:60],
                r.packed,
                len(r.files),
                r.head_tokens or "-",
                f"{r.saving(r.head_tokens) * 100:.0f}%" if r.head_tokens else "-",
                r.history_tokens or "-",
                f"{r.saving(r.history_tokens) * 100:.0f}%" if r.history_tokens else "-",
            ]
            for r in rows
        ]
        lines += [
            eval_run.table(
                ["query", "packed", "files", "(a)", "saving", "(b)", "saving"], table_rows
            ),
            "",
        ]
    return "\n".join(lines)


async def run_fixture(args: argparse.Namespace) -> str:
    repo, home, info = eval_run.ensure_fixture(args.regen)
    shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
    settings = eval_run.make_settings(home, "bm25", None)
    sync_kw = {"embed": False} if eval_run.accepts(handlers.sync, "embed") else {}
    search_kw = {"vector": False} if eval_run.accepts(handlers.search, "vector") else {}
    queries = [(q["query"], q["kind"]) for q in json.loads(eval_run.QUERIES.read_text())]
    now = eval_run.last_commit_ts(repo) + 86_400
    async with open_engine(settings, repo, create=True) as engine:
        await handlers.sync(engine, **sync_kw)
        search_kw["now"] = float(now)  # the ranker's clock at the fixture's present
        rows = await measure(engine, repo, queries, args.budget, search_kw)
    title = f"evaluation fixture ({info['commits']} commits), bm25"
    return render(rows, title, args.budget, args.rows, by_kind=True)


async def run_repo(args: argparse.Namespace) -> str:
    settings = Settings.from_env()
    search_kw = {"vector": args.hybrid} if eval_run.accepts(handlers.search, "vector") else {}
    if args.sync:
        async with open_engine(settings, args.C, create=True) as engine:
            sync_kw = {"embed": args.hybrid} if eval_run.accepts(handlers.sync, "embed") else {}
            await handlers.sync(engine, **sync_kw)
    async with open_engine(settings, args.C, read_only=True) as engine:
        root = engine.repo.root
        if args.queries:
            queries = load_queries(args.queries)
        else:
            queries = await derived_queries(engine, args.sample)
        if not queries:
            raise SystemExit("no queries: pass --queries FILE")
        rows = await measure(engine, root, queries, args.budget, search_kw)
    mode = "hybrid" if args.hybrid else "bm25"
    return render(rows, f"{root.name} ({mode})", args.budget, args.rows, by_kind=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=int, default=2000, help="search budget (default 2000)")
    parser.add_argument("-C", type=Path, help="an already synced repository instead of the fixture")
    parser.add_argument("--queries", type=Path, help="with -C: a JSON or text file of queries")
    parser.add_argument("--sample", type=int, default=40, help="with -C: commit-derived queries")
    parser.add_argument("--hybrid", action="store_true", help="with -C: let the vector arm join")
    parser.add_argument(
        "--sync", action="store_true", help="with -C: sync the repository first (writes its memory)"
    )
    parser.add_argument("--rows", action="store_true", help="print one row per query")
    parser.add_argument("--regen", action="store_true", help="rebuild the evaluation fixture")
    args = parser.parse_args()
    if args.C is not None:
        try:
            print(asyncio.run(run_repo(args)))
        except NexusMemError as err:
            raise SystemExit(f"error: {err}") from None
    else:
        with eval_run.fixture_lock():
            print(asyncio.run(run_fixture(args)))


if __name__ == "__main__":
    main()
