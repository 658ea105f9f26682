"""Shared helpers of the benchmarks: cached repositories, measured child processes, tables."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
VENV_BIN = ROOT / ".venv" / "bin"
PYTHON = str(VENV_BIN / "python") if (VENV_BIN / "python").exists() else sys.executable
NEXUSMEM = str(VENV_BIN / "nexusmem") if (VENV_BIN / "nexusmem").exists() else "nexusmem"

sys.path.insert(0, str(BENCH))
import gen_repo  # noqa: E402


def ensure_repo(commits: int, seed: int = 1, regen: bool = False) -> Path:
    """The synthetic repository of ``commits`` commits, built once and cached under bench/out/."""
    repo = OUT / f"repo-{commits}-s{seed}"
    stamp = OUT / f"repo-{commits}-s{seed}.json"
    if not regen and stamp.exists() and (repo / ".git").exists():
        try:
            info = json.loads(stamp.read_text())
            head = subprocess.run(
                ["git", "-C", str(repo), "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            if info.get("gen_version") == gen_repo.GEN_VERSION and info.get("head") == head:
                return repo
        except (ValueError, subprocess.CalledProcessError):
            pass
    OUT.mkdir(parents=True, exist_ok=True)
    print(f"building {repo.name} ({commits:,} commits) ...", file=sys.stderr, flush=True)
    stats = gen_repo.generate(repo, commits, seed, quiet=True)
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    stamp.write_text(json.dumps({"gen_version": gen_repo.GEN_VERSION, "head": head, **stats}))
    print(f"  built in {stats['seconds']:.1f}s: {stats}", file=sys.stderr, flush=True)
    return repo


def bench_env(home: Path) -> dict[str, str]:
    """The environment for nexusmem children: a throwaway NEXUSMEM_HOME, nothing else changed."""
    env = {**os.environ, "NEXUSMEM_HOME": str(home)}
    env.pop("NEXUSMEM_LOG_LEVEL", None)
    return env


def fresh_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="nexusmem-bench-home-"))


def drop_home(home: Path) -> None:
    shutil.rmtree(home, ignore_errors=True)


# A fresh helper process per measurement: RUSAGE_CHILDREN accumulates the maximum over every
# child ever reaped, so it only isolates one command if the helper runs nothing else. The helper
# also samples the child's own high-water mark (VmHWM) from /proc, which excludes git children,
# and the peaks of its anonymous and file-backed resident memory (RssAnon, RssFile): for git,
# the file-backed part is mostly the pack it maps, page cache rather than memory it holds.
_HELPER = r"""
import json, resource, subprocess, sys, tempfile, time
cmd = json.loads(sys.argv[1])
peak = {"VmHWM": 0, "RssAnon": 0, "RssFile": 0}
errors = tempfile.TemporaryFile()
t0 = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors)
status = f"/proc/{p.pid}/status"
while p.poll() is None:
    try:
        with open(status) as fh:
            for line in fh:
                key = line.split(":", 1)[0]
                if key in peak:
                    peak[key] = max(peak[key], int(line.split()[1]))
    except OSError:
        pass
    time.sleep(0.01)
dt = time.perf_counter() - t0
errors.seek(0)
err = errors.read().decode("utf-8", "replace")
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "seconds": dt, "tree_maxrss_kb": ru.ru_maxrss,
                  "self_hwm_kb": peak["VmHWM"], "self_anon_kb": peak["RssAnon"],
                  "self_file_kb": peak["RssFile"], "stderr": err[-4000:]}))
"""


def measured(cmd: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` once in a fresh helper; wall seconds and peak RSS (KiB) of the child tree."""
    out = subprocess.run(
        [PYTHON, "-c", _HELPER, json.dumps(list(cmd))],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    if result["rc"] != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result['rc']}): {result['stderr']}")
    return result


def run(cmd: Sequence[str], env: dict[str, str], **kw: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), env=env, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-4000:]}")
    return proc


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (the ``inclusive`` method), ``pct`` in 0..100."""
    data = sorted(values)
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * pct / 100
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], align: Sequence[str] | None = None
) -> str:
    """A Markdown table; ``align`` holds ``l`` or ``r`` per column (numbers right by default)."""
    cells = [[str(c) for c in row] for row in rows]
    if align is None:
        align = ["l"] + ["r"] * (len(headers) - 1)
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(
                v.rjust(w) if a == "r" else v.ljust(w)
                for v, w, a in zip(values, widths, align, strict=True)
            )
            + " |"
        )

    sep = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if a == "r" else (":" + "-" * (w + 1))
            for w, a in zip(widths, align, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), sep, *(line(r) for r in cells)])


def mark(ok: bool) -> str:
    return "pass" if ok else "MISS"


def machine() -> str:
    import platform

    cpus = os.cpu_count()
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {cpus} CPU(s), "
        f"{platform.system()} {platform.release()}, {git}"
    )
