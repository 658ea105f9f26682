"""The stress harness: many processes on one repository's memory at once, then an audit.

Every MCP client starts its own stdio server, the shell hook appends a line for every command
typed, the agent hook one for every tool call, and a sync may start at any moment (a plain one,
or git's post-commit ``sync --auto``): all on one SQLite file. ``run_stress`` starts exactly
those processes (real ``python -m nexusmem_mcp`` servers driven by the SDK's stdio client, the
recorder the shell hooks start, the agent hook file Claude Code runs, ``nexusmem sync``), lets
them work for a bounded time, then syncs once more and audits the memory: every command a hook
appended is in it exactly once, no node is there twice, every commit made meanwhile is there.

Used by ``tests/test_stress.py`` (a few seconds, asserting) and ``bench/bench_stress.py`` (a
minute, printing the tables). Loopback only: Ollama is pointed at the discard port.
"""

from __future__ import annotations

import json
import os
import random
import re
import secrets
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from nexusmem_core.store.db import sqlite_module

ROOT = Path(__file__).resolve().parent.parent
NEXUSMEM = str(Path(sys.executable).with_name("nexusmem"))
AGENT_HOOK = ROOT / "nexusmem_core" / "collectors" / "agent" / "hook.py"
RECORDER = "nexusmem_core.collectors.shell.record"
LOCKED = re.compile(r"database is locked|database table is locked|\bbusy\b", re.IGNORECASE)
CALL_TIMEOUT = 120  # seconds: a call that takes longer is counted as failed, not waited for

QUERIES = [
    "why was the retry budget raised",
    "cache invalidation",
    "fix flaky test",
    "token refresh",
    "what failed last time",
    "echo stress",
    "migration schema",
    "README install",
    "parser error on unicode",
    "bump dependency",
    "src/orbit",
    "how do I run the tests",
]


@dataclass
class Plan:
    """Who takes part, and for how long (``seconds`` after every server has started)."""

    root: Path
    home: Path
    seconds: float = 60.0
    servers: int = 8
    plain_syncs: int = 1
    auto_syncs: int = 1
    shell_writers: int = 2
    agent_writers: int = 1
    commit_every: float | None = 5.0  # seconds between commits made meanwhile; None: none
    logs: Path | None = None  # where the servers' stderr goes (a tmp dir if None)
    synced: bool = True  # memory was synced before: no sync may walk the whole history
    seed: int = 0


@dataclass
class Actor:
    """The calls one kind of actor made: latencies, and failures by kind."""

    kind: str
    processes: int = 0
    latencies: list[float] = field(default_factory=list)
    locked: int = 0  # "database is locked" / busy: what must never happen
    other: int = 0
    samples: list[str] = field(default_factory=list)  # the first few error texts
    full_walks: int = 0  # syncs that walked the whole history (nothing was rewritten)
    skipped: int = 0  # `sync --auto` runs that found another one running

    def done(self, started: float, error: str | None = None) -> None:
        self.latencies.append(time.perf_counter() - started)
        if error is None:
            return
        if LOCKED.search(error):
            self.locked += 1
        else:
            self.other += 1
        if len(self.samples) < 5:
            self.samples.append(error.strip()[-600:])

    @property
    def errors(self) -> int:
        return self.locked + self.other


@dataclass
class Audit:
    """What the memory held after the final sync, against what was written meanwhile."""

    appended: int = 0  # commands the writers handed to a hook
    in_log: int = 0
    lost_in_log: list[str] = field(default_factory=list)  # handed over, not in the log
    broken_lines: list[str] = field(default_factory=list)  # log lines that are not a record
    missing: list[str] = field(default_factory=list)  # in the log, not in memory
    doubled: list[str] = field(default_factory=list)  # in memory more than once
    duplicate_nodes: list[str] = field(default_factory=list)  # same kind + ref twice
    commits: int = 0
    commits_missing: list[str] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)  # anything but "ok"
    nodes: int = 0

    def problems(self) -> list[str]:
        found = []
        names = ("lost_in_log", "broken_lines", "missing", "doubled", "duplicate_nodes",
                 "commits_missing")  # fmt: skip
        for name in names:
            items = getattr(self, name)
            if items:
                found.append(f"{name}: {len(items)}, e.g. {items[:3]}")
        return found + self.integrity


@dataclass
class Outcome:
    actors: dict[str, Actor]
    seconds: float  # the timed phase, measured
    audit: Audit
    final_sync: dict[str, Any]
    synced: bool = True

    def problems(self) -> list[str]:
        """Every broken invariant, one line each (empty: the run was clean)."""
        found = [
            f"{a.kind}: {a.locked} locked, {a.other} other error(s): {a.samples}"
            for a in self.actors.values()
            if a.errors
        ]
        # Nothing rewrites history here: a full walk beyond the first sync means a sync lost
        # track of where the last one stopped.
        walks = sum(a.full_walks for a in self.actors.values())
        if walks > (0 if self.synced else 1):
            found.append(f"{walks} sync(s) walked the whole history")
        return found + self.audit.problems()


class _Clock:
    """Starts the timed phase once every server has answered ``initialize``."""

    def __init__(self, servers: int, seconds: float) -> None:
        self.waiting = servers
        self.seconds = seconds
        self.go = anyio.Event()
        self.started = 0.0
        self.deadline = 0.0

    def ready(self) -> None:
        self.waiting -= 1
        if self.waiting <= 0 and not self.go.is_set():
            self.started = time.perf_counter()
            self.deadline = self.started + self.seconds
            self.go.set()

    def running(self) -> bool:
        return time.perf_counter() < self.deadline


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of every child: this memory's home, no Ollama but the discard port."""
    env = {**os.environ, "NEXUSMEM_HOME": str(home), "OLLAMA_HOST": "127.0.0.1:9"}
    env.pop("NEXUSMEM_EMBED_MODEL", None)
    env.pop("NEXUSMEM_LOG_LEVEL", None)
    return {**env, **extra}


async def _run(argv: list[str], env: dict[str, str], stdin: bytes = b"", cwd: Path | None = None):
    """Run one process to its end: (exit code, stdout, stderr). Killed if it outlives the
    call timeout."""
    with anyio.fail_after(CALL_TIMEOUT):
        proc = await anyio.run_process(argv, input=stdin, env=env, cwd=cwd, check=False)
    return (
        proc.returncode,
        proc.stdout.decode(errors="replace"),
        proc.stderr.decode(errors="replace"),
    )


async def _server(plan: Plan, index: int, clock: _Clock, actor: Actor, logs: Path) -> None:
    """One stdio server, as an MCP client starts it, asked ``search_memory`` in a loop."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    rng = random.Random(plan.seed * 1000 + index)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "nexusmem_mcp"],
        cwd=str(plan.root),
        env=child_env(plan.home),
    )
    with open(logs / f"server-{index}.stderr", "w") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                actor.processes += 1
                clock.ready()
                await clock.go.wait()
                while clock.running():
                    query = rng.choice(QUERIES)
                    started = time.perf_counter()
                    try:
                        with anyio.fail_after(CALL_TIMEOUT):
                            result = await client.call_tool(
                                "search_memory", {"query": query, "project_root": str(plan.root)}
                            )
                    except Exception as err:
                        actor.done(started, f"{type(err).__name__}: {err}")
                        continue
                    text = " ".join(getattr(c, "text", "") for c in result.content)
                    actor.done(started, text if result.is_error else None)
        finally:
            clock.ready()  # a server that failed to start must not hold the others back


async def _sync_loop(plan: Plan, clock: _Clock, actor: Actor, auto: bool) -> None:
    argv = [NEXUSMEM, "sync", "-C", str(plan.root), "--json"] + (["--auto"] if auto else [])
    actor.processes += 1
    await clock.go.wait()
    while clock.running():
        started = time.perf_counter()
        code, out, err = await _run(argv, child_env(plan.home))
        actor.done(started, None if code == 0 else f"exit {code}: {err}")
        if code == 0:
            report = json.loads(out)
            actor.full_walks += bool(report.get("full_walk"))
            actor.skipped += bool(report.get("skipped"))


async def _shell_writer(
    plan: Plan, index: int, run: str, clock: _Clock, actor: Actor, sent: list[str]
) -> None:
    """What a shell hook does after each command: the recorder, command text on stdin."""
    rng = random.Random(plan.seed * 1000 + 500 + index)
    actor.processes += 1
    await clock.go.wait()
    count = 0
    while clock.running():
        count += 1
        token = f"stress-{run}-s{index}-{count:06d}"
        now = time.time()
        argv = [
            sys.executable, "-m", RECORDER, "--home", str(plan.home), "--shell", "bash",
            "--exit", str(rng.choice([0, 0, 0, 1, 2])), "--start", f"{now - 0.2:.3f}",
            "--end", f"{now:.3f}", "--cwd", str(plan.root), "--session", f"stress-{index}",
        ]  # fmt: skip
        started = time.perf_counter()
        code, _out, err = await _run(argv, child_env(plan.home), f"echo {token}".encode())
        actor.done(started, None if code == 0 else f"exit {code}: {err}")
        sent.append(token)


async def _agent_writer(
    plan: Plan, index: int, run: str, clock: _Clock, actor: Actor, sent: list[str]
) -> None:
    """What Claude Code does after each Bash call: the hook file, the payload on stdin.
    One call in five failed, which also makes the hook read memory for a note."""
    actor.processes += 1
    await clock.go.wait()
    count = 0
    while clock.running():
        count += 1
        token = f"stress-{run}-a{index}-{count:06d}"
        payload: dict[str, Any] = {
            "session_id": f"stress-{run}-{index}",
            "cwd": str(plan.root),
            "tool_name": "Bash",
            "tool_input": {"command": f"echo {token}"},
            "tool_use_id": f"toolu_{run}_{index}_{count}",
        }
        if count % 5:
            payload["hook_event_name"] = "PostToolUse"
            payload["tool_response"] = {"stdout": token, "stderr": "", "interrupted": False}
        else:
            payload["hook_event_name"] = "PostToolUseFailure"
            payload["error"] = "Exit code 1\nsomething went wrong"
        argv = [sys.executable, "-S", "-P", str(AGENT_HOOK)]
        started = time.perf_counter()
        code, _out, err = await _run(argv, child_env(plan.home), json.dumps(payload).encode())
        actor.done(started, None if code == 0 else f"exit {code}: {err}")
        sent.append(token)


async def _committer(plan: Plan, clock: _Clock, actor: Actor, made: list[str]) -> None:
    """Commits landing meanwhile, as a developer (or a rebase) makes them."""
    assert plan.commit_every
    actor.processes += 1
    env = {**os.environ, "GIT_AUTHOR_NAME": "Stress", "GIT_AUTHOR_EMAIL": "stress@example.com"}
    env.update(GIT_COMMITTER_NAME="Stress", GIT_COMMITTER_EMAIL="stress@example.com")
    await clock.go.wait()
    count = 0
    while clock.running():
        await anyio.sleep(plan.commit_every)
        if not clock.running():
            return
        count += 1
        name = f"stress/note-{count:04d}.txt"
        (plan.root / "stress").mkdir(exist_ok=True)
        (plan.root / name).write_text(f"note {count} written under load\n")
        started = time.perf_counter()
        code, _, err = await _run(["git", "add", name], env, cwd=plan.root)
        if code == 0:
            message = f"stress: note {count} committed under load".encode()
            code, _, err = await _run(
                ["git", "commit", "-q", "--no-verify", "-F", "-"], env, message, cwd=plan.root
            )
        if code == 0:
            code, out, err = await _run(["git", "rev-parse", "HEAD"], env, cwd=plan.root)
            made.append(out.strip())
        actor.done(started, None if code == 0 else f"git exit {code}: {err}")


async def run_stress(plan: Plan) -> Outcome:
    """Start everyone, stop them after ``plan.seconds``, sync once more, audit the memory.

    The repository must be initialised and synced once already (as it would be in use).
    """
    run = secrets.token_hex(3)
    logs = plan.logs or plan.home / "stress-logs"
    logs.mkdir(parents=True, exist_ok=True)
    kinds = ["mcp search_memory", "sync", "sync --auto", "shell hook", "agent hook", "commit"]
    actors = {kind: Actor(kind) for kind in kinds}
    clock = _Clock(plan.servers, plan.seconds)
    shell_sent: list[str] = []
    agent_sent: list[str] = []
    commits: list[str] = []
    async with anyio.create_task_group() as tg:
        for i in range(plan.servers):
            tg.start_soon(_server, plan, i, clock, actors["mcp search_memory"], logs)
        for _ in range(plan.plain_syncs):
            tg.start_soon(_sync_loop, plan, clock, actors["sync"], False)
        for _ in range(plan.auto_syncs):
            tg.start_soon(_sync_loop, plan, clock, actors["sync --auto"], True)
        for i in range(plan.shell_writers):
            tg.start_soon(_shell_writer, plan, i, run, clock, actors["shell hook"], shell_sent)
        for i in range(plan.agent_writers):
            tg.start_soon(_agent_writer, plan, i, run, clock, actors["agent hook"], agent_sent)
        if plan.commit_every:
            tg.start_soon(_committer, plan, clock, actors["commit"], commits)
        if plan.servers == 0:
            clock.ready()
    elapsed = time.perf_counter() - clock.started
    code, out, err = await _run(
        [NEXUSMEM, "sync", "-C", str(plan.root), "--json"], child_env(plan.home)
    )
    final = json.loads(out) if code == 0 else {"error": err}
    audit = audit_memory(plan, run, shell_sent + agent_sent, commits)
    if code != 0:
        audit.integrity.append(f"the final sync failed: {err.strip()[-600:]}")
    used = {kind: actor for kind, actor in actors.items() if actor.processes}
    return Outcome(used, elapsed, audit, final, plan.synced)


def _read_logs(home: Path, run: str) -> tuple[Counter[str], list[str]]:
    """The commands of this run in both hook logs, and the lines that are not a whole record
    (a torn or interleaved append would show here)."""
    pattern = re.compile(rf"stress-{run}-[sa]\d+-\d+")
    found: Counter[str] = Counter()
    broken = []
    for name in ("shell-history.jsonl", "agent-events.jsonl"):
        path = home / name
        if path.exists():
            for number, line in enumerate(path.read_bytes().split(b"\n")[:-1], 1):
                try:
                    record = json.loads(line)
                except ValueError:
                    broken.append(f"{name}:{number}: {line[:80]!r}")
                    continue
                found.update(pattern.findall(str(record.get("cmd", ""))))
    return found, broken


def audit_memory(plan: Plan, run: str, sent: list[str], commits: list[str]) -> Audit:
    """Compare the memory with what the writers handed over (read straight from the file)."""
    audit = Audit(appended=len(sent), commits=len(commits))
    logged, audit.broken_lines = _read_logs(plan.home, run)
    audit.in_log = sum(logged.values())
    audit.lost_in_log = sorted(set(sent) - set(logged))
    pattern = re.compile(rf"stress-{run}-[sa]\d+-\d+")
    # The store's own SQLite (see sqlite_module): two copies of SQLite in one process on one
    # file release each other's locks; the test process may have the store open.
    conn = sqlite_module().connect(str(plan.root / ".nexusmem" / "memory.db"))
    try:
        stored: Counter[str] = Counter()
        for (body,) in conn.execute("select body from nodes where kind = 'shell_command'"):
            stored.update(pattern.findall(body.split("\n", 1)[0]))
        audit.missing = sorted(set(logged) - set(stored))
        audit.doubled = sorted(t for t, n in stored.items() if n > 1)
        audit.duplicate_nodes = [
            f"{kind} {ref} x{n}"
            for kind, ref, n in conn.execute(
                "select kind, ref, count(*) from nodes group by project_id, kind, ref "
                "having count(*) > 1"
            )
        ]
        shas = {ref for (ref,) in conn.execute("select ref from nodes where kind = 'git_commit'")}
        audit.commits_missing = [sha for sha in commits if sha not in shas]
        (audit.nodes,) = conn.execute("select count(*) from nodes").fetchone()
        audit.integrity = integrity(conn)
    finally:
        conn.close()
    return audit


def integrity(conn: Any) -> list[str]:
    """What SQLite and both FTS5 indexes say about themselves: empty when all is well."""
    found = [row[0] for row in conn.execute("pragma integrity_check") if row[0] != "ok"]
    for table in ("nodes_fts", "nodes_cjk"):
        try:
            conn.execute(f"insert into {table}({table}) values ('integrity-check')")
        except sqlite_module().DatabaseError as err:
            found.append(f"{table}: {err}")
    return found
