"""Import graph: what building it costs, on this repository and on big synthetic ones.

    .venv/bin/python bench/bench_structure.py [--runs 3] [--files 20000] [--site-packages]
                                              [-C PATH ...] [--regen]

Targets: this repository; ``gen_repo.py``'s 10,000-commit repository (its Python is made-up
text that does not parse as a whole module, but its import lines do); a generated tree of
``--files`` files in the five languages (about half Python, the rest TypeScript, Go, Java and
Rust), every file importing three to six others, with commented-out imports and strings that
read like imports; with ``--site-packages``, the ``.py`` files of this virtualenv's
site-packages, hard-linked into a git repository under ``bench/out/`` (real third-party code);
and any ``-C`` repository. Generated trees are cached under ``bench/out/``.

For each, in process, medians over ``--runs``:

- **list**: ``git ls-files`` and a stat of every source file (what an unchanged sync costs);
- **build, cold**: every source file read and its imports extracted and resolved;
- **build, cached**: the same with every file's extraction cached (one file changed: this plus
  that file's read);
- **sync, first / unchanged / one file touched**: the sync step itself into a fresh database in a
  temporary directory: the cold build and the insert, a digest hit, and a rebuild from the cache
  that writes only the changed rows.

A second table checks the Python extractor (each import statement parsed alone) against
``ast.parse`` of whole modules over the same files: the imports must be the same, and it gives
both times.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from _common import OUT, ROOT, ensure_repo, machine, table

from nexusmem_core.collectors.git import read_repo
from nexusmem_core.collectors.structure import build_graph, list_tree
from nexusmem_core.collectors.structure.python import extract
from nexusmem_core.collectors.structure.step import sync_structure
from nexusmem_core.config import ProjectConfig, Settings
from nexusmem_core.engine import Engine
from nexusmem_core.models import SyncReport
from nexusmem_core.store.db import open_database

TREE_VERSION = 1  # bump when the generated tree changes
LANG_SHARE = (("py", 0.5), ("ts", 0.2), ("go", 0.12), ("java", 0.1), ("rs", 0.08))
WORDS = "order cart user token price stock queue cache event ledger report batch".split()


# ------------------------------------------------------------------------- generated tree


def _body(rng: random.Random, comment: str, lines: int) -> list[str]:
    out = []
    for i in range(lines):
        word = rng.choice(WORDS)
        out.append(f"{comment} step {i}: the {word} is checked before it is stored")
    return out


def _python(rng: random.Random, pkgs: int, me: tuple[int, int], per: int) -> str:
    lines = ['"""Helpers for this part of the service.', "", "    from os import path", '"""']
    lines += ["from __future__ import annotations", "", "import json", "import requests"]
    for _ in range(rng.randint(3, 6)):
        p, m = rng.randrange(pkgs), rng.randrange(per)
        if p == me[0] and rng.random() < 0.5:
            lines.append(f"from .m{m} import handle as h{m}")
        else:
            lines.append(f"from app.p{p} import m{m}")
    lines.append(f"# from app.p{rng.randrange(pkgs)} import m0")
    lines.append('TEXT = "import app.p0.m0"')
    for i in range(rng.randint(15, 40)):
        word = rng.choice(WORDS)
        lines += ["", "", f"def handle_{word}_{i}(value):", f'    """Handle one {word}."""']
        lines += [f"    value = value + {i}  # {word}", "    return value"]
    return "\n".join(lines) + "\n"


def _ts(rng: random.Random, pkgs: int, me: tuple[int, int], per: int) -> str:
    lines = ['import { useState } from "react";']
    for _ in range(rng.randint(3, 6)):
        p, m = rng.randrange(pkgs), rng.randrange(per)
        lines.append(f'import {{ c{m} }} from "../f{p}/c{m}";')
    lines += ['// import { old } from "../f0/c0";', "const s = \"import x from '../f0/c1'\";"]
    for i in range(rng.randint(15, 40)):
        word = rng.choice(WORDS)
        lines += [f"export function {word}{i}(v: number): number {{", f"  return v + {i};", "}"]
    return "\n".join(lines) + "\n"


def _go(rng: random.Random, pkgs: int, me: tuple[int, int], per: int) -> str:
    imports = {f'\t"example.com/big/go/p{rng.randrange(pkgs)}"' for _ in range(rng.randint(3, 6))}
    imports.discard(f'\t"example.com/big/go/p{me[0]}"')
    lines = [f"package p{me[0]}", "", "import (", '\t"fmt"', *sorted(imports), ")", ""]
    lines += ['// import "example.com/big/go/p0"', 'var s = `import "example.com/big/go/p1"`']
    for i in range(rng.randint(15, 40)):
        lines += [f"func F{me[1]}x{i}(v int) int {{", f"\treturn v + {i}", "}"]
    return "\n".join(lines) + "\n"


def _java(rng: random.Random, pkgs: int, me: tuple[int, int], per: int) -> str:
    lines = [f"package com.big.p{me[0]};", "", "import java.util.List;"]
    for _ in range(rng.randint(3, 6)):
        lines.append(f"import com.big.p{rng.randrange(pkgs)}.C{rng.randrange(per)};")
    lines += ["// import com.big.p0.C0;", f"public class C{me[1]} {{"]
    lines += ['    String s = "import com.big.p0.C1;";']
    for i in range(rng.randint(15, 40)):
        lines += [f"    int f{i}(int v) {{ return v + {i}; }}"]
    return "\n".join(lines) + "\n}\n"


def _rust(rng: random.Random, pkgs: int, me: tuple[int, int], per: int) -> str:
    lines = ["use std::collections::HashMap;"]
    for _ in range(rng.randint(3, 6)):
        lines.append(f"use crate::p{rng.randrange(pkgs)}::m{rng.randrange(per)}::Thing;")
    lines += ["// use crate::p0::m0::Thing;", 'const S: &str = "mod fake;";']
    for i in range(rng.randint(15, 40)):
        lines += [f"pub fn f{i}<'a>(v: &'a str) -> &'a str {{ v }}"]
    return "\n".join(lines) + "\n"


def generate_tree(dest: Path, files: int, seed: int) -> None:
    """``files`` source files in packages of 20, each importing three to six others."""
    rng = random.Random(seed)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    written: dict[str, str] = {"go.mod": "module example.com/big\n", "Cargo.toml": "[package]\n"}
    for lang, share in LANG_SHARE:
        count, per = max(20, int(files * share)), 20
        pkgs = count // per
        for p in range(pkgs):
            for m in range(per):
                me = (p, m)
                if lang == "py":
                    written[f"app/p{p}/__init__.py"] = ""
                    written[f"app/p{p}/m{m}.py"] = _python(rng, pkgs, me, per)
                elif lang == "ts":
                    written[f"web/src/f{p}/c{m}.ts"] = _ts(rng, pkgs, me, per)
                elif lang == "go":
                    written[f"go/p{p}/f{m}.go"] = _go(rng, pkgs, me, per)
                elif lang == "java":
                    path = f"java/src/main/java/com/big/p{p}/C{m}.java"
                    written[path] = _java(rng, pkgs, me, per)
                else:
                    written[f"src/p{p}/m{m}.rs"] = _rust(rng, pkgs, me, per)
            if lang == "rs":
                mods = "".join(f"pub mod m{m};\n" for m in range(per))
                written[f"src/p{p}/mod.rs"] = mods
        if lang == "rs":
            written["src/lib.rs"] = "".join(f"pub mod p{p};\n" for p in range(pkgs))
    for path, text in written.items():
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    _commit(dest)


def _commit(dest: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
    env |= {"GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "tree"]):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)


def ensure_tree(files: int, seed: int, regen: bool) -> Path:
    dest = OUT / f"structure-{files}-s{seed}-v{TREE_VERSION}"
    if regen or not (dest / ".git").exists():
        print(f"generating {dest.name} ...", file=sys.stderr, flush=True)
        generate_tree(dest, files, seed)
    return dest


def ensure_site_packages(regen: bool) -> Path:
    """This virtualenv's ``.py`` files, hard-linked (copied across file systems) into a repo."""
    dest = OUT / "structure-site-packages"
    if not regen and (dest / ".git").exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    source = Path(sysconfig.get_paths()["purelib"])
    print(f"linking the .py files of {source} ...", file=sys.stderr, flush=True)
    for path in source.rglob("*.py"):
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copyfile(path, target)
    _commit(dest)
    return dest


# ------------------------------------------------------------------------------ measuring


def timed(func: Any, runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


async def sync_costs(root: Path, runs: int) -> tuple[float, float, float]:
    """The sync step into a fresh database: first, unchanged, one file touched (medians)."""
    repo = await read_repo(root)
    first, unchanged, touched = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            async with open_database(Path(tmp) / "memory.db", vectors=False) as db:
                engine = Engine(Settings(home=Path(tmp)), repo, ProjectConfig(), db)
                for bucket in (first, unchanged):
                    started = time.perf_counter()
                    async with db.transaction():
                        await sync_structure(engine, SyncReport("bench", str(root)))
                    bucket.append(time.perf_counter() - started)
                listing = await list_tree(root)
                victim = root / next(iter(listing.candidates))
                before = victim.stat()
                os.utime(victim)  # a new mtime: the digest changes, one file is read again
                try:
                    started = time.perf_counter()
                    async with db.transaction():
                        await sync_structure(engine, SyncReport("bench", str(root)))
                    touched.append(time.perf_counter() - started)
                finally:
                    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))
    return statistics.median(first), statistics.median(unchanged), statistics.median(touched)


def measure(name: str, root: Path, runs: int) -> dict[str, Any]:
    print(f"measuring {name} ...", file=sys.stderr, flush=True)
    list_s, listing = timed(lambda: asyncio.run(list_tree(root)), runs)
    cold_s, (graph, cache) = timed(lambda: build_graph(listing, {}), runs)
    cached_s, _ = timed(lambda: build_graph(listing, cache), runs)
    first, unchanged, touched = asyncio.run(sync_costs(root, runs))
    return {
        "name": name,
        "listed": len(listing.tree.paths),
        "sources": graph.files,
        "edges": len(graph.edges),
        "by_lang": graph.by_lang,
        "unparsed": graph.unparsed,
        "list": list_s,
        "cold": cold_s,
        "cached": cached_s,
        "first": first,
        "unchanged": unchanged,
        "touched": touched,
        "root": root,
    }


def python_check(root: Path) -> list[Any]:
    """Statement-wise extraction against whole-module ``ast.parse``, on the same files."""
    listing = asyncio.run(list_tree(root))
    texts = [
        (root / path).read_text("utf-8", "replace")
        for path in listing.candidates
        if path.endswith(".py")
    ]
    same = differ = whole_failed = 0
    t_ast = t_ours = 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for text in texts:
            started = time.perf_counter()
            try:
                reference = _whole_module(text)
            except (SyntaxError, ValueError, RecursionError):
                reference = None
            t_ast += time.perf_counter() - started
            started = time.perf_counter()
            ours, _ = extract(text)
            t_ours += time.perf_counter() - started
            if reference is None:
                whole_failed += 1
            elif sorted(map(repr, ours)) == sorted(map(repr, reference)):
                same += 1
            else:
                differ += 1
    size = sum(len(t) for t in texts) / 1e6
    return [len(texts), f"{size:.1f}", whole_failed, same, differ, f"{t_ast:.2f}", f"{t_ours:.2f}"]


def _whole_module(text: str) -> list[list[Any]]:
    found: list[list[Any]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [[0, alias.name, []] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append([node.level, node.module, [a.name for a in node.names]])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--files", type=int, default=20_000, help="generated tree size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--site-packages", action="store_true", help="also this venv's .py")
    parser.add_argument("-C", dest="extra", action="append", default=[], metavar="PATH")
    parser.add_argument("--regen", action="store_true", help="rebuild the generated trees")
    args = parser.parse_args()
    targets = [
        ("this repository", ROOT),
        ("gen_repo 10k commits", ensure_repo(10_000, regen=args.regen)),
        (f"generated, {args.files:,} files", ensure_tree(args.files, args.seed, args.regen)),
    ]
    if args.site_packages:
        targets.append(("site-packages (.py)", ensure_site_packages(args.regen)))
    targets += [(path, Path(path)) for path in args.extra]
    results = [measure(name, root, args.runs) for name, root in targets]
    print(f"## Import graph build cost\n\n{machine()}\n")
    rows = [
        [
            r["name"],
            f"{r['listed']:,}",
            f"{r['sources']:,}",
            f"{r['edges']:,}",
            f"{r['list']:.2f}",
            f"{r['cold']:.2f}",
            f"{r['cached']:.2f}",
            f"{r['first']:.2f}",
            f"{r['unchanged']:.2f}",
            f"{r['touched']:.2f}",
        ]
        for r in results
    ]
    headers = ["repository", "files", "sources", "edges", "list s", "build s", "cached s"]
    headers += ["sync first s", "sync unchanged s", "sync 1 touched s"]
    print(table(headers, rows) + "\n")
    langs = [[r["name"], ", ".join(f"{k} {v:,}" for k, v in r["by_lang"].items())] for r in results]
    print(table(["repository", "edges by language"], langs, ["l", "l"]) + "\n")
    checks = [[r["name"], *python_check(r["root"])] for r in results]
    headers = ["repository", ".py files", "MB", "ast fails", "same", "differ", "ast s", "ours s"]
    print(table(headers, checks))


if __name__ == "__main__":
    main()
