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

# The pinned public repositories (../shared/corpora/README.md) and the origin each clone gets:
# NexusMem takes a project's identity from its origin URL, as in a real checkout.
CORPORA = Path(os.environ.get("NEXUSMEM_CORPORA") or ROOT.parent / "shared" / "corpora")
ORIGINS = {
    "click": "https://github.com/pallets/click.git",
    "werkzeug": "https://github.com/pallets/werkzeug.git",
    "httpx": "https://github.com/encode/httpx.git",
    "ripgrep": "https://github.com/BurntSushi/ripgrep.git",
    "cobra": "https://github.com/spf13/cobra.git",
    "axios": "https://github.com/axios/axios.git",
    "serde": "https://github.com/serde-rs/serde.git",
    "caddy": "https://github.com/caddyserver/caddy.git",
    "preact": "https://github.com/preactjs/preact.git",
    "attrs": "https://github.com/python-attrs/attrs.git",
    "requests": "https://github.com/psf/requests.git",
}

# The speed set's corpora ("corpora" in ``python -m bench --sizes``): all eleven since issue 51
# (requests is the documentation-heavy one: a reST docs tree over 6.5k commits).
SPEED_CORPORA = tuple(ORIGINS)

sys.path.insert(0, str(BENCH))
import gen_repo  # noqa: E402


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s stdout; raises if git fails."""
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def ensure_corpus(name: str, clones: Path = OUT / "corpora") -> Path:
    """The corpus ``name`` cloned once from its bundle into ``clones``, origin URL set."""
    clone = clones / name
    if not (clone / ".git").exists():
        bundle = CORPORA / f"{name}.bundle"
        if not bundle.exists():
            raise SystemExit(f"{bundle}: missing; see ../shared/corpora/README.md")
        clones.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
        git(clone, "remote", "set-url", "origin", ORIGINS[name])
    return clone


def throwaway_clone(repo: Path, dest: Path) -> Path:
    """A clone of ``repo`` at ``dest`` with the same origin URL, to sync and commit in while
    the cached repository stays as it is. A local clone hard-links the objects: it is cheap."""
    subprocess.run(["git", "clone", "-q", str(repo), str(dest)], check=True)
    origin = git(repo, "config", "--get", "remote.origin.url").strip()
    git(dest, "remote", "set-url", "origin", origin)
    return dest.resolve()


def git_walks(repo: Path, patches: int = 200) -> tuple[list[str], list[str]]:
    """The two git walks a first sync makes: every commit's changed paths, then the patches
    of the newest ``patches`` commits. Together they are the floor a first sync cannot go under."""
    fmt = "--format=%x1e%H%x00%P%x00%ct%x00%an%x00%B%x00"
    walk = ["git", "-C", str(repo), "log", "-z", "--no-renames", "--name-status", fmt, "HEAD", "--"]
    patches_cmd = [
        "git",
        "-C",
        str(repo),
        "log",
        "-p",
        "--no-merges",
        "--no-renames",
        "--no-color",
        "--no-ext-diff",
        fmt,
        "-n",
        str(patches),
        "HEAD",
        "--",
    ]
    return walk, patches_cmd


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
# A long first sync walks history in a second Python process (nexusmem_core/walker.py: started,
# its command line names the module; forked on Linux, it names itself nexusmem-walk): its peak
# and CPU are sampled the same way (10 ms late at most, which its start-up can hide for a
# walk shorter than that). The samples come from a thread, so the wall time ends at the exit
# itself. CPU: RUSAGE_CHILDREN's
# user + system time is the child's and every git it waited for; the child's own share is its
# utime + stime in /proc/PID/stat at the last sample (10 ms late at most).
_HELPER = r"""
import json, os, resource, subprocess, sys, tempfile, threading, time
cmd = json.loads(sys.argv[1])
peak = {"VmHWM": 0, "RssAnon": 0, "RssFile": 0}
tick = os.sysconf("SC_CLK_TCK")
own_cpu = [0.0]
walkers = {}  # pid -> [peak VmHWM, CPU seconds] of the sync's second process (walker.py)
done = threading.Event()
errors = tempfile.TemporaryFile()

def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick

def hwm_of(pid):
    with open(f"/proc/{pid}/status") as fh:
        return next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:"))

def sample_walkers(pid):
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as fh:
            kids = fh.read().split()
        for kid in kids:
            try:
                with open(f"/proc/{kid}/cmdline", "rb") as fh:
                    started = b"nexusmem_core.walker" in fh.read()
                with open(f"/proc/{kid}/comm", "rb") as fh:
                    forked = fh.read().strip() == b"nexusmem-walk"
                if not (started or forked):
                    continue
                seen = walkers.setdefault(kid, [0, 0.0])
                seen[0], seen[1] = max(seen[0], hwm_of(kid)), max(seen[1], cpu_of(kid))
            except (OSError, StopIteration, IndexError, ValueError):
                pass

def sample(pid):
    status = f"/proc/{pid}/status"
    while not done.is_set():
        try:
            with open(status) as fh:
                for line in fh:
                    key = line.split(":", 1)[0]
                    if key in peak:
                        peak[key] = max(peak[key], int(line.split()[1]))
            own_cpu[0] = max(own_cpu[0], cpu_of(pid))
            sample_walkers(pid)
        except (OSError, IndexError, ValueError):
            pass
        done.wait(0.01)

t0 = time.perf_counter()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors)
sampler = threading.Thread(target=sample, args=(p.pid,), daemon=True)
sampler.start()
p.wait()  # the wall time is the exit, not the next sample
dt = time.perf_counter() - t0
done.set()
sampler.join()
errors.seek(0)
err = errors.read().decode("utf-8", "replace")
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rc": p.returncode, "seconds": dt, "tree_maxrss_kb": ru.ru_maxrss,
                  "cpu_seconds": ru.ru_utime + ru.ru_stime, "self_cpu_seconds": own_cpu[0],
                  "self_hwm_kb": peak["VmHWM"], "self_anon_kb": peak["RssAnon"],
                  "self_file_kb": peak["RssFile"], "stderr": err[-4000:],
                  "walker_hwm_kb": max((w[0] for w in walkers.values()), default=0),
                  "walker_cpu_seconds": sum(w[1] for w in walkers.values())}))
"""


def measured(cmd: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> dict[str, Any]:
    """Run ``cmd`` once in a fresh helper: wall and CPU seconds, and peak RSS (KiB) of the
    child alone and of the largest process of its tree."""
    out = subprocess.run(
        [PYTHON, "-c", _HELPER, json.dumps(list(cmd))],
        env=env,
        cwd=cwd,
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
