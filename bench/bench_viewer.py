"""The web viewer (issue 50): how soon ``nexusmem ui`` serves, and each page's time in the server.

    .venv/bin/python bench/bench_viewer.py [--quick] [--runs 2] [--rounds 30] [--starts 7]

Setup, in a temporary directory with its own ``NEXUSMEM_HOME`` (Ollama pointed at a closed
port): each candidate corpus (``--corpora``, default requests, werkzeug and preact) is cloned
and synced, and the one with the most nodes is the memory measured (the others stay
registered, so the cross-project search reads all of them). It gets a shell-hook log of
``--commands`` commands (about 10% failures and their retries, ``bench_agent.shell_story``,
through the recorder's ``build_record`` and ``hooklog.append``, cwd in the clone) and
``--agent`` agent-hook events through the hook's own handler, then ``sync --link-failures``.

1. **Ready.** ``nexusmem ui -C <clone> --no-browser --port 0`` spawned as a user runs it (the
   console script beside the interpreter), timed from the spawn to the URL line on its stdout,
   and to the first page answered (the launch URL followed to the timeline); then SIGINT, and
   it must exit. ``--starts`` times per run.
2. **Pages.** One server, signed in through the launch URL with httpx (which keeps the
   cookie); each page requested round-robin ``--rounds`` times after one untimed round (its
   figures are the "first" column). The table gives p50 and p95 of the ``Server-Timing``
   header (handlers and template) and p50 of the wall time over HTTP.

Each of ``--runs`` runs does both parts; the tables give the median over runs. Markdown tables
go to stdout, progress to stderr; nothing of the user's is touched.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import cycle
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import httpx
from _common import (
    NEXUSMEM,
    ROOT,
    bench_env,
    ensure_corpus,
    machine,
    mark,
    median,
    percentile,
    run,
    table,
    throwaway_clone,
)
from bench_agent import FLAKY, ROUTINE, bash, edit, fill, shell_story

sys.path.insert(0, str(ROOT))
from nexusmem_core.collectors.agent.runner import handle
from nexusmem_core.collectors.shell.hooklog import append

CANDIDATES = ("requests", "werkzeug", "preact")
LABELS = ROOT / "bench" / "eval" / "real"
PAGE_MS, SEARCH_MS, FIRST_PAGE_MS, READY_MS = 100.0, 150.0, 50.0, 1000.0
URL_LINE = "NexusMem viewer: "
SERVER_TIMING = re.compile(r"app;dur=([0-9.]+)")
NEXT = re.compile(r'<a rel="next" href="([^"]+)"')


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


# --- the memory --------------------------------------------------------------------------------


@dataclass
class Memory:
    repo: Path
    home: Path
    env: dict[str, str]
    name: str
    sizes: dict[str, int]  # nodes of each candidate after its first sync
    facts: dict[str, int] = field(default_factory=dict)


def read_db(repo: Path, sql: str, *args: object) -> list[tuple]:
    """A read-only query of the clone's memory: the bench picks its pages' nodes with it."""
    uri = f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro"
    with sqlite3.connect(uri, uri=True) as db:
        return db.execute(sql, args).fetchall()


def setup(base: Path, args: argparse.Namespace) -> Memory:
    home = base / "home"
    env = bench_env(home) | {"OLLAMA_HOST": "127.0.0.1:9"}  # nothing listens: BM25 alone
    sizes, clones = {}, {}
    for name in args.corpora:
        clone = throwaway_clone(ensure_corpus(name), base / name)
        run([NEXUSMEM, "init", "-C", str(clone)], env)
        t0 = time.perf_counter()
        run([NEXUSMEM, "sync", "-C", str(clone), "--no-embed", "-q"], env)
        sizes[name] = read_db(clone, "select count(*) from nodes")[0][0]
        clones[name] = clone
        say(f"setup: {name} synced in {time.perf_counter() - t0:.0f} s, {sizes[name]:,} nodes")
    name = max(sizes, key=lambda n: sizes[n])
    memory = Memory(clones[name], home, env, name, sizes)
    records, _ = shell_story(home, memory.repo, args.commands, args.seed, time.time() - 7200)
    for record in records:
        append(home, record)
    agent_events(memory, args.agent, args.seed)
    t0 = time.perf_counter()
    run([NEXUSMEM, "sync", "-C", str(memory.repo), "--no-embed", "--link-failures", "-q"], env)
    say(f"setup: {name}'s logs synced in {time.perf_counter() - t0:.0f} s")
    memory.facts = {
        "nodes": read_db(memory.repo, "select count(*) from nodes")[0][0],
        "commands": len(records),
        "failed": sum(r.get("exit") not in (None, 0) for r in records),
        "retry links": read_db(memory.repo, "select count(*) from links where kind = 'retry'")[0][
            0
        ],
        "agent events": args.agent,
    }
    return memory


def agent_events(memory: Memory, count: int, seed: int) -> None:
    """``count`` Claude Code events over the last two hours through the hook's handler, in
    process: commands (15% failing), edits, and before-runs of failed commands (the notes the
    Agents page lists)."""
    rng, repo, home = random.Random(seed), memory.repo, str(memory.home)
    start = time.time() - 7200
    failed: list[str] = []
    for i in range(count):
        session, now = f"bench-{i // 50}", start + i * 7200 / max(count, 1)
        roll = rng.random()
        if roll < 0.25:
            data = edit(session, repo, repo / fill("src/{mod}.py", rng))
        elif roll < 0.35 and failed:
            data = bash("PreToolUse", session, repo, rng.choice(failed))
        else:
            command = fill(rng.choice(FLAKY + ROUTINE), rng)
            event = "PostToolUseFailure" if rng.random() < 0.15 else "PostToolUse"
            failed += [command] if event == "PostToolUseFailure" else []
            data = bash(event, session, repo, command)
        handle(data, home, now)


# --- the server --------------------------------------------------------------------------------


def spawn(memory: Memory) -> tuple[subprocess.Popen[str], str, float]:
    """``nexusmem ui`` as a user starts it: the process, its launch URL, and the seconds from
    the spawn to that URL on its stdout."""
    errors = memory.home.parent / "ui.stderr"
    cmd = [NEXUSMEM, "ui", "-C", str(memory.repo), "--no-browser", "--port", "0"]
    with open(errors, "wb") as sink:  # the child holds its own copy of the descriptor
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=sink, env=memory.env, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(URL_LINE):
            return proc, line[len(URL_LINE) :].strip(), time.perf_counter() - t0
    proc.wait()
    tail = errors.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"nexusmem ui exited {proc.returncode}: {tail}")


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise RuntimeError("nexusmem ui did not stop within 30 s of SIGINT") from None
    if code not in (0, 130, -signal.SIGINT):
        raise RuntimeError(f"nexusmem ui exited {code} on SIGINT")


def ready_times(memory: Memory, starts: int) -> tuple[list[float], list[float]]:
    """Milliseconds from spawn to the URL line, and to the timeline answered, ``starts`` times."""
    ready, first = [], []
    for _ in range(starts):
        with httpx.Client(follow_redirects=True, timeout=60) as client:  # made before: 20+ ms
            t0 = time.perf_counter()
            proc, url, seconds = spawn(memory)
            try:
                client.get(url).raise_for_status()
                first.append((time.perf_counter() - t0) * 1000)
                ready.append(seconds * 1000)
            finally:
                stop(proc)
    return ready, first


# --- the pages ---------------------------------------------------------------------------------


@dataclass
class Page:
    name: str
    target: float
    paths: Iterator[str]  # the address of each request, in turn
    server: list[float] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    first: float = 0.0


def questions(name: str, count: int = 10) -> list[str]:
    """``count`` of the corpus's labelled questions, one of each kind in turn."""
    by_kind: dict[str, list[str]] = {}
    for q in json.loads((LABELS / f"{name}.json").read_text())["queries"]:
        by_kind.setdefault(q["kind"], []).append(q["query"])
    picked: list[str] = []
    while len(picked) < count and any(by_kind.values()):
        for texts in by_kind.values():
            if texts and len(picked) < count:
                picked.append(texts.pop(0))
    return picked


def node_ids(memory: Memory) -> tuple[str, int, str]:
    """The commit with the most file diffs (its id and how many), and the newest failed
    command that a later run fixed."""
    sha, diffs = read_db(
        memory.repo,
        "select substr(ref, 1, instr(ref, ':') - 1) as sha, count(*) from nodes "
        "where source = 'diff' group by sha order by 2 desc limit 1",
    )[0]
    commit = read_db(memory.repo, "select id from nodes where kind = 'git_commit' and ref = ?", sha)
    failure = read_db(
        memory.repo,
        "select n.id from nodes n join links l on l.src = n.id and l.kind = 'retry' "
        "where n.kind = 'shell_command' order by n.ts desc limit 1",
    )
    return commit[0][0], diffs, failure[0][0]


def pages(memory: Memory, client: httpx.Client, slug: str) -> list[Page]:
    asked = questions(memory.name)
    commit, _, failure = node_ids(memory)
    first = client.get(f"/p/{slug}/timeline")
    second = NEXT.search(first.text)
    if second is None:
        raise RuntimeError("the timeline's first page has no a[rel=next]")
    p = f"/p/{slug}"

    def one(path: str) -> Iterator[str]:
        return cycle([path])

    def each(prefix: str, **extra: str) -> Iterator[str]:
        return cycle([f"{prefix}?{urlencode({'q': q, **extra})}" for q in asked])

    return [
        Page("timeline, first page", FIRST_PAGE_MS, one(f"{p}/timeline")),
        Page("timeline, failures", PAGE_MS, one(f"{p}/timeline?outcome=failed")),
        Page("timeline, second page", PAGE_MS, one(html.unescape(second.group(1)))),
        Page("node: a commit, many diffs", PAGE_MS, one(f"{p}/node/{commit}")),
        Page("node: a failed command", PAGE_MS, one(f"{p}/node/{failure}")),
        Page("search with why (10 questions)", SEARCH_MS, each(f"{p}/search")),
        Page("search with why, BM25 only", SEARCH_MS, each(f"{p}/search", vector="off")),
        Page("review", PAGE_MS, one(f"{p}/review")),
        Page("agents", PAGE_MS, one(f"{p}/agents")),
        Page("status", PAGE_MS, one(f"{p}/status")),
        Page("projects", PAGE_MS, one("/projects")),
        Page("projects: search across projects", PAGE_MS, each("/projects")),
    ]


def timed(client: httpx.Client, path: str) -> tuple[float, float]:
    """One request: its Server-Timing and its wall time over HTTP, in milliseconds."""
    t0 = time.perf_counter()
    response = client.get(path)
    wall = (time.perf_counter() - t0) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"GET {path}: {response.status_code} {response.text[:300]}")
    found = SERVER_TIMING.search(response.headers.get("server-timing", ""))
    if found is None:
        raise RuntimeError(f"GET {path}: no Server-Timing header")
    return float(found.group(1)), wall


def page_times(memory: Memory, rounds: int) -> tuple[list[Page], dict[str, int]]:
    proc, url, _ = spawn(memory)
    try:
        with httpx.Client(follow_redirects=True, timeout=120) as client:
            signed = client.get(url)  # the token for the cookie, then the timeline
            signed.raise_for_status()
            slug = urlsplit(str(signed.url)).path.split("/")[2]
            client.base_url = f"{urlsplit(url).scheme}://{urlsplit(url).netloc}"
            todo = pages(memory, client, slug)
            say(f"pages: {len(todo)} pages, 1 untimed + {rounds} rounds (load {load()})")
            for round_ in range(rounds + 1):
                for page in todo:
                    server, wall = timed(client, next(page.paths))
                    if round_:
                        page.server.append(server)
                        page.wall.append(wall)
                    elif not page.first:
                        page.first = server
    finally:
        stop(proc)
    _, diffs, _ = node_ids(memory)
    return todo, {"diffs of the commit": diffs}


# --- the report --------------------------------------------------------------------------------


def report(memory: Memory, args: argparse.Namespace, runs: list[dict], loads: list[str]) -> None:
    sizes = ", ".join(f"{n} {s:,}" for n, s in sorted(memory.sizes.items(), key=lambda x: -x[1]))
    facts = ", ".join(f"{k} {v:,}" for k, v in memory.facts.items())
    print("## The viewer (`nexusmem ui`)\n")
    print(f"{machine()}; load (1/5/15 min) by run: {'; '.join(loads)}.")
    print(f"Corpora by nodes after a sync: {sizes}. Measured: **{memory.name}**, {facts}.")
    print(f"{len(runs)} run(s), medians over runs; {args.starts} starts and {args.rounds} rounds")
    print("per page in each run. Ollama unreachable (the vector arm answers nothing).\n")
    ready = [median(r["ready"]) for r in runs]
    first = [median(r["first"]) for r in runs]
    rows = [
        [
            "`nexusmem ui` ready: spawn to its URL",
            f"{median(ready):.0f}",
            f"{max(max(r['ready']) for r in runs):.0f}",
            f"<= {READY_MS:.0f}",
            mark(median(ready) <= READY_MS),
        ],
        [
            "spawn to the first page answered",
            f"{median(first):.0f}",
            f"{max(max(r['first']) for r in runs):.0f}",
            "",
            "",
        ],
    ]
    print(table(["start (ms)", "median", "max", "target", "met"], rows))
    print()
    rows = []
    for i, page in enumerate(runs[0]["pages"]):
        each = [r["pages"][i] for r in runs]
        p50s = [median(p.server) for p in each]
        p50 = median(p50s)
        rows.append(
            [
                page.name,
                f"{p50:.1f}",
                f"{median([percentile(p.server, 95) for p in each]):.1f}",
                f"{median([median(p.wall) for p in each]):.1f}",
                f"{median([p.first for p in each]):.0f}",
                " / ".join(f"{x:.0f}" for x in p50s),
                f"<= {page.target:.0f}",
                mark(p50 <= page.target),
            ]
        )
    headers = ["page (ms)", "server p50", "server p95", "HTTP p50", "first", "p50 by run"]
    print(table([*headers, "target p50", "met"], rows))
    print(f"\nThe commit's page shows {runs[0]['facts']['diffs of the commit']} file diffs.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 rounds, 3 starts, 1 run")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--corpora", nargs="+", default=list(CANDIDATES))
    parser.add_argument("--commands", type=int, default=2000, help="shell-hook commands")
    parser.add_argument("--agent", type=int, default=300, help="agent-hook events")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.rounds, args.starts = 1, 5, 3
    with tempfile.TemporaryDirectory(prefix="nexusmem-bench-viewer-") as tmp:
        memory = setup(Path(tmp), args)
        runs, loads = [], []
        for n in range(args.runs):
            say(f"run {n + 1}: {args.starts} starts (load {load()})")
            loads.append(load())
            ready, first = ready_times(memory, args.starts)
            done, facts = page_times(memory, args.rounds)
            runs.append({"ready": ready, "first": first, "pages": done, "facts": facts})
        report(memory, args, runs, loads)


if __name__ == "__main__":
    main()
