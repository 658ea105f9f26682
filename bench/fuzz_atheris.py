"""Coverage-guided fuzzing of every parser with atheris (libFuzzer for Python).

    .venv/bin/pip install atheris      # a wheel for CPython 3.11 on Linux x86-64; optional
    .venv/bin/python bench/fuzz_atheris.py [--seconds 20] [--only NAME ...]

The inputs and checks are the fuzz suite's (``TARGETS`` in ``tests/fuzz/test_*.py``); atheris
drives them through Hypothesis's ``fuzz_one_input``, so the bytes libFuzzer mutates become the
same structured records, and the coverage of ``nexusmem_core`` (instrumented on import) steers
which ones it keeps. Each parser runs in a process of its own for ``--seconds``; the first
failing input stops it, as libFuzzer does, and is printed. The table gives libFuzzer's own
figures: runs, the coverage it reached, and its peak RSS.

atheris is not a dependency: it needs a libFuzzer build, which has wheels for few platforms.
``bench/bench_fuzz.py`` needs only Hypothesis.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

_DONE = re.compile(r"Done (\d+) runs in (\d+) second")
_STATS = re.compile(r"cov: (\d+) ft: (\d+).*?rss: (\d+)Mb")


def fuzz(name: str, argv: list[str]) -> None:
    """Run atheris on one parser in this process (until libFuzzer's own limits stop it)."""
    import atheris  # type: ignore[import-not-found]
    from hypothesis import HealthCheck, given, settings

    with atheris.instrument_imports(include=["nexusmem_core"]):
        from bench_fuzz import targets

        _, target = targets()[name]
    from tests.fuzz.bounds import open_store

    with ExitStack() as stack:
        args: list[Any] = []
        if target.store:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            args.append(stack.enter_context(open_store(directory)))

        @settings(database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @given(target.strategy)
        def one(value: Any) -> None:
            target.check(value, *args)

        atheris.Setup([sys.argv[0], *argv], one.hypothesis.fuzz_one_input)
        atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=int, default=20, help="per parser (default 20)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these parsers only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args(argv)
    if args.child:
        fuzz(args.child, rest)
        return 0
    from bench_fuzz import targets

    rows = []
    for name in args.only or list(targets()):
        print(f"atheris: {name} for {args.seconds} s ...", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory(prefix="nexusmem-atheris-") as home:
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    name,
                    f"-max_total_time={args.seconds}",
                    "-rss_limit_mb=4096",
                    "-print_final_stats=1",
                    f"-artifact_prefix={home}/",
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                env={**os.environ, "NEXUSMEM_HOME": home, "OLLAMA_HOST": "127.0.0.1:9"},
                check=False,
            )
        log = done.stderr
        runs = _DONE.search(log)
        stats = _STATS.findall(log)
        crashed = done.returncode != 0
        if crashed:
            print(log[-3000:], file=sys.stderr)
        cov, features, rss = stats[-1] if stats else ("?", "?", "?")
        executions = runs.group(1) if runs else _final_runs(log)
        rows.append((name, executions, "yes" if crashed else "0", cov, features, rss))
    print(f"atheris (libFuzzer), {args.seconds} s per parser, through the fuzz suite's inputs\n")
    print("| parser | executions | crash | coverage (edges) | features | peak RSS (MB) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, executions, crashed, cov, features, rss in rows:
        print(f"| {name} | {executions} | {crashed} | {cov} | {features} | {rss} |")
    return 1 if any(row[2] == "yes" for row in rows) else 0


def _final_runs(log: str) -> str:
    found = re.findall(r"stat::number_of_executed_units: (\d+)", log)
    return found[-1] if found else "?"


if __name__ == "__main__":
    sys.exit(main())
