"""Ranking changes judged the way issue 48 asks: held out, beside in sample, with their noise.

    .venv/bin/python bench/eval/real/loo.py [--variants default no-pairs ...] [--repo ...]
                                            [--hybrid | --both] [--json bench/out/real/loo.json]
                                            [--report]

``--hybrid`` scores the default with both arms beside the BM25 variants; ``--both`` runs the
variants themselves with both arms (the fusion constant and the vector arm's weight are
variants there); ``--report`` prints the saved ``--json`` again. Both need the vectors that
``run.py --mode both`` makes (the model at ``OLLAMA_HOST``).

Every variant is the engine with one stage switched off, one added, or one constant moved:
``VARIANTS`` lists them, each as the module attributes it sets for its run (in process, on the
memories ``run.py`` caches; nothing in a user's configuration can reach them). Each variant's
every question is scored (MRR@10 as in run.py), then:

- **in sample**: the variant's mean over every question of every corpus;
- **leave one repository out**: for each corpus in turn, the variant that scores best on all
  the others' questions is chosen and scored on the one left out; the figure is the mean over
  every question of those held-out scores. This is what a change reports: the choice among
  variants never sees the questions it is scored on;
- **a stage's held-out gain**: the default against the default with that one stage changed,
  question by question, on the corpora whose questions were written after the stage was
  (``BLIND``: written by outside judges who had not read the ranking code) and on all,
  with a 95% interval from a bootstrap over questions (resampled within each corpus). A
  stage whose gain on ``BLIND`` is not above its noise does not earn its place.

Questions that name an identifier their target's diff changes (``names identifier``: an
identifier-looking word of the question that a ``+``/``-`` line of the target's patch holds)
are reported apart: they measure copying more than retrieval.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402

# The corpora whose questions no ranking change was measured on before issue 48.
BLIND = ("serde", "caddy", "preact", "attrs", "requests")
COMMIT_KINDS = ("why", "broke", "recent")
GROUPS = {"commit": COMMIT_KINDS, "howto": ("howto",), "release": ("release",)}
GROUPS["revert"] = ("revert",)
BOOTSTRAP = 2000

Patch = tuple[str, str, Any]  # module, attribute, value


def _same(candidates: Any, *_: Any, **__: Any) -> Any:
    return candidates


async def _same_async(_db: Any, candidates: Any, *_: Any, **__: Any) -> Any:
    return candidates


async def _unshipped(_db: Any, _pid: Any, candidates: Any, *_: Any) -> Any:
    return candidates


async def _nothing(*_: Any, **__: Any) -> list[Any]:
    return []


async def _uncovered(*_: Any, **__: Any) -> None:
    return None


def _weights(title: float, body: float, paths: float, names: float) -> list[Patch]:
    """Every BM25 statement's column weights (store/fts.py, wordtops.py) set anew."""
    from nexusmem_core.store import fts

    old = f"bm25(nodes_fts, {fts.TITLE_WEIGHT}, 1.0, {fts.PATHS_WEIGHT}, {fts.NAMES_WEIGHT})"
    new = f"bm25(nodes_fts, {title}, {body}, {paths}, {names})"
    patches: list[Patch] = []
    for name in ("nexusmem_core.store.fts", "nexusmem_core.store.wordtops"):
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, str) and old in value:
                patches.append((name, attr, value.replace(old, new)))
    return patches


def _fusion(k: int) -> list[Patch]:
    """The two arms fused by rank with the constant ``k`` (retrieval.fusionK) in place of the
    configured one."""
    from nexusmem_core.retrieval import fuse, semantic

    async def neutral(engine: Any, lexical: Any, _k: int) -> Any:
        return await semantic.neutral_when_unembedded(engine, lexical, k)

    def fused(arms: Any, _k: int) -> Any:
        return fuse.rrf(arms, k)

    def units(arms: Any, unit: Any, _k: int) -> Any:
        return fuse.unit_relevance(arms, unit, k)

    return [
        (f"{R}.search", "rrf", fused),
        (f"{R}.search", "unit_relevance", units),
        (f"{R}.search", "neutral_when_unembedded", neutral),
    ]


def _vector_weight(weight: float) -> list[Patch]:
    """The vector arm's share of the fusion weighed ``weight`` times the word arm's."""
    from nexusmem_core.retrieval import fuse

    def fused(arms: Any, k: int) -> Any:
        out = fuse.rrf(arms, k)
        ranks = {c.id: r for r, c in enumerate(arms.get("vector", []), start=1)}
        for c in out:
            if c.id in ranks:
                c.relevance += (weight - 1.0) / (k + ranks[c.id])
        return sorted(out, key=lambda c: c.relevance, reverse=True)

    def units(arms: Any, unit: Any, k: int) -> Any:
        words = fuse.unit_relevance({"bm25": arms["bm25"]}, unit, k)
        near = fuse.unit_relevance({"vector": arms["vector"]}, unit, k)
        return {u: words.get(u, 0.0) + weight * near.get(u, 0.0) for u in {*words, *near}}

    return [(f"{R}.search", "rrf", fused), (f"{R}.search", "unit_relevance", units)]


def _diffs_lend(share: float) -> Callable[..., Any]:
    """group_commits with each code diff's relevance scaled by ``share`` before it lends it."""
    from nexusmem_core.retrieval import group

    original = group.group_commits

    async def grouped(db: Any, pid: Any, ranked: Any, *args: Any, **kwargs: Any) -> Any:
        for c in ranked:
            if c.kind == "file_diff":
                c.relevance *= share
        return await original(db, pid, ranked, *args, **kwargs)

    return grouped


_NARROW_UNDONE = re.compile(
    r"\b(?:revert\w*|back(?:ed)?\s+(?:\w+\s+)?out|undo\w*|undid|undone|roll(?:ed)?\s+back|"
    r"put\s+(?:\w+\s+)?back|c[oa]me\s+back|brought\s+back|reintroduc\w*|"
    r"(?:was|were|got|been)\s+(?:\w+\s+)?taken\s+out|did\s+(?:we|you|they|someone|anyone)\s+"
    r"(?:ever\s+)?(?:\w+\s+)?try|(?:did|does)\s+(?:that|it)\s+(?:stick|last)|"
    r"what\s+happened\s+to|what\s+became\s+of|(?:was|were)\s+(?:\w+\s+){0,4}(?:tried|attempted))\b",
    re.IGNORECASE,
)

_TRAILER = re.compile(
    r"^\s*(?:[A-Za-z][\w-]*-by|fixes|fixed|closes|closed|resolves|refs?|see|bug|issue|"
    r"change-id|reviewed-on|pr-url|cherry-picked from[^:]*|related(?: to)?|follow-?up(?: to)?)"
    r"\b[\s:]",
    re.IGNORECASE,
)
_REFS_ONLY = re.compile(
    r"^[\s(]*(?:(?:#\d+|https?://\S+|[\w.-]+/[\w.-]+#\d+|[0-9a-f]{7,40})[\s,.;)]*)+$"
)
_BULLET = re.compile(r"^\s*[*+-]\s+(.*)$")


def _prose(body: str) -> str:
    """What of a commit body is prose: no trailers, references, pasted blocks or squashed
    subjects (a bullet of a few words with no full stop)."""
    kept = []
    fenced = False
    for line in body.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith(("    ", "\t")) or not line.strip():
            continue
        if _TRAILER.match(line) or _REFS_ONLY.match(line):
            continue
        bullet = _BULLET.match(line)
        if (
            bullet
            and len(bullet.group(1).split()) <= 12
            and not bullet.group(1).rstrip().endswith(".")
        ):
            continue
        kept.append(line.strip())
    return " ".join(kept)


def _explaining_prose(chars: int) -> Callable[..., Any]:
    async def explaining(db: Any, candidates: Any) -> set[int]:
        seqs = [c.seq for c in candidates if c.kind == "git_commit"]
        if not seqs:
            return set()
        rows = await db.fetchall(
            "select seq, substr(body, length(title) + 1, 8000) from nodes where seq in "
            "(select value from json_each(?))",
            (json.dumps(seqs),),
        )
        return {int(seq) for seq, body in rows if len(_prose(body or "")) > chars}

    return explaining


_SENTENCE = re.compile(r"[^.?!]*\?")


def _asked_sentence(mode: str) -> Callable[..., Any]:
    """The vector arm with the question's asking sentences embedded beside the whole text,
    each row at its nearer distance (``min``), or in place of it (``only``)."""
    from nexusmem_core.retrieval import semantic

    original = semantic.nearest

    async def nearest(engine: Any, query: Any, limit: int, as_of: Any = None) -> Any:
        asked = " ".join(m.group(0).strip() for m in _SENTENCE.finditer(query.text))
        if not asked or len(asked) > 0.8 * len(query.text.strip()):
            return await original(engine, query, limit, as_of)
        from nexusmem_core.store import vectors

        embedder = engine.embedder(for_query=True)
        scan = await engine.db.beside()
        whole, used, model = await original(engine, query, limit, as_of)
        if used != "used":
            return whole, used, model
        (vector,) = await embedder.embed([asked])
        depth = limit if as_of is None else limit * 4
        part = await vectors.knn(scan, engine.project_id, vector, depth)
        if mode == "only":
            return part, used, model
        best: dict[int, float] = {}
        for seq, d in [*whole, *part]:
            best[seq] = min(d, best.get(seq, d))
        return sorted(best.items(), key=lambda x: x[1])[:depth], used, model

    return nearest


R = "nexusmem_core.retrieval"
VARIANTS: dict[str, Callable[[], list[Patch]]] = {
    "default": list,
    # the question-kind lifts (asked.py), all and one at a time
    "no-kind-lifts": lambda: [
        (f"{R}.search", f, _same)
        for f in ("lift_releases", "lift_howto", "lift_commits", "lift_reasons")
    ],
    "no-lift-release": lambda: [(f"{R}.search", "lift_releases", _same)],
    "no-lift-howto": lambda: [(f"{R}.search", "lift_howto", _same)],
    "no-lift-commit": lambda: [(f"{R}.search", "lift_commits", _same)],
    "no-lift-why": lambda: [(f"{R}.search", "lift_reasons", _same)],
    "lift-1.3": lambda: [(f"{R}.asked", "LIFT", 1.3), (f"{R}.pairs", "LIFT", 1.3)],
    "lift-2.0": lambda: [(f"{R}.asked", "LIFT", 2.0), (f"{R}.pairs", "LIFT", 2.0)],
    # reverts: pairing, the undone lift, the kind asked for ranked among itself
    "no-pairs": lambda: [(f"{R}.search", "pair_reverts", _same_async)],
    "no-undone-lift": lambda: [(f"{R}.pairs", "LIFT", 1.0)],
    "no-asked-fusion": lambda: [(f"{R}.lexical", "_asked_for", _nothing)],
    # coverage and its parts
    "no-coverage": lambda: [(f"{R}.lexical", "cover", _uncovered)],
    "no-explained": lambda: [(f"{R}.asked", "EXPLAINED", 1.0)],
    "explained-1.2": lambda: [(f"{R}.asked", "EXPLAINED", 1.2)],
    "explained-2": lambda: [(f"{R}.asked", "EXPLAINED", 2.0)],
    "no-unit-cover": lambda: [(f"{R}.coverage", "UNITS", False)],
    # grouping: a commit's own changelog and doc diffs lend it their relevance
    "lend-prose": lambda: [(f"{R}.group", "_is_prose", lambda *_: False)],
    "diffs-0.7": lambda: [(f"{R}.search", "group_commits", _diffs_lend(0.7))],
    "diffs-0.5": lambda: [(f"{R}.search", "group_commits", _diffs_lend(0.5))],
    # the arms' fusion constant (hybrid only: run with --both)
    "fusion-5": lambda: _fusion(5),
    "fusion-20": lambda: _fusion(20),
    "fusion-60": lambda: _fusion(60),
    "vector-0.5": lambda: _vector_weight(0.5),
    "vector-1.5": lambda: _vector_weight(1.5),
    "vector-2": lambda: _vector_weight(2.0),
    # how many candidates the arms hand on
    "candidates-50": lambda: [(f"{R}.search", "CANDIDATES", 50)],
    "candidates-200": lambda: [(f"{R}.search", "CANDIDATES", 200)],
    "no-copies": lambda: [(f"{R}.search", "drop_copies", _same_async)],
    "no-follow": lambda: [(f"{R}.search", "follow", _same_async)],
    # a release question without a changelog: the version bump after its best commits
    "no-shipped": lambda: [(f"{R}.search", "shipped_in", _unshipped)],
    # "I tried X", "is it ever flushed" are not questions about something undone
    "undone-narrow": lambda: [(f"{R}.asked", "_UNDONE", _NARROW_UNDONE)],
    # priors
    "no-recency": lambda: [(f"{R}.rank", "RECENCY_EXPONENT", 0.0)],
    "no-signal": lambda: [(f"{R}.rank", "SIGNAL_EXPONENT", 0.0)],
    # fields: subject (title), body, paths, names
    "title-2": lambda: _weights(2.0, 1.0, 0.5, 0.5),
    "title-6": lambda: _weights(6.0, 1.0, 0.5, 0.5),
    "names-1": lambda: _weights(4.0, 1.0, 0.5, 1.0),
    "names-0.25": lambda: _weights(4.0, 1.0, 0.5, 0.25),
    "paths-1": lambda: _weights(4.0, 1.0, 1.0, 0.5),
    "paths-0.25": lambda: _weights(4.0, 1.0, 0.25, 0.5),
    "body-2": lambda: _weights(4.0, 2.0, 0.5, 0.5),
    "title-3": lambda: _weights(3.0, 1.0, 0.5, 0.5),
    "names-0": lambda: _weights(4.0, 1.0, 0.5, 0.0),
    # tried 2026-12-07 and not kept (docs/retrieval.md): the vector arm also embedding the
    # question's asking sentences (hybrid only: run with --both), and a why-question's
    # explaining commit judged by its body's prose alone (no trailers, references, pasted
    # blocks or squashed subjects)
    "asked-min": lambda: [(f"{R}.semantic", "nearest", _asked_sentence("min"))],
    "asked-only": lambda: [(f"{R}.semantic", "nearest", _asked_sentence("only"))],
    "explained-prose": lambda: [(f"{R}.search", "_explaining", _explaining_prose(80))],
    "explained-prose-40": lambda: [(f"{R}.search", "_explaining", _explaining_prose(40))],
    "explained-prose-160": lambda: [(f"{R}.search", "_explaining", _explaining_prose(160))],
}


@contextlib.contextmanager
def applied(name: str) -> Iterator[None]:
    """The engine as variant ``name``: its attributes set, and put back after."""
    saved = []
    try:
        for module_name, attr, value in VARIANTS[name]():
            module = importlib.import_module(module_name)
            saved.append((module, attr, getattr(module, attr)))
            setattr(module, attr, value)
        yield
    finally:
        for module, attr, value in reversed(saved):
            setattr(module, attr, value)


# ----------------------------------------------------------------------------- measuring


_IDENT = re.compile(r"`([^`]+)`|\b(\w*(?:_\w+|[a-z][A-Z]\w*|\(\))|\w+\.\w+\w*)")


def names_identifier(clone: Path, query: str, targets: list[str]) -> bool:
    """Whether the question types an identifier that a changed line of a target holds."""
    found = {m.group(1) or m.group(2) for m in _IDENT.finditer(query)}
    found = {f.strip("()") for f in found if f and len(f.strip("()")) >= 3}
    if not found:
        return False
    for target in targets:
        sha = target.split(":", 1)[0]
        if not re.fullmatch(r"[0-9a-f]{40}", sha):
            continue
        patch = subprocess.run(
            ["git", "-C", str(clone), "show", "--format=", "-U0", sha],
            capture_output=True,
            text=True,
            errors="replace",
        ).stdout
        changed = "\n".join(
            ln for ln in patch.splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")
        )
        if any(f in changed for f in found):
            return True
    return False


async def measure(
    names: list[str], variants: list[str], hybrid: bool, both: bool = False
) -> dict[str, Any]:
    """Every question's reciprocal rank under every variant, and grep's; with ``both``, the
    variants run with both arms (the vector arm needs ``hybrid``'s vectors)."""
    home = run.OUT / "home"
    home.mkdir(parents=True, exist_ok=True)
    questions: list[dict[str, Any]] = []
    rr: dict[str, list[float]] = {v: [] for v in [*variants, "grep"]}
    if hybrid:
        rr["hybrid"] = []
    for labelled in run.load_sets(names, run.HERE):
        name, queries = labelled["repo"], labelled["queries"]
        clone = run.ensure_clone(name)
        await run.ensure_memory(name, clone, home, hybrid or both, resync=False)
        for q in queries:
            questions.append(
                {
                    "repo": name,
                    "id": q["id"],
                    "kind": q["kind"],
                    "named": names_identifier(clone, q["query"], q["targets"]),
                }
            )
        for ranking, q in zip(run.baseline_rankings(clone, queries), queries, strict=True):
            rr["grep"].append(run.score(ranking, q["targets"])["rr"])
        for variant in variants:
            with applied(variant):
                rankings, _ = await run.engine_rankings(clone, home, queries, both, 8000)
            for ranking, q in zip(rankings, queries, strict=True):
                rr[variant].append(run.score(ranking, q["targets"])["rr"])
        if hybrid:
            rankings, _ = await run.engine_rankings(clone, home, queries, True, 8000)
            for ranking, q in zip(rankings, queries, strict=True):
                rr["hybrid"].append(run.score(ranking, q["targets"])["rr"])
        print(f"{name}: {len(queries)} questions, {len(variants)} variant(s)", file=sys.stderr)
    return {"questions": questions, "rr": rr}


# ----------------------------------------------------------------------------- judging


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def held_out(data: dict[str, Any], variants: list[str]) -> tuple[list[float], dict[str, str]]:
    """Each question's reciprocal rank under the variant chosen without its corpus, and the
    choice made for each corpus."""
    qs, rr = data["questions"], data["rr"]
    repos = sorted({q["repo"] for q in qs})
    out = [0.0] * len(qs)
    chosen = {}
    for repo in repos:
        others = [i for i, q in enumerate(qs) if q["repo"] != repo]
        best = max(variants, key=lambda v: (_mean([rr[v][i] for i in others]), v == "default"))
        chosen[repo] = best
        for i, q in enumerate(qs):
            if q["repo"] == repo:
                out[i] = rr[best][i]
    return out, chosen


def interval(diffs: list[float], strata: list[str], seed: int = 48) -> tuple[float, float]:
    """A 95% bootstrap interval of the mean of ``diffs``, resampled within each stratum."""
    rng = random.Random(seed)
    groups: dict[str, list[float]] = {}
    for d, s in zip(diffs, strata, strict=True):
        groups.setdefault(s, []).append(d)
    means = []
    for _ in range(BOOTSTRAP):
        total = 0.0
        for values in groups.values():
            total += sum(rng.choice(values) for _ in values)
        means.append(total / len(diffs))
    means.sort()
    return means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    return run.table(headers, rows)


def report(data: dict[str, Any], variants: list[str]) -> str:
    qs, rr = data["questions"], data["rr"]
    loo, chosen = held_out(data, variants)
    columns = {"in sample": rr["default"], "held out": loo, "grep": rr["grep"]}
    if "hybrid" in rr:
        columns["hybrid"] = rr["hybrid"]

    def cells(index: list[int]) -> list[str]:
        means = [f"{_mean([col[i] for i in index]):.3f}" for col in columns.values()]
        return [str(len(index)), *means]

    repos = sorted({q["repo"] for q in qs})
    rows = []
    for repo in repos:
        for group, kinds in GROUPS.items():
            index = [i for i, q in enumerate(qs) if q["repo"] == repo and q["kind"] in kinds]
            if index:
                rows.append([f"{repo} {group}", *cells(index)])
        rows.append([f"**{repo}**", *cells([i for i, q in enumerate(qs) if q["repo"] == repo])])
    for group, kinds in GROUPS.items():
        rows.append([f"all {group}", *cells([i for i, q in enumerate(qs) if q["kind"] in kinds])])
    for label, named in (("names identifier", True), ("does not", False)):
        rows.append([label, *cells([i for i, q in enumerate(qs) if q["named"] == named])])
    blind = [i for i, q in enumerate(qs) if q["repo"] in BLIND]
    rows.append(["blind corpora", *cells(blind)])
    rows.append(["**all**", *cells(list(range(len(qs))))])
    first = _table(["MRR@10", "n", *columns], rows)
    picks = ", ".join(f"{repo}: {v}" for repo, v in chosen.items())

    strata = [q["repo"] for q in qs]
    commit = [i for i, q in enumerate(qs) if q["kind"] in COMMIT_KINDS]
    stage_rows = []
    for v in variants:
        if v == "default":
            continue
        diffs = [rr[v][i] - rr["default"][i] for i in range(len(qs))]
        lo, hi = interval(diffs, strata)
        bd = [diffs[i] for i in blind]
        blo, bhi = interval(bd, [strata[i] for i in blind]) if bd else (0.0, 0.0)
        stage_rows.append(
            [
                v,
                f"{_mean(rr[v]):.3f}",
                f"{_mean(diffs):+.3f} [{lo:+.3f}, {hi:+.3f}]",
                f"{_mean(bd):+.3f} [{blo:+.3f}, {bhi:+.3f}]" if bd else "-",
                f"{_mean([diffs[i] for i in commit]):+.3f}",
            ]
        )
    second = _table(
        ["variant", "all", "vs default, all (95%)", "vs default, blind (95%)", "commit qs"],
        stage_rows,
    )
    return "\n\n".join(
        [first, f"held-out choice per corpus: {picks}", "Each variant against the default:", second]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", nargs="*", default=list(run.ORIGINS), choices=list(run.ORIGINS))
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--hybrid", action="store_true", help="score the vector arm too")
    parser.add_argument("--both", action="store_true", help="run the variants with both arms")
    parser.add_argument("--json", type=Path, default=run.OUT / "loo.json")
    parser.add_argument("--report", action="store_true", help="re-report the saved --json")
    args = parser.parse_args()
    variants = ["default", *[v for v in args.variants if v != "default"]]
    if args.report:
        data = json.loads(args.json.read_text())
    else:
        data = asyncio.run(measure(args.repo, variants, args.hybrid, args.both))
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data))
    print(report(data, [v for v in variants if v in data["rr"]]))


if __name__ == "__main__":
    main()
