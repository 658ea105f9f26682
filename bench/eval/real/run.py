"""Retrieval on real repositories: the labelled set of ``bench/eval/real/*.json`` scored.

    .venv/bin/python bench/eval/real/run.py [--mode bm25|hybrid|both] [--repo click ...]
                                            [--budget 8000] [--resync] [--misses]

For each of the six corpora in ``../shared/corpora/`` (cloned once under ``bench/out/real/``):

1. Syncs it into its own memory, cached: the memory is rebuilt only when the code that decides
   what reaches memory changes (collectors, ingest, sync, redaction, schema) or with ``--resync``,
   so a re-run after a ranking change takes seconds. ``hybrid`` then embeds what has no vector
   (all-minilm through ``../shared/tools/ollama-shim/`` at ``OLLAMA_HOST``); the vectors are kept
   with the memory.
   ``NEXUSMEM_EVAL_OUT`` puts the clones, memories and results elsewhere (two runs at once).
2. Runs every question through ``handlers.search`` at ``--budget`` tokens, with the ranker's clock
   at the day after the repository's last commit (a repository in active use), and maps the
   packed results, in order, to their references.
3. Computes the grep baseline in the same run: commits ranked by how many distinct non-stopword
   query words their message holds, newest first on ties.
4. Prints MRR@10, Recall@5 and Recall@10 per repository and per kind for every mode beside the
   baseline, and writes every query's ranks and top ten to ``bench/out/real/result.json``.

A question is answered at the first rank holding any of its targets (they are equally good
answers). A result answers a target when it is the target, or the same commit: a commit target
is answered by that commit's node or one of its file diffs, and ``<sha>:<path>`` by that diff or
its commit. ``pair@10`` (revert questions) counts questions with *every* target in the top ten.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
OUT = Path(os.environ.get("NEXUSMEM_EVAL_OUT") or ROOT / "bench" / "out" / "real")
K = 10
KINDS = ("why", "broke", "recent", "howto", "release", "revert")
# What decides the nodes a sync writes: a change here rebuilds the cached memories.
INGEST_CODE = (
    "nexusmem_core/collectors",
    "nexusmem_core/ingest.py",
    "nexusmem_core/sync.py",
    "nexusmem_core/redact",
    "nexusmem_core/store/migrations.py",
    "nexusmem_core/store/nodes.py",
    "nexusmem_core/models.py",
    "nexusmem_core/reverts.py",
    "nexusmem_core/config",
)
# The baseline's own stop words: a common English list, not the engine's.
BASELINE_STOP = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    me more most my no nor not now of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while who whom why
    will with would you your yours""".split()
)

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from _common import ORIGINS, ensure_corpus  # noqa: E402


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def code_digest() -> str:
    digest = hashlib.sha256()
    for name in INGEST_CODE:
        path = ROOT / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(ROOT)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def ensure_clone(name: str) -> Path:
    return ensure_corpus(name, OUT / "clones")


# --------------------------------------------------------------------------- the engine's side


def settings_for(home: Path, hybrid: bool) -> Any:
    from nexusmem_core.config import Settings

    env = {**os.environ, "NEXUSMEM_HOME": str(home)}
    if hybrid:
        env.setdefault("NEXUSMEM_EMBED_MODEL", "all-minilm")
    else:
        env["NEXUSMEM_VECTOR"] = "off"
    return Settings.from_env(env)


def write_config(clone: Path, home: Path) -> None:
    """Patient embedding settings in the clone's own config.json, and nothing else: what it
    does not name (the ranking) follows the code's defaults, which is what is measured.
    Written on every run, so a default changed since the memory was made applies."""
    from nexusmem_core.engine import ensure_workspace
    from nexusmem_core.paths import CONFIG_FILE, workspace_dir

    patient = {"batch": 16, "timeoutSeconds": 300, "queryTimeoutSeconds": 60}
    ensure_workspace(clone, home)  # marked with the key of the home the engine opens it with
    config: dict[str, Any] = {"version": 1, "embed": patient}
    if os.environ.get("NEXUSMEM_EVAL_FUSION_K"):  # a sweep of the fusion constant
        config["retrieval"] = {"fusionK": int(os.environ["NEXUSMEM_EVAL_FUSION_K"])}
    text = json.dumps(config, indent=2) + "\n"
    (workspace_dir(clone) / CONFIG_FILE).write_text(text, encoding="utf-8")


async def ensure_memory(name: str, clone: Path, home: Path, hybrid: bool, resync: bool) -> None:
    """Sync the clone unless its cached memory was made by the same ingest code."""
    from nexusmem_core import handlers
    from nexusmem_core.engine import open_engine

    stamp_file = OUT / f"{name}.stamp.json"
    stamp = {"code": code_digest(), "head": git(clone, "rev-parse", "HEAD").strip()}
    fresh = stamp_file.exists() and json.loads(stamp_file.read_text()) == stamp
    stale = resync or not fresh or not (clone / ".nexusmem" / "memory.db").exists()
    if stale:
        shutil.rmtree(clone / ".nexusmem", ignore_errors=True)
        stamp_file.unlink(missing_ok=True)
    write_config(clone, home)
    if stale:
        started = time.perf_counter()
        async with open_engine(settings_for(home, False), clone, create=True) as engine:
            report = await handlers.sync(engine, embed=False)
        print(
            f"{name}: synced {report.commits} commits, {report.diffs} diffs, "
            f"{report.docs_sections} doc sections in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )
        stamp_file.write_text(json.dumps(stamp))
    if hybrid:
        async with open_engine(settings_for(home, True), clone) as engine:
            for _ in range(20):  # a busy model server ends a pass early; the next resumes it
                report = await handlers.sync(engine, embed=True)
                if not str(report.vectors).startswith(("skipped", "off")):
                    break
                print(f"{name}: embedding: {report.vectors}; resuming", file=sys.stderr)
            else:
                raise SystemExit(f"{name}: embedding did not complete: {report.vectors}")
            if report.embedded:
                print(f"{name}: embedded {report.embedded} node(s)", file=sys.stderr)


async def engine_rankings(
    clone: Path, home: Path, queries: list[dict], hybrid: bool, budget: int
) -> tuple[list[list[str]], list[float]]:
    """Each query's packed results as references, best first, and the latencies (ms)."""
    from nexusmem_core import handlers
    from nexusmem_core.engine import open_engine

    now = float(git(clone, "log", "-1", "--format=%ct").strip()) + 86_400
    rankings, latencies = [], []
    async with open_engine(settings_for(home, hybrid), clone, read_only=True) as engine:
        for q in queries:
            started = time.perf_counter()
            response = await handlers.search(engine, q["query"], budget, vector=hybrid, now=now)
            latencies.append((time.perf_counter() - started) * 1000)
            if hybrid and response.vector != "used":
                raise SystemExit(f"{q['id']}: vector arm {response.vector}")
            rankings.append([r.ref for r in response.results])
    return rankings, latencies


# ------------------------------------------------------------------------------ the baseline

_WORD = re.compile(r"\w+")


def baseline_rankings(clone: Path, queries: list[dict]) -> list[list[str]]:
    """grep: commits by distinct non-stopword query words in their message, newest on ties."""
    log = git(clone, "log", "--no-merges", "--format=%H%x00%ct%x00%B%x01")
    commits = []
    for entry in log.split("\x01"):
        parts = entry.strip("\n").split("\x00")
        if len(parts) == 3:
            sha, ts, message = parts
            commits.append((sha, int(ts), {w.lower() for w in _WORD.findall(message)}))
    rankings = []
    for q in queries:
        words = {w.lower() for w in _WORD.findall(q["query"])} - BASELINE_STOP
        scored = [(len(words & bag), ts, sha) for sha, ts, bag in commits]
        scored = [s for s in scored if s[0] > 0]
        scored.sort(reverse=True)
        rankings.append([sha for _, _, sha in scored[:K]])
    return rankings


# ------------------------------------------------------------------------------- the scoring


def answers(ref: str, target: str) -> bool:
    """Whether a result (by its reference) answers a target (see the module text)."""
    if ref == target:
        return True
    if "#" in target and not re.match(r"^[0-9a-f]{40}(:|$)", target):
        path, _, heading = target.partition("#")
        got_path, _, got_heading = ref.partition("#")
        got_heading = re.sub(r" \(\d+\)$", "", got_heading)
        return got_path == path and got_heading.strip().lower() == heading.strip().lower()
    return ref.split(":", 1)[0] == target.split(":", 1)[0] and bool(re.match(r"^[0-9a-f]{40}", ref))


def score(ranking: list[str], targets: list[str]) -> dict[str, Any]:
    first = next(
        (i for i, ref in enumerate(ranking[:K], 1) if any(answers(ref, t) for t in targets)),
        None,
    )
    found = [any(answers(ref, t) for ref in ranking[:K]) for t in targets]
    return {
        "first": first,
        "rr": 1.0 / first if first else 0.0,
        "r5": 1.0 if first and first <= 5 else 0.0,
        "r10": 1.0 if first else 0.0,
        "pair10": 1.0 if all(found) else 0.0,
    }


def mean(rows: list[dict[str, Any]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else 0.0


def table(headers: list[str], rows: list[list[Any]]) -> str:
    def line(values: list[Any]) -> str:
        return "| " + " | ".join(str(v) for v in values) + " |"

    aligns = ["---"] + ["---:"] * (len(headers) - 1)
    return "\n".join([line(headers), line(aligns), *(line(r) for r in rows)])


def render(rows: list[dict[str, Any]], modes: list[str]) -> str:
    def cells(group: list[dict[str, Any]]) -> list[str]:
        out = [str(len(group))]
        for mode in modes:
            scored = [r[mode] for r in group]
            out += [f"{mean(scored, 'rr'):.3f}", f"{mean(scored, 'r5'):.3f}"]
            out.append(f"{mean(scored, 'r10'):.3f}")
        return out

    headers = ["", "n"]
    for mode in modes:
        headers += [f"{mode} MRR@10", f"{mode} R@5", f"{mode} R@10"]
    groups: dict[str, list[list[Any]]] = {"repository": [], "kind": []}
    for repo in sorted({r["repo"] for r in rows}):
        groups["repository"].append([repo, *cells([r for r in rows if r["repo"] == repo])])
    for kind in KINDS:
        groups["kind"].append([kind, *cells([r for r in rows if r["kind"] == kind])])
    groups["kind"].append(["agent-phrased", *cells([r for r in rows if r["agent"]])])
    total = ["all", *cells(rows)]
    reverts = [r for r in rows if r["kind"] == "revert"]
    pairs = ", ".join(f"{m} {mean([r[m] for r in reverts], 'pair10'):.3f}" for m in modes)
    return "\n\n".join(
        [
            table(["repository", *headers[1:]], [*groups["repository"], total]),
            table(["kind", *headers[1:]], [*groups["kind"], total]),
            f"revert questions with both commits in the top 10 (pair@10): {pairs}",
        ]
    )


def load_sets(names: list[str], folder: Path) -> list[dict[str, Any]]:
    sets = []
    for name in names:
        path = folder / f"{name}.json"
        if not path.exists():
            print(f"{path.name}: not written yet; skipped", file=sys.stderr)
            continue
        sets.append(json.loads(path.read_text(encoding="utf-8")))
    return sets


async def evaluate(args: argparse.Namespace) -> list[dict[str, Any]]:
    modes = ["bm25", "hybrid"] if args.mode == "both" else [args.mode]
    home = OUT / "home"
    home.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for labelled in load_sets(args.repo, args.labels):
        name, queries = labelled["repo"], labelled["queries"]
        clone = ensure_clone(name)
        await ensure_memory(name, clone, home, "hybrid" in modes, args.resync)
        ranked = {"grep": baseline_rankings(clone, queries)}
        timings = {}
        for mode in modes:
            ranked[mode], timings[mode] = await engine_rankings(
                clone, home, queries, mode == "hybrid", args.budget
            )
        for i, q in enumerate(queries):
            row = {"repo": name, "id": q["id"], "kind": q["kind"], "agent": q.get("agent", False)}
            row["query"], row["targets"] = q["query"], q["targets"]
            for mode, rankings in ranked.items():
                row[mode] = score(rankings[i], q["targets"])
                row[mode]["top"] = rankings[i][:K]
            rows.append(row)
        summary = ", ".join(
            f"{m} p50 {sorted(t)[len(t) // 2]:.0f} ms" for m, t in timings.items() if t
        )
        print(f"{name}: {len(queries)} queries; {summary}", file=sys.stderr, flush=True)
    return rows


def show_misses(rows: list[dict[str, Any]], mode: str) -> str:
    lines = []
    for r in rows:
        if r[mode]["first"] != 1:
            lines.append(f"- {r['id']} [{r['kind']}] rank {r[mode]['first']}: {r['query']}")
            lines.append(f"    want {r['targets']}")
            lines += [f"    {i}. {ref}" for i, ref in enumerate(r[mode]["top"][:5], 1)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("bm25", "hybrid", "both"), default="bm25")
    parser.add_argument("--repo", nargs="*", default=list(ORIGINS), choices=list(ORIGINS))
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--labels", type=Path, default=HERE, help="folder of <repo>.json")
    parser.add_argument("--resync", action="store_true", help="rebuild the cached memories")
    parser.add_argument("--misses", action="store_true", help="list every query not at rank 1")
    args = parser.parse_args()
    rows = asyncio.run(evaluate(args))
    if not rows:
        raise SystemExit("no labelled questions found")
    modes = ["bm25", "hybrid"] if args.mode == "both" else [args.mode]
    print(render(rows, [*modes, "grep"]))
    if args.misses:
        print("\n" + show_misses(rows, modes[0]))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "result.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
