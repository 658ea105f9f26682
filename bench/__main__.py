"""The speed set: every path a user waits for, on the real corpora and generated repositories.

    .venv/bin/python -m bench [--sizes corpora 10k 50k] [--runs 5] [--bytecode both|on|off]
                              [--install editable|wheel|both] [--paths sync query mcp hooks]

For each repository and each of ``--runs`` runs: the git floor, then per variant (install x
bytecode, interleaved) a first, a no-op and an incremental sync in a throwaway clone, then
``nexusmem query`` and an MCP server session on that clone's memory. The hooks come last.
One Markdown table per path goes to stdout (progress to stderr), and the raw samples to
bench/out/bench-set.json. See bench/README.md for what each table means.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the benchmarks import each other
import anyio
import measure
import report
from _common import ORIGINS, OUT, SPEED_CORPORA, ensure_corpus, ensure_repo, git, throwaway_clone
from measure import Samples, Target
from variants import Variant, variants

PATHS = ("sync", "query", "mcp", "hooks")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not the usage block
        self.exit(2, f"python -m bench: {message} (see --help)\n")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        nargs="+",
        default=["corpora", "10k", "50k"],
        metavar="SIZE",
        help="'corpora' (all eleven), a corpus name, or a generated repository's commit count "
        "(10k, 50k, 100k, 2500); default: corpora 10k 50k",
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per variant (median, p95)")
    parser.add_argument("--bytecode", choices=["both", "on", "off"], default="both")
    parser.add_argument("--install", choices=["editable", "wheel", "both"], default="editable")
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--questions", type=int, default=6, help="queries per run")
    parser.add_argument("--warm", type=int, default=12, help="MCP searches after the first")
    parser.add_argument("--hook-iterations", type=int, default=100, help="Enters per shell")
    parser.add_argument("--hook-runs", type=int, default=20, help="agent hook calls per event")
    parser.add_argument("--shells", nargs="+", default=["bash", "zsh", "fish"])
    parser.add_argument("--seed", type=int, default=1, help="of the generated repositories")
    parser.add_argument("--ollama", action="store_true", help="leave OLLAMA_HOST as it is")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.questions < 1 or args.warm < 1:
        parser.error("--runs, --questions and --warm must be at least 1")
    try:
        args.sizes = [size_of(token) for token in args.sizes]
    except ValueError as err:
        parser.error(f"argument --sizes: {err}")
    return args


def size_of(token: str) -> str | int:
    """A corpus name, "corpora", or a commit count ("10k" is 10000)."""
    if token == "corpora" or token in ORIGINS:
        return token
    match = re.fullmatch(r"(\d+)(k?)", token.lower())
    if not match or int(match.group(1)) == 0:
        raise ValueError(
            f"{token!r} is neither 'corpora', a corpus ({', '.join(ORIGINS)}) nor a commit "
            "count such as 10k"
        )
    return int(match.group(1)) * (1000 if match.group(2) else 1)


def targets(sizes: list[str | int], seed: int) -> list[Target]:
    names = [n for s in sizes for n in (SPEED_CORPORA if s == "corpora" else [s])]
    out = []
    for name in dict.fromkeys(names):
        if isinstance(name, int):
            repo, label, generated = ensure_repo(name, seed), f"generated {name // 1000}k", True
            label = label if name % 1000 == 0 else f"generated {name}"
        else:
            repo, label, generated = ensure_corpus(name), name, False
        count = int(git(repo, "rev-list", "--count", "HEAD"))
        out.append(Target(label, repo, count, generated))
    return out


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


class Bench:
    """The runs, interleaved: per repository, per run, each path once per variant."""

    def __init__(self, args: argparse.Namespace, chosen: list[Variant], scratch: Path) -> None:
        self.args, self.variants, self.scratch = args, chosen, scratch
        self.samples: dict[str, dict[str, Samples]] = {}
        self.floors: dict[str, list[dict[str, float]]] = {}
        self.questions: dict[str, list[str]] = {}
        self.count = 0

    def env(self, variant: Variant, home: Path) -> dict[str, str]:
        return variant.env(dict(os.environ), home, ollama=self.args.ollama)

    def fresh(self, target: Target) -> tuple[Path, Path]:
        """A throwaway clone of ``target`` and a NEXUSMEM_HOME, both under the scratch dir."""
        self.count += 1
        place = self.scratch / f"{self.count:04d}"
        place.mkdir()
        return throwaway_clone(target.repo, place / "repo"), place / "home"

    def one_run(self, target: Target, record: bool = True, reverse: bool = False) -> None:
        """The floor, then every variant's syncs, queries and MCP session once; ``reverse``
        takes the variants the other way round (ABCD DCBA ...: a drift hits them alike)."""
        paths, kept = self.args.paths, None
        order = self.variants[::-1] if reverse else self.variants
        if record and "sync" in paths:
            env = self.env(order[0], self.scratch / "floor-home")
            self.floors.setdefault(target.name, []).append(measure.floor(target.repo, env))
        for variant in order:
            if "sync" not in paths and kept is not None:
                break
            clone, home = self.fresh(target)
            result = measure.sync_paths(clone, variant, self.env(variant, home))
            if record and "sync" in paths:
                self.keep(target, variant, result)
            if kept is None:
                kept = (clone, home)
            else:
                shutil.rmtree(clone.parent, ignore_errors=True)
        assert kept is not None
        clone, home = kept
        if target.name not in self.questions:
            self.questions[target.name] = measure.questions_for(
                target.name, clone, self.args.questions, self.args.seed
            )
        questions = self.questions[target.name]
        for variant in order if "query" in paths else []:
            times = measure.query_ms(clone, variant, self.env(variant, home), questions)
            if record:
                self.at(target, variant).query_ms += times
        for variant in order if "mcp" in paths else []:
            env = self.env(variant, home)
            bare = measure.mcp_bare_import(variant, env, clone)
            session = anyio.run(measure.mcp_session, clone, variant, env, questions, self.args.warm)
            if record:
                self.at(target, variant).bare_ms.append(bare)
                self.at(target, variant).mcp.append(session)
        shutil.rmtree(clone.parent, ignore_errors=True)

    def at(self, target: Target, variant: Variant) -> Samples:
        return self.samples.setdefault(target.name, {}).setdefault(variant.label, Samples())

    def keep(self, target: Target, variant: Variant, result: measure.SyncRun) -> None:
        s = self.at(target, variant)
        s.first.append(result.first)
        s.noop.append(result.noop)
        s.incremental.append(result.incremental)
        say(
            f"  {target.name}, {variant.label}: first {result.first['seconds']:.2f} s, "
            f"no-op {result.noop['seconds']:.3f} s, "
            f"incremental {result.incremental['seconds']:.3f} s"
        )


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    started = time.perf_counter()
    before = uptime()
    installs = ["editable", "wheel"] if args.install == "both" else [args.install]
    bytecodes = ["on", "off"] if args.bytecode == "both" else [args.bytecode]
    chosen = variants(installs, bytecodes)
    repos = targets(args.sizes, args.seed) if set(args.paths) - {"hooks"} else []
    scratch = Path(tempfile.mkdtemp(prefix="bench-set-", dir=OUT))  # beside the caches: hard links
    bench = Bench(args, chosen, scratch)
    hooks: dict[str, Any] = {}
    try:
        if repos:
            smallest = min(repos, key=lambda t: t.commits)
            say(f"warm-up: every variant once on {smallest.name} (bytecode, page cache)")
            bench.one_run(smallest, record=False)
        for target in repos:
            for i in range(args.runs):
                say(f"{target.name}: run {i + 1}/{args.runs} ({uptime()})")
                bench.one_run(target, reverse=i % 2 == 1)
        if "hooks" in args.paths:
            hooks = run_hooks(args, chosen)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    after = uptime()
    dump(bench, hooks)
    report.everything(bench.floors, bench.samples, repos, chosen, hooks, args, (before, after))
    say(f"done in {time.perf_counter() - started:.0f} s")
    return 0


def run_hooks(args: argparse.Namespace, chosen: list[Variant]) -> dict[str, Any]:
    """The shell prompt (per shell, bytecode variants interleaved run by run) and the agent
    hook (bench_agent.py's own on/off pair), editable install only."""
    editable = [v for v in chosen if v.install == "editable"]
    shells = [s for s in args.shells if shutil.which(s)]
    prompt: dict[str, dict[str, dict[str, list[float]]]] = {}
    per_run = max(1, args.hook_iterations // args.runs)
    for i in range(args.runs):
        for shell in shells:
            for variant in editable:
                say(f"hooks: {shell} prompt, {variant.label}, run {i + 1}/{args.runs}")
                times = measure.shell_prompt(variant, shell, per_run)
                into = prompt.setdefault(shell, {}).setdefault(variant.bytecode, {})
                for kind, values in times.items():
                    into.setdefault(kind, []).extend(values)
    say("hooks: agent hook (bench_agent.py's memory) ...")
    return {"prompt": prompt, "agent": measure.agent_hook(args.hook_runs, args.seed)}


def dump(bench: Bench, hooks: dict[str, Any]) -> None:
    raw = {
        "floors": bench.floors,
        "questions": bench.questions,
        "samples": {t: {v: asdict(s) for v, s in by.items()} for t, by in bench.samples.items()},
        "hooks": hooks,
    }
    (OUT / "bench-set.json").write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    sys.exit(main())
