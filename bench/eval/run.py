"""Labelled retrieval evaluation: MRR@10, Recall@5 and Recall@10 on the "photodrop" fixture.

    .venv/bin/python bench/eval/run.py [--mode bm25|hybrid] [--budget 8000] [--regen]

1. Builds the fixture (``fixture.py``: a git repository of ~170 commits, ~55 doc sections, ~180
   hook-log commands), cached under ``bench/out/eval/v<FIXTURE_VERSION>/`` and rebuilt when
   the fixture's sources change or with ``--regen``.
2. Syncs it into a fresh memory (``open_engine(..., create=True)`` then ``handlers.sync``), with
   ``NEXUSMEM_HOME`` pointing at the fixture's own home, so your registry is never touched.
3. Runs every query of ``queries.json`` through ``handlers.search(engine, query, budget)`` and
   maps each packed result, in order, to a natural reference: ``commit:<subject>``,
   ``diff:<subject>:<path>``, ``doc:<path>#<heading>``, ``shell:<command>`` (any exit code) or
   ``shell:<command>  (exit N)``. Every label must name at least one node of the memory, or the
   run stops: a label that cannot match would read as a retrieval failure.
4. Prints Markdown tables (overall, per query kind, per target kind) and writes
   ``bench/out/eval/result-<mode>.json`` with every query's ranks and top results.

The ranking multiplies relevance by a recency prior computed from the current time. The fixture
is dated March-September 2026, so by default the clock the ranker sees is frozen at the day after
the fixture's last commit (``--now real`` uses the real clock): the numbers do not drift as the
fixture ages, and they describe querying a repository that is in active use.

``--mode hybrid`` calls ``search(..., vector=True)`` and lets sync embed, with the embedding model
of ``NEXUSMEM_EMBED_MODEL`` (default here ``all-minilm``) at ``OLLAMA_HOST``. For a local model
server see ``/work/shared/tools/ollama-shim/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import fcntl
import inspect
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = ROOT / "bench" / "out" / "eval"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import fixture  # noqa: E402

from nexusmem_core import handlers  # noqa: E402
from nexusmem_core.config import Settings  # noqa: E402
from nexusmem_core.engine import open_engine  # noqa: E402

K = 10
QUERIES = HERE / "queries.json"
# A command's title: who ran it (you, claude-code, codex, ...), the command, its exit code.
_SHELL_TITLE = re.compile(r"^[\w-]+: (?P<cmd>.*)  \(exit (?P<exit>[^)]*)\)$", re.DOTALL)


# ---------------------------------------------------------------------------------- fixture


def ensure_fixture(regen: bool = False) -> tuple[Path, Path, dict[str, Any]]:
    """The fixture's repository and home, built once per fixture digest."""
    base = OUT / f"v{fixture.FIXTURE_VERSION}"
    repo, home, stamp = base / fixture.REPO_NAME, base / "home", base / "fixture.json"
    digest = fixture.source_digest()
    if not regen and stamp.exists() and (repo / ".git").exists():
        info = json.loads(stamp.read_text())
        head = git(repo, "rev-parse", "HEAD").strip()
        if info.get("digest") == digest and info.get("head") == head:
            return repo, home, info
    print(f"building the fixture in {base} ...", file=sys.stderr, flush=True)
    if base.exists():
        shutil.rmtree(base)
    info = fixture.build(repo, home)
    stamp.write_text(json.dumps(info, indent=2) + "\n")
    print(f"  built in {info['seconds']} s: {info}", file=sys.stderr, flush=True)
    return repo, home, info


@contextlib.contextmanager
def fixture_lock() -> Iterator[None]:
    """One run at a time: every run rebuilds the fixture's memory in place."""
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / ".lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("waiting for another run on the fixture ...", file=sys.stderr, flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def subjects_by_sha(repo: Path) -> dict[str, str]:
    out = git(repo, "log", "--format=%H%x00%s%x1e")
    pairs = (rec.strip("\n").split("\x00", 1) for rec in out.split("\x1e") if rec.strip())
    return {sha: subject for sha, subject in pairs}


def last_commit_ts(repo: Path) -> int:
    return int(git(repo, "log", "-1", "--format=%ct").strip())


# ---------------------------------------------------------------------------------- mapping


def result_keys(kind: str, ref: str, title: str, subjects: dict[str, str]) -> set[str]:
    """The natural references one result answers to."""
    if kind == "git_commit":
        return {f"commit:{subjects.get(ref, ref)}"}
    if kind == "file_diff":
        sha, _, path = ref.partition(":")
        return {f"diff:{subjects.get(sha, sha)}:{path}"}
    if kind == "doc_section":
        return {f"doc:{ref}"}
    if kind == "shell_command":
        m = _SHELL_TITLE.match(title)
        cmd, code = (m.group("cmd"), m.group("exit")) if m else (title, "unknown")
        return {f"shell:{cmd}", f"shell:{cmd}  (exit {code})"}
    return {f"{kind}:{ref}"}


def label_kind(label: str) -> str:
    return label.split(":", 1)[0]


async def all_node_keys(engine: Any, subjects: dict[str, str]) -> set[str]:
    """Every natural reference the memory can answer with: labels are checked against it."""
    rows = await engine.db.fetchall(
        "select kind, ref, title, meta from nodes where project_id = ?", (engine.project_id,)
    )
    keys: set[str] = set()
    for kind, ref, title, meta in rows:
        if kind == "shell_command":
            code = json.loads(meta or "{}").get("exit")
            title = f"shell: {title}  (exit {code if code is not None else 'unknown'})"
        keys |= result_keys(kind, ref, title, subjects)
    return keys


# ---------------------------------------------------------------------------------- metrics


def answered(label: str, keys: set[str]) -> bool:
    """A result answers a label that names it; a commit also answers the labels of its file
    diffs, since search shows a commit and its diffs as one result (retrieval/group.py)."""
    if label in keys:
        return True
    if label.startswith("diff:"):
        return "commit:" + label[len("diff:") :].rsplit(":", 1)[0] in keys
    return False


def score_query(ranked: list[set[str]], relevant: list[str], k: int = K) -> dict[str, Any]:
    """Rank (1-based, None past the list) of each label, first-hit rank, recalls."""
    ranks: dict[str, int | None] = {}
    for label in relevant:
        ranks[label] = next((i for i, keys in enumerate(ranked, 1) if answered(label, keys)), None)
    hits = [r for r in ranks.values() if r is not None]
    first = min(hits) if hits else None
    return {
        "ranks": ranks,
        "first": first,
        "rr": 1.0 / first if first is not None and first <= k else 0.0,
        "recall5": sum(1 for r in hits if r <= 5) / len(relevant),
        "recall10": sum(1 for r in hits if r <= 10) / len(relevant),
    }


def aggregate(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = len(rows)
    if not n:
        return {"n": 0, "mrr10": 0.0, "recall5": 0.0, "recall10": 0.0}
    return {
        "n": n,
        "mrr10": round(sum(r["rr"] for r in rows) / n, 3),
        "recall5": round(sum(r["recall5"] for r in rows) / n, 3),
        "recall10": round(sum(r["recall10"] for r in rows) / n, 3),
    }


def by_target_kind(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per kind of target node: each query scored against its labels of that kind only."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        kinds = sorted({label_kind(label) for label in row["relevant"]})
        for kind in kinds:
            labels = [label for label in row["relevant"] if label_kind(label) == kind]
            out[kind].append(score_query(row["_ranked"], labels))
    result = {kind: aggregate(scored) for kind, scored in sorted(out.items())}
    for kind in result:
        result[kind]["labels"] = sum(
            1 for row in rows for label in row["relevant"] if label_kind(label) == kind
        )
    return result


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return (
            "| "
            + " | ".join(
                v.ljust(w) if i == 0 else v.rjust(w)
                for i, (v, w) in enumerate(zip(values, widths, strict=True))
            )
            + " |"
        )

    sep = (
        "|"
        + "|".join(
            (":" + "-" * (w + 1)) if i == 0 else ("-" * (w + 1) + ":") for i, w in enumerate(widths)
        )
        + "|"
    )
    return "\n".join([line(headers), sep, *(line(r) for r in cells)])


# ---------------------------------------------------------------------------------- the run


def make_settings(home: Path, mode: str, embed_model: str | None) -> Settings:
    env = {**os.environ, "NEXUSMEM_HOME": str(home)}
    if mode == "bm25":
        env["NEXUSMEM_VECTOR"] = "off"
    elif embed_model:
        env["NEXUSMEM_EMBED_MODEL"] = embed_model
    return Settings.from_env(env)


def write_embed_config(
    repo: Path, home: Path, batch: int, timeout: int, fusion_k: int | None = None
) -> None:
    """Hybrid: smaller batches and longer timeouts in the fixture's own ``config.json``, so a
    busy model server slows the embedding down instead of cutting it short. Ranking settings
    stay at their defaults."""
    from nexusmem_core.config import ProjectConfig, dump_config
    from nexusmem_core.engine import ensure_workspace
    from nexusmem_core.paths import CONFIG_FILE, workspace_dir

    config = ProjectConfig()
    embed = getattr(config, "embed", None)
    if embed is None:
        return
    changes = {"batch": batch, "timeout_seconds": timeout, "query_timeout_seconds": timeout}
    embed = embed.model_copy(update=changes)
    ensure_workspace(repo, home)  # marked with the key of the fixture's own home
    if fusion_k is not None:  # the one ranking knob the evaluation sweeps
        retrieval = config.retrieval.model_copy(update={"fusion_k": fusion_k})
        config = config.model_copy(update={"retrieval": retrieval})
    text = dump_config(config.model_copy(update={"embed": embed}))
    (workspace_dir(repo) / CONFIG_FILE).write_text(text, encoding="utf-8")


def write_import_expansion(repo: Path, home: Path, on: bool) -> None:
    """``--import-expansion``: the import graph built at sync, and the ranking's expansion
    along it on or off, in the fixture's own ``config.json``."""
    from nexusmem_core.config import dump_config, load_config
    from nexusmem_core.engine import ensure_workspace
    from nexusmem_core.paths import CONFIG_FILE, workspace_dir

    ensure_workspace(repo, home)  # marked with the key of the fixture's own home
    path = workspace_dir(repo) / CONFIG_FILE
    config = load_config(path)
    structure = config.sources.structure.model_copy(update={"enabled": True})
    sources = config.sources.model_copy(update={"structure": structure})
    retrieval = config.retrieval.model_copy(update={"import_expansion": on})
    changes = {"sources": sources, "retrieval": retrieval}
    path.write_text(dump_config(config.model_copy(update=changes)))


def accepts(func: Any, name: str) -> bool:
    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


async def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode == "hybrid" and not accepts(handlers.search, "vector"):
        print(
            "hybrid mode is not available yet: handlers.search() has no `vector` parameter. "
            "Run --mode bm25.",
            file=sys.stderr,
        )
        raise SystemExit(2)
    queries = json.loads((args.queries or QUERIES).read_text())
    repo, home, info = ensure_fixture(args.regen)
    if not args.reuse:
        shutil.rmtree(repo / ".nexusmem", ignore_errors=True)
    settings = make_settings(home, args.mode, args.embed_model)
    if args.mode == "hybrid":
        write_embed_config(repo, home, args.embed_batch, args.embed_timeout, args.fusion_k)
    if args.import_expansion is not None:
        write_import_expansion(repo, home, args.import_expansion == "on")
    subjects = subjects_by_sha(repo)
    now = last_commit_ts(repo) + 86_400 if args.now == "fixture" else None
    search_kw: dict[str, Any] = {}
    if accepts(handlers.search, "vector"):
        search_kw["vector"] = args.mode == "hybrid"
    sync_kw: dict[str, Any] = {}
    if accepts(handlers.sync, "embed"):
        sync_kw["embed"] = args.mode == "hybrid"

    async with open_engine(settings, repo, create=True) as engine:
        started = time.perf_counter()
        report = await handlers.sync(engine, **sync_kw)
        sync_info = {
            k: v
            for k, v in dataclasses.asdict(report).items()
            if k in ("commits", "diffs", "docs_sections", "shell", "embedded", "vectors")
        }
        if args.mode == "hybrid":
            # A slow model server ends an embedding pass early; the next sync resumes it.
            # Scores over a half-embedded memory would measure the timeout, not the ranker.
            passes = 1
            while str(report.vectors).startswith(("skipped", "off")) and passes < args.passes:
                print(f"embedding incomplete: {report.vectors}; resuming", file=sys.stderr)
                report = await handlers.sync(engine, **sync_kw)
                sync_info["embedded"] += report.embedded
                sync_info["vectors"] = report.vectors
                passes += 1
            if str(report.vectors).startswith(("skipped", "off")):
                print(f"hybrid: embedding did not complete: {report.vectors}", file=sys.stderr)
                raise SystemExit(1)
        sync_seconds = time.perf_counter() - started
        print(f"synced in {sync_seconds:.1f} s: {sync_info}", file=sys.stderr, flush=True)
        known = await all_node_keys(engine, subjects)
        broken = [
            (q["query"], label) for q in queries for label in q["relevant"] if label not in known
        ]
        if broken:
            for query, label in broken:
                print(f"label matches no node: {label!r} (query {query!r})", file=sys.stderr)
            raise SystemExit(1)

        path_words = set(re.findall(r"[a-z0-9]+", str(repo).lower()))
        for q in queries:
            clash = path_words & set(re.findall(r"[a-z0-9]+", q["query"].lower()))
            if clash:
                # Shell commands are indexed with their cwd: a query word that is also a
                # directory name above the fixture matches every command.
                print(
                    f"warning: {q['query']!r} shares {sorted(clash)} with the fixture's path",
                    file=sys.stderr,
                )

        if now is not None:
            search_kw["now"] = float(now)  # the ranker's clock, frozen at the fixture's present
        rows: list[dict[str, Any]] = []
        vector_use: dict[str, int] = defaultdict(int)
        latencies = []
        for q in queries:
            t0 = time.perf_counter()
            response = await handlers.search(engine, q["query"], args.budget, **search_kw)
            latencies.append((time.perf_counter() - t0) * 1000)
            vector_use[str(getattr(response, "vector", "n/a"))] += 1
            ranked = [result_keys(r.kind, r.ref, r.title, subjects) for r in response.results]
            scored = score_query(ranked, q["relevant"])
            top = [
                {"rank": i, "kind": r.kind, "key": max(keys, key=len), "score": r.score}
                for i, (r, keys) in enumerate(zip(response.results, ranked, strict=True), 1)
                if i <= K
            ]
            rows.append(
                {
                    "query": q["query"],
                    "kind": q["kind"],
                    "relevant": q["relevant"],
                    "packed": len(response.results),
                    "matched": response.matched,
                    **scored,
                    "top": top,
                    "_ranked": ranked,
                }
            )

    unused = sum(n for arm, n in vector_use.items() if arm != "used")
    if args.mode == "hybrid" and unused:
        print(f"warning: the vector arm was not used for {unused} queries", file=sys.stderr)
    short = [r["query"] for r in rows if r["packed"] < K and r["matched"] > r["packed"]]
    if short:
        print(
            f"warning: {len(short)} queries packed fewer than {K} results of more candidates: "
            f"raise --budget",
            file=sys.stderr,
        )
    per_kind = defaultdict(list)
    for row in rows:
        per_kind[row["kind"]].append(row)
    result = {
        "mode": args.mode,
        "budget": args.budget,
        "k": K,
        "clock": "frozen at " + time.strftime("%Y-%m-%d", time.gmtime(now)) if now else "real",
        "fixture": info,
        "sync": {**sync_info, "seconds": round(sync_seconds, 2)},
        "vector_arm": dict(vector_use),
        "search_ms_median": round(statistics.median(latencies), 1),
        "overall": aggregate(rows),
        "by_query_kind": {k: aggregate(v) for k, v in sorted(per_kind.items())},
        "by_target_kind": by_target_kind(rows),
        "queries": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
    }
    return result


def render(result: dict[str, Any], show_misses: bool) -> str:
    f = result["fixture"]
    lines = [
        f"## Retrieval evaluation: {result['mode']}",
        "",
        f"Fixture v{f['fixture_version']} ({f['digest']}): {f['commits']} commits, "
        f"{f['doc_sections']} doc sections, {f['shell_records']} shell records; "
        f"memory: {result['sync']}. Budget {result['budget']} tokens, ranked list = the packed "
        f"results in order; clock {result['clock']}; vector arm: {result['vector_arm']}; "
        f"median search {result['search_ms_median']} ms.",
        "",
    ]
    o = result["overall"]
    rows = [["all", o["n"], f"{o['mrr10']:.3f}", f"{o['recall5']:.3f}", f"{o['recall10']:.3f}"]]
    for kind, a in result["by_query_kind"].items():
        rows.append(
            [kind, a["n"], f"{a['mrr10']:.3f}", f"{a['recall5']:.3f}", f"{a['recall10']:.3f}"]
        )
    lines += [table(["query kind", "queries", "MRR@10", "Recall@5", "Recall@10"], rows), ""]
    rows = [
        [
            kind,
            a["n"],
            a["labels"],
            f"{a['mrr10']:.3f}",
            f"{a['recall5']:.3f}",
            f"{a['recall10']:.3f}",
        ]
        for kind, a in result["by_target_kind"].items()
    ]
    lines += [
        table(["target kind", "queries", "labels", "MRR@10", "Recall@5", "Recall@10"], rows),
        "",
    ]
    if show_misses:
        misses = [q for q in result["queries"] if q["rr"] == 0.0]
        lines.append(f"Queries with no relevant result in the top {K} ({len(misses)}):")
        lines.append("")
        for q in misses:
            lines.append(f"- [{q['kind']}] {q['query']}")
            top = ", ".join(t["key"][:60] for t in q["top"][:3]) or "(nothing)"
            lines.append(f"  top 3: {top}")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("bm25", "hybrid"), default="bm25")
    parser.add_argument("--budget", type=int, default=8000, help="tokens per search (default 8000)")
    parser.add_argument("--regen", action="store_true", help="rebuild the fixture")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the fixture's memory (and its vectors) from the last run, not a fresh sync",
    )
    parser.add_argument("--fusion-k", type=int, help="hybrid: reciprocal rank fusion's k")
    parser.add_argument("--now", choices=("fixture", "real"), default="fixture")
    parser.add_argument(
        "--embed-model",
        default=os.environ.get("NEXUSMEM_EMBED_MODEL", "all-minilm"),
        help="hybrid: the Ollama embedding model ($NEXUSMEM_EMBED_MODEL, else all-minilm)",
    )
    parser.add_argument("--embed-batch", type=int, default=8, help="hybrid: texts per request")
    parser.add_argument(
        "--embed-timeout", type=int, default=120, help="hybrid: seconds per embedding request"
    )
    parser.add_argument(
        "--passes", type=int, default=5, help="hybrid: sync passes to finish embedding (default 5)"
    )
    parser.add_argument("--misses", action="store_true", help="list the queries that found nothing")
    parser.add_argument(
        "--queries", type=Path, help="labelled queries (default bench/eval/queries.json)"
    )
    parser.add_argument(
        "--import-expansion",
        choices=("on", "off"),
        help="build the import graph and turn the ranking's expansion along it on or off "
        "(default: the config's own default)",
    )
    parser.add_argument(
        "--out", type=Path, help="JSON result file (default bench/out/eval/result-<mode>.json)"
    )
    args = parser.parse_args()
    with fixture_lock():
        result = asyncio.run(evaluate(args))
    out = args.out or OUT / f"result-{args.mode}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(render(result, args.misses))
    print(f"written: {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


if __name__ == "__main__":
    main()
