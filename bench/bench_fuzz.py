"""Fuzz every parser for a fixed time: executions, crashes, the slowest input, peak memory.

    .venv/bin/python bench/bench_fuzz.py [--seconds 20] [--only NAME ...] [--list]

The parsers and their inputs are the fuzz suite's (``TARGETS`` in ``tests/fuzz/test_*.py``):
structured inputs (valid-ish records, mutated; fragments of each format, repeated) and the
same checks the tests make. Here each parser runs in a process of its own for ``--seconds``,
as rounds of Hypothesis runs of 200 examples (generation only, no shrinking, no example
database), so the figures are the parser's alone:

* **executions**: inputs checked;
* **crashes**: inputs whose check failed: an exception, a broken invariant, or a time bound
  exceeded (``tests/fuzz/bounds.SLOW`` per input here, where the tests only stop hangs); the
  first few are printed to stderr, and each is kept whole in ``bench/out/fuzz-crashes/``;
* **max ms/input**: the slowest single check (parsing and its checks, the database write
  included where there is one);
* **peak RSS**: the process's maximum resident set (``getrusage``), and how much of it came
  after start-up (imports, and the database where the parser needs one).

A Markdown table goes to stdout, progress to stderr. Nothing outside a temporary directory
is written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROUND = 200  # examples per Hypothesis run; a new run draws new random inputs


def targets() -> dict[str, tuple[str, Any]]:
    """Every parser of the fuzz suite: name -> (module, Target)."""
    import tests.fuzz

    found: dict[str, tuple[str, Any]] = {}
    for info in pkgutil.iter_modules(tests.fuzz.__path__):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"tests.fuzz.{info.name}")
        for name, target in getattr(module, "TARGETS", {}).items():
            found[name] = (module.__name__, target)
    return found


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_one(name: str, seconds: float) -> dict[str, Any]:
    """Fuzz one parser in this process; the figures as a dict."""
    from hypothesis import HealthCheck, Phase, given, settings

    from tests.fuzz import bounds
    from tests.fuzz.bounds import open_store

    bounds.LIMIT = bounds.SLOW  # here a slow input is a finding; the tests only stop hangs
    _, target = targets()[name]
    result: dict[str, Any] = {"parser": name, "executions": 0, "crashes": 0, "max_ms": 0.0}
    shown: list[str] = []
    with ExitStack() as stack:
        args: list[Any] = []
        if target.store:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            args.append(stack.enter_context(open_store(directory)))
        result["baseline_mb"] = _rss_mb()
        deadline = time.monotonic() + seconds

        @settings(
            max_examples=ROUND,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(target.strategy)
        def one(value: Any) -> None:
            if time.monotonic() > deadline:
                return
            started = time.perf_counter()
            try:
                target.check(value, *args)
            except Exception as err:  # every failure is a finding: count it, go on
                result["crashes"] += 1
                _keep(name, result["crashes"], value)
                if len(shown) < 3:
                    where = traceback.extract_tb(err.__traceback__)[-1]
                    shown.append(
                        f"{name}: {type(err).__name__}: {str(err)[:200]} "
                        f"at {Path(where.filename).name}:{where.lineno}; input {value!r:.300}"
                    )
            result["max_ms"] = max(result["max_ms"], (time.perf_counter() - started) * 1000)
            result["executions"] += 1

        while time.monotonic() < deadline:
            one()
    result["peak_mb"] = _rss_mb()
    for line in shown:
        print(line, file=sys.stderr)
    return result


CRASHES = ROOT / "bench" / "out" / "fuzz-crashes"


def _keep(name: str, number: int, value: Any) -> None:
    """The failing input, whole, for a regression example (``repr`` reads back in Python)."""
    CRASHES.mkdir(parents=True, exist_ok=True)
    slug = "".join(c if c.isalnum() else "-" for c in name)
    (CRASHES / f"{slug}-{os.getpid()}-{number}.txt").write_text(repr(value) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="per parser (default 20)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these parsers only")
    parser.add_argument("--list", action="store_true", help="name the parsers and stop")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(run_one(args.child, args.seconds)))
        return 0
    names = list(targets())
    if args.list:
        print("\n".join(names))
        return 0
    rows = []
    for name in args.only or names:
        print(f"fuzzing {name} for {args.seconds:g} s ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="nexusmem-fuzz-") as home:
            done = subprocess.run(
                [sys.executable, __file__, "--child", name, "--seconds", str(args.seconds)],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "NEXUSMEM_HOME": home, "OLLAMA_HOST": "127.0.0.1:9"},
                check=False,
            )
        if done.returncode != 0:
            print(f"{name}: the fuzzing process failed ({done.returncode})", file=sys.stderr)
            continue
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"Fuzzing, {args.seconds:g} s per parser (Hypothesis, structured inputs)\n")
    print("| parser | executions | crashes | max ms/input | peak RSS (MB) | after start-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        grown = r["peak_mb"] - r["baseline_mb"]
        print(
            f"| {r['parser']} | {r['executions']:,} | {r['crashes']} | {r['max_ms']:.1f} "
            f"| {r['peak_mb']:.0f} | +{grown:.0f} |"
        )
    return 1 if any(r["crashes"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
