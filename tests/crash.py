"""The crash harness: ``nexusmem sync`` killed with SIGKILL at a random moment, then checked.

A sync is one write transaction for everything it ingests (cursors included), then batches of
embeddings, each its own transaction. So wherever SIGKILL lands, the next reader must find a
consistent database (SQLite and both FTS5 indexes pass their integrity checks, every vector
belongs to an embedding row and back), and the next sync must end with exactly the nodes an
uninterrupted run of the killed command gives (ids and content hashes; with vectors, the same
embedded nodes). ``--auto`` leaves ``.nexusmem/sync.lock`` behind when killed: the next
``--auto`` must take it over, not skip.

Each scenario starts from a snapshot of the memory (taken with SQLite's backup API), so every
iteration sees the same inputs: the repository and the hook logs do not change during a loop.
Used by ``tests/test_crash.py`` (a few iterations) and ``bench/bench_crash.py`` (many).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexusmem_core.store.db import sqlite_module

from .stress import NEXUSMEM, child_env, integrity

DB = Path(".nexusmem") / "memory.db"
Nodes = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Scenario:
    """One command to kill: where its memory starts from, its arguments, its environment."""

    name: str
    start: str  # the snapshot the memory is restored to before each run
    args: tuple[str, ...] = ()  # after `nexusmem sync`
    env: tuple[tuple[str, str], ...] = ()
    # The snapshot whose plain sync is also an acceptable end state: a killed `--rebuild`
    # that never committed leaves the memory as it was, and the next sync brings it up to
    # date without rebuilding (a full walk stores fewer diffs than the history accumulated).
    or_plain_from: str | None = None


@dataclass
class Iteration:
    scenario: str
    delay: float
    finished: bool  # the sync ended on its own before the kill
    problems: list[str] = field(default_factory=list)


@dataclass
class Reference:
    """What an uninterrupted run of a scenario leaves, and when to kill one."""

    nodes: Nodes
    vectors: frozenset[tuple[str, str]]
    startup: float  # seconds before a sync process starts its work
    work: float  # the sync's own time, as it reports it
    alternatives: list[Nodes] = field(default_factory=list)


class Memory:
    """A repository, its NEXUSMEM_HOME, and named snapshots of its database.

    Commands run as ``nexusmem`` processes, or with ``in_process`` through the handlers the
    CLI calls (the suite's way: a process start costs more than a small sync). The killed
    sync is always a process.
    """

    def __init__(self, root: Path, home: Path, snapshots: Path, in_process: bool = False) -> None:
        self.root, self.home, self.snapshots = root, home, snapshots
        self.in_process = in_process
        self._startup: float | None = None
        snapshots.mkdir(parents=True, exist_ok=True)

    @property
    def db(self) -> Path:
        return self.root / DB

    def env(self, scenario: Scenario | None = None) -> dict[str, str]:
        return child_env(self.home, **dict(scenario.env if scenario else ()))

    def run(self, *args: str, scenario: Scenario | None = None) -> tuple[str, dict[str, Any]]:
        """``nexusmem init``, ``status`` or ``sync [flags]``: (its error or "", its report)."""
        if self.in_process:
            return _in_process(self, args, scenario)
        done = subprocess.run(
            [NEXUSMEM, *args, *(["--json"] if args[0] != "init" else []), "-C", str(self.root)],
            env=self.env(scenario),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            return done.stderr.strip()[-400:] or f"exit {done.returncode}", {}
        return "", json.loads(done.stdout) if args[0] == "sync" else {}

    def startup(self) -> float:
        """How long a ``nexusmem`` process takes before it starts working (a status run)."""
        if self._startup is None:
            started = time.perf_counter()
            subprocess.run(
                [NEXUSMEM, "status", "-C", str(self.root)],
                env=self.env(),
                capture_output=True,
                check=True,
            )
            self._startup = time.perf_counter() - started
        return self._startup

    def snapshot(self, name: str) -> None:
        """Copy the database as it stands (WAL content included) under ``name``."""
        target = self.snapshots / f"{name}.db"
        target.unlink(missing_ok=True)
        source = _connect(self.db)
        dest = _connect(target)
        try:
            source.backup(dest)
        finally:
            dest.close()
            source.close()

    def restore(self, name: str) -> None:
        """Put snapshot ``name`` back, with no WAL, shared memory or lock file beside it."""
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{self.db}{suffix}").unlink(missing_ok=True)
        (self.db.parent / "sync.lock").unlink(missing_ok=True)
        shutil.copyfile(self.snapshots / f"{name}.db", self.db)
        os.chmod(self.db, 0o600)  # as NexusMem keeps it: a looser copy is tightened, and said


def _in_process(
    memory: Memory, args: tuple[str, ...], scenario: Scenario | None
) -> tuple[str, dict[str, Any]]:
    import anyio

    from nexusmem_core import handlers
    from nexusmem_core.config import Settings
    from nexusmem_core.engine import open_engine
    from nexusmem_core.errors import NexusMemError

    settings = Settings.from_env(memory.env(scenario))

    async def go() -> dict[str, Any]:
        if args[0] == "init":
            await handlers.init_project(settings, memory.root)
            return {}
        async with open_engine(settings, memory.root) as engine:
            if args[0] == "status":
                await handlers.status(engine)
                return {}
            flags = set(args[1:])
            report = await handlers.sync(
                engine, auto="--auto" in flags, rebuild="--rebuild" in flags
            )
            return report.to_dict()

    try:
        return "", anyio.run(go)
    except NexusMemError as err:
        return str(err), {}


def _connect(path: Path) -> Any:
    """A connection through the store's own SQLite: two copies of SQLite in one process on
    one file release each other's locks (and one's close can delete the other's WAL)."""
    return sqlite_module().connect(str(path))


def node_set(db: Path) -> Nodes:
    conn = _connect(db)
    try:
        return frozenset(conn.execute("select id, content_hash from nodes"))
    finally:
        conn.close()


def vector_set(db: Path) -> frozenset[tuple[str, str]]:
    """The nodes that have a current vector: (node id, model)."""
    conn = _connect(db)
    try:
        return frozenset(
            conn.execute(
                "select n.id, e.model from embeddings e join nodes n on n.seq = e.seq "
                "and n.content_hash = e.content_hash"
            )
        )
    finally:
        conn.close()


def consistency(db: Path) -> list[str]:
    """Integrity of SQLite and both FTS5 indexes, and vectors matching their bookkeeping."""
    conn = _connect(db)
    try:
        found = integrity(conn)
        if conn.execute("select 1 from sqlite_master where name = 'nodes_vec'").fetchone():
            import sqlite_vec  # type: ignore[import-untyped]

            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            vec = {r for (r,) in conn.execute("select rowid from nodes_vec")}
            rows = {s for (s,) in conn.execute("select seq from embeddings")}
            if vec != rows:
                found.append(
                    f"vectors without bookkeeping: {len(vec - rows)}, "
                    f"bookkeeping without vectors: {len(rows - vec)}"
                )
    finally:
        conn.close()
    return found


def _sync_to_end(memory: Memory, scenario: Scenario) -> float:
    memory.restore(scenario.start)
    error, report = memory.run("sync", *scenario.args, scenario=scenario)
    if error or report.get("skipped"):
        raise RuntimeError(f"{scenario.name}: the uninterrupted sync failed: {error or report}")
    return float(report["seconds"])


def reference(memory: Memory, scenario: Scenario, runs: int = 1) -> Reference:
    """What an uninterrupted run leaves, and how long it works (the slowest of ``runs``)."""
    work = max(_sync_to_end(memory, scenario) for _ in range(runs))
    ref = Reference(node_set(memory.db), vector_set(memory.db), memory.startup(), work)
    if scenario.or_plain_from:
        _sync_to_end(memory, Scenario("plain", scenario.or_plain_from, env=scenario.env))
        ref.alternatives.append(node_set(memory.db))
    return ref


def kill_after(argv: list[str], env: dict[str, str], delay: float) -> bool:
    """Start ``argv``; SIGKILL it after ``delay`` seconds. True if it had ended by itself."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
        return True
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return False


def delays(ref: Reference, count: int, rng: random.Random) -> list[float]:
    """``count`` kill times spread over the sync's working time, one in each equal slice.

    A kill during the interpreter's start-up tests nothing, so the window opens when a
    process has its imports behind it and closes when it would exit.
    """
    start = max(0.0, ref.startup - 0.1)
    span = ref.work + 0.2
    return [start + span * (i + rng.random()) / count for i in range(count)]


def after_the_crash(memory: Memory, scenario: Scenario) -> list[str]:
    """``nexusmem status``, the integrity checks, then the next sync, as a user would go on.
    A killed ``--auto`` is followed by another ``--auto``: its lock is left behind, and the
    next one must take it over, not skip."""
    problems = []
    error, _ = memory.run("status", scenario=scenario)
    if error:
        problems.append(f"status failed: {error}")
    problems += consistency(memory.db)
    auto = ("--auto",) if "--auto" in scenario.args else ()
    error, report = memory.run("sync", *auto, scenario=scenario)
    if error:
        problems.append(f"the next sync failed: {error}")
    elif report.get("skipped"):
        problems.append(f"the next sync skipped: {report['skipped']}")
    return problems


def crash_loop(
    memory: Memory, scenario: Scenario, ref: Reference, kills: list[float]
) -> list[Iteration]:
    """Kill the scenario's sync once per delay in ``kills``; check what each kill left."""
    argv = [NEXUSMEM, "sync", *scenario.args, "-C", str(memory.root)]
    results = []
    for delay in kills:
        memory.restore(scenario.start)
        it = Iteration(scenario.name, delay, kill_after(argv, memory.env(scenario), delay))
        it.problems = after_the_crash(memory, scenario)
        if not it.problems:
            it.problems += _compare(memory, ref)
        results.append(it)
    return results


def _compare(memory: Memory, ref: Reference) -> list[str]:
    nodes = node_set(memory.db)
    if nodes != ref.nodes and nodes not in ref.alternatives:
        return [
            f"node set differs from an uninterrupted run: {len(nodes - ref.nodes)} extra, "
            f"{len(ref.nodes - nodes)} missing"
        ]
    vectors = vector_set(memory.db)
    if ref.vectors and vectors != ref.vectors:
        return [f"vectors differ: {len(vectors)} embedded, {len(ref.vectors)} expected"]
    return []


def write_hook_lines(memory: Memory, tag: str, count: int) -> None:
    """``count`` shell-hook and agent-hook records for this repository, through the same
    functions the hooks run (the recorder's record builder, the agent hook's handler)."""
    from nexusmem_core.collectors.agent.runner import handle
    from nexusmem_core.collectors.shell.hooklog import append
    from nexusmem_core.collectors.shell.record import build_record

    now = time.time()
    for i in range(count):
        options = {
            "shell": "bash",
            "exit": str(i % 3),
            "start": f"{now + i:.3f}",
            "end": f"{now + i + 0.5:.3f}",
            "cwd": str(memory.root),
            "session": tag,
        }
        record = build_record(f"make check-{tag}-{i}", options, memory.home)
        assert record is not None
        append(memory.home, record)
        payload = {
            "hook_event_name": "PostToolUse" if i % 4 else "PostToolUseFailure",
            "session_id": f"crash-{tag}",
            "cwd": str(memory.root),
            "tool_name": "Bash",
            "tool_input": {"command": f"pytest -k case_{tag}_{i}"},
            "tool_use_id": f"toolu_{tag}_{i}",
            "tool_response": {"stdout": "ok", "stderr": "", "interrupted": False},
            "error": "Exit code 1\nfailed",
        }
        handle(json.dumps(payload).encode(), str(memory.home), now + i)


def commit(root: Path, count: int, tag: str) -> None:
    """``count`` new commits, each touching a file and a doc."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "Crash", "GIT_AUTHOR_EMAIL": "crash@example.com"}
    env.update(GIT_COMMITTER_NAME="Crash", GIT_COMMITTER_EMAIL="crash@example.com")
    for i in range(count):
        (root / "crash").mkdir(exist_ok=True)
        (root / "crash" / f"{tag}-{i}.py").write_text(f"VALUE = {i}\n")
        (root / "docs").mkdir(exist_ok=True)
        with open(root / "docs" / "crash.md", "a") as doc:
            doc.write(f"\n## Crash note {tag} {i}\n\nWritten before the kill.\n")
        subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
        message = f"fix: crash case {tag} {i}"
        subprocess.run(
            ["git", "commit", "-q", "--no-verify", "-m", message], cwd=root, env=env, check=True
        )


def prepare(memory: Memory, new_commits: int = 3, lines: int = 20) -> None:
    """Snapshots ``initialised`` (after init), ``synced`` (after a first sync of the older
    hook lines), then new commits and hook lines land, and ``current`` (all synced, no
    vectors). The inputs stay as they are after this."""
    _must(memory.run("init"))
    memory.snapshot("initialised")
    write_hook_lines(memory, "old", lines)
    _must(memory.run("sync"))
    memory.snapshot("synced")
    commit(memory.root, new_commits, "new")
    write_hook_lines(memory, "new", lines)
    _must(memory.run("sync"))
    memory.snapshot("current")


def _must(outcome: tuple[str, dict[str, Any]]) -> None:
    if outcome[0]:
        raise RuntimeError(outcome[0])


def scenarios(ollama: tuple[tuple[str, str], ...] = ()) -> list[Scenario]:
    """The commands the loop kills: a first sync, an incremental one with new commits and hook
    lines, a rebuild, git's post-commit ``--auto``, and (with a fake Ollama) the embedding
    pass."""
    found = [
        Scenario("first sync", "initialised"),
        Scenario("incremental", "synced"),
        Scenario("rebuild", "synced", ("--rebuild",), or_plain_from="synced"),
        Scenario("--auto", "synced", ("--auto",)),
    ]
    if ollama:
        found.append(Scenario("embedding", "current", (), ollama))
    return found
