"""The agent loop (issue 5): hook latency, note precision, and failure -> fix chains.

    .venv/bin/python bench/bench_agent.py [--quick] [--runs 40] [--lines 20000] [--commits 5000]

1. **Hook latency.** Memory: a clone of the synthetic repository, ``init`` and ``sync`` with a
   ``--lines`` shell-hook log (about 10% failures), then 200 agent records left unsynced in
   ``agent-events.jsonl`` (recall reads that tail too). Each event is the process Claude Code
   runs, ``<venv python> -S -P hook.py`` with the payload on stdin, timed ``--runs`` times
   round-robin (noise hits every event alike), each with a fresh session so rationing never
   silences it; then each event of Codex CLI, Gemini CLI, Cursor and opencode, in that agent's
   own payloads (``hook.py <agent>``); beside it, bare interpreter start-up, the hook without
   ``-S`` and the hook without its bytecode. SessionStart's detached ``sync --auto`` is adopted
   (this process is a subreaper) and waited for before the next event; ``.nexusmem/sync.lock``
   is held meanwhile, so a working ``--auto`` sync skips and the agent tail stays unsynced.
2. **Notes.** The hook driven as sessions would on the same memory: fail, fail, edit, pass, then
   new sessions (a note naming the fix; after ``git checkout --`` one saying it was reverted);
   commands never run here, commands that only ever passed, near misses, failed commands run
   outside the repository, first failures (all silent; one session per call, so a false note
   cannot hide the next); rationing. Exits 1 on a note where none (or fewer) was allowed.
   Errors shared by different commands: a note naming what made the error go away; a near
   miss of that error, the same command failing otherwise, generic errors and a corpus of
   distinct errors: silent.
3. **Chains.** A generated shell log in which every failure has a known intent, synced with
   ``--link-failures``: retry links against that ground truth, and what linking costs a sync.

Markdown tables go to stdout, progress to stderr. Everything lives in a temporary directory
with its own ``NEXUSMEM_HOME`` and bytecode cache; nothing of the user's is touched.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _common import (
    NEXUSMEM,
    PYTHON,
    ROOT,
    bench_env,
    ensure_repo,
    gen_repo,
    machine,
    mark,
    median,
    percentile,
    run,
    table,
)

sys.path.insert(0, str(ROOT))
from nexusmem_core.collectors.commands import is_predicate
from nexusmem_core.collectors.shell.hooklog import LOG_FILE, command_hash
from nexusmem_core.collectors.shell.record import build_record
from nexusmem_core.lock import SYNC_LOCK, acquire

HOOK = ROOT / "nexusmem_core" / "collectors" / "agent" / "hook.py"
HOOK_ARGV = [PYTHON, "-S", "-P", str(HOOK)]  # what `nexusmem agent install` has Claude Code run
TARGET_P50_MS, TARGET_P99_MS = 100.0, 250.0
# What a note that reaches the agent adds to the hook: it is remembered redacted (runner._tell).
REDACT = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import nexusmem_core.redact"
DIRS = [".", ".", ".", "web", "services/api", "docs"]
MODS = "api auth billing cli db ingest search upload users worker cache config events".split()
WORDS = "login retry timeout unicode pagination refund quota webhook export csv tz".split()
FLAKY = (  # commands that fail, and get fixed or not
    "pytest tests/test_{mod}.py -x|pytest -k {word}|make test|make lint|npm test|npm run build|"
    "mypy src/{mod}|ruff check src/{mod}|cargo test -p {mod}|go test ./{mod}/...|tox -e py311|"
    "alembic upgrade head|docker compose build {mod}"
).split("|")
ROUTINE = (
    "git status|git diff|git log --oneline -10|ls|ls -la src/{mod}|cat src/{mod}.py|git add -p|"
    "git commit -m 'fix {word}'|git pull --rebase|git push|make fmt|grep -rn {word} src|"
    "python -m orbit.{mod}|git switch -c fix-{word}"
).split("|")
EDITS = ["vim src/{mod}.py", "code src/{mod}.py", "sed -i 's/{word}/{word}_v2/' src/{mod}.py"]
UNRELATED = (  # part 2: what an agent runs; the logs above never contain these exact texts
    "git status --short|git log --oneline -{n}|git show HEAD~{n} --stat|ls -la {d}|"
    "cat {d}/README.md|head -n {n} src/{mod}.py|wc -l src/{mod}.py|rg {word} {d}|"
    "npm test -- --watch=false|pnpm --filter {mod} test|yarn build:{mod}|go vet ./...|"
    "pytest -k {word}_{n}|pytest tests/{mod}/test_{word}.py -q|uv run pytest -x -q -k {mod}|"
    "python -c 'import orbit.{mod}'|find {d} -name '*.py' -newer setup.cfg|docker ps -a|"
    "kubectl get pods -n {word}|make -n {word}|cargo fmt --check -p {mod}|git branch -a|"
    "jq .scripts.{word} package.json|curl -sS localhost:{port}/health|du -sh {d}|"
    "tree -L {n} {d}|git stash list|git diff --stat HEAD~{n}|npx tsc --noEmit -p {d}"
).split("|")
NEW_CMD = "terraform plan -out tf.plan"  # in no log


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fill(template: str, rng: random.Random) -> str:
    d = rng.choice(["src", "web", "docs", "tests", "services/api"])
    mod, word, n = rng.choice(MODS), rng.choice(WORDS), rng.randrange(2, 40)
    return template.format(mod=mod, word=word, n=n, d=d, port=rng.randrange(3000, 9000))


# --- a shell log whose every failure has a known intent --------------------------------------


def shell_story(home: Path, repo: Path, lines: int, seed: int, end: float) -> tuple[list, dict]:
    """Records as ``record.build_record`` gives them, oldest first, the last at ``end``; and for
    each failure's id, (what became of it, the id of the run meant as its fix, or None)."""
    rng = random.Random(seed)
    events: list[tuple[float, str, str, int, str]] = []  # ts, cmd, cwd, exit, session
    intent: dict[int, tuple[str, int | None]] = {}
    clock = 0.0

    def add(cmd: str, cwd: str, code: int, ts: float, session: str) -> int:
        events.append((ts, cmd, cwd, code, session))
        return len(events) - 1

    while len(events) < lines:
        session, cwd = f"{rng.getrandbits(32):08x}", rng.choice(DIRS)
        clock += rng.uniform(600, 6 * 3600)
        for _ in range(rng.randint(8, 40)):
            clock += 2 + rng.expovariate(1 / 40)
            if rng.random() > 0.1:  # routine: navigation, git, and tests that simply pass
                pool = FLAKY if rng.random() < 0.2 else ROUTINE
                add(fill(rng.choice(pool), rng), cwd, 0, clock, session)
                continue
            cmd = fill(rng.choice(FLAKY), rng)
            kind = rng.choices(["fixed", "never", "late", "elsewhere"], [60, 15, 10, 15])[0]
            fails = [add(cmd, cwd, rng.choice([1, 1, 2, 101]), clock, session)]
            for _ in range(rng.randint(1, 3) if kind != "never" else 1):
                clock += rng.uniform(20, 240)
                add(fill(rng.choice(EDITS), rng), cwd, 0, clock, session)
            if kind == "fixed" and rng.random() < 0.35:  # not fixed at the first try
                clock += rng.uniform(10, 120)
                fails.append(add(cmd, cwd, 1, clock, session))
            clock += rng.uniform(10, 600)
            fix = None
            if kind == "fixed":
                fix = add(cmd, cwd, 0, clock, session)
            elif kind == "elsewhere":
                fix = add(cmd, rng.choice([d for d in DIRS if d != cwd]), 0, clock, session)
            elif kind == "late":
                fix = add(cmd, cwd, 0, clock + rng.uniform(25, 72) * 3600, "later")
            intent.update({f: (kind, fix) for f in fails})
    shift = end - max(e[0] for e in events)
    records = []
    for ts, cmd, cwd, code, session in events:
        options = {"shell": "zsh", "session": session, "cwd": os.path.normpath(repo / cwd)}
        options |= {"exit": str(code), "start": f"{ts + shift:.3f}", "duration": "1.5"}
        record = build_record(cmd, options, home)
        assert record is not None  # no command here is empty or starts with a space
        records.append(record)
    ids = [r["id"] for r in records]
    truth = {ids[f]: (kind, None if fix is None else ids[fix]) for f, (kind, fix) in intent.items()}
    return sorted(records, key=lambda r: r["start"]), truth


def write_log(home: Path, records: list[dict]) -> None:
    with open(home / LOG_FILE, "a", encoding="utf-8") as out:
        for r in records:
            out.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")


# --- payloads and hook calls -----------------------------------------------------------------


def payload(event: str, session: str, cwd: Path, **fields: object) -> bytes:
    body: dict[str, object] = {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": str(cwd),
    }
    body |= {"permission_mode": "default", "hook_event_name": event, **fields}
    return json.dumps(body).encode()


def tool(event: str, session: str, cwd: Path, name: str, args: dict, **fields: object) -> bytes:
    use_id = "toolu_" + secrets.token_hex(12)
    return payload(
        event, session, cwd, tool_name=name, tool_input=args, tool_use_id=use_id, **fields
    )


def own_error(command: str) -> str:
    """A failure message of ``command``'s own: one test of its own failing. Different commands
    mostly fail for different reasons; part 2 (d) has them share one on purpose."""
    slug = format(zlib.crc32(command.encode()), "08x")
    return f"Exit code 1\n..F\nFAILED tests/test_{slug}.py::test_{slug} - AssertionError"


def bash(event: str, session: str, cwd: Path, command: str, error: str | None = None) -> bytes:
    args = {"command": command, "description": "Run it"}
    if event == "PostToolUse":
        response = {"stdout": "ok\n", "stderr": "", "interrupted": False}
        return tool(event, session, cwd, "Bash", args, tool_response=response)
    if event == "PostToolUseFailure":
        error = own_error(command) if error is None else error
        return tool(event, session, cwd, "Bash", args, error=error, is_interrupt=False)
    return tool(event, session, cwd, "Bash", args)


def edit(session: str, cwd: Path, path: Path) -> bytes:
    args = {"file_path": str(path), "old_string": "a", "new_string": "b"}
    return tool("PostToolUse", session, cwd, "Edit", args, tool_response={"filePath": str(path)})


def call(cmd: list[str], data: bytes, env: dict[str, str]) -> tuple[float, str | None]:
    """One hook process: wall milliseconds, and the note it gave (None for silence)."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, input=data, capture_output=True, env=env, check=False)
    ms = (time.perf_counter() - t0) * 1000
    out = proc.stdout.decode().strip()
    if not out:
        return ms, None
    answer = json.loads(out)  # Claude Code's shape, else the agent's own answer whole
    inner = answer.get("hookSpecificOutput") if isinstance(answer, dict) else None
    context = inner.get("additionalContext") if isinstance(inner, dict) else None
    return ms, context if isinstance(context, str) else out


def sid() -> str:
    return secrets.token_hex(16)


# --- background syncs: adopted, waited for, never left behind --------------------------------


def become_subreaper() -> bool:
    """Orphans of our children (the hook's detached sync) become ours to wait for."""
    try:
        return ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def reap(timeout: float = 60.0) -> list[int]:
    """Wait for every adopted descendant; SIGKILL (by pid) what is left after ``timeout``."""
    codes: list[int] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return codes
        if pid:
            codes.append(os.waitstatus_to_exitcode(status))
        elif time.monotonic() > deadline:
            for task in Path(f"/proc/{os.getpid()}/task").iterdir():
                for child in (task / "children").read_text().split():
                    os.kill(int(child), signal.SIGKILL)
        else:
            time.sleep(0.002)


# --- 1. hook latency -------------------------------------------------------------------------


def setup_memory(base: Path, args: argparse.Namespace) -> tuple[Path, dict[str, str], list]:
    repo, home = base / "repo", base / "home"
    say(f"setup: a clone of the {args.commits:,}-commit repository, {args.lines:,} commands")
    run(["git", "clone", "-q", str(ensure_repo(args.commits)), str(repo)], dict(os.environ))
    repo = repo.resolve()
    # Bytecode cached as after a hook's first call, in a cache of our own (not the tree's).
    env = bench_env(home) | {"NEXUSMEM_VECTOR": "off", "PYTHONPYCACHEPREFIX": str(base / "pyc")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    run([NEXUSMEM, "init", "-C", str(repo)], env)
    records, _ = shell_story(home, repo, args.lines, args.seed, time.time() - 3600)
    write_log(home, records)
    t0 = time.perf_counter()
    run([NEXUSMEM, "sync", "-C", str(repo), "--no-embed", "-q"], env)
    say(f"  synced in {time.perf_counter() - t0:.1f}s; 200 agent records into the unsynced tail")
    rng = random.Random(args.seed)
    for i in range(200):  # five recent agent sessions, through the hook itself
        session = f"setup-{i // 40}"
        if rng.random() < 0.3:
            call(HOOK_ARGV, edit(session, repo, repo / fill("src/{mod}.py", rng)), env)
        event = "PostToolUseFailure" if rng.random() < 0.15 else "PostToolUse"
        call(HOOK_ARGV, bash(event, session, repo, fill(rng.choice(FLAKY + ROUTINE), rng)), env)
    return repo, env, records


COLD = ", NexusMem not compiled"  # a case run without NexusMem's bytecode


@dataclass
class Latency:
    """What ``hook_latency`` measured: milliseconds per case, wrong answers per case, and the
    background syncs SessionStart started (their exit codes, how long they were waited for)."""

    times: dict[str, list[float]]
    wrong: Counter[str]
    background: list[int]
    waited: list[float]
    adopted: bool


def hook_latency(
    base: Path, repo: Path, env: dict[str, str], failed: str, runs: int, every_cold: bool = False
) -> Latency:
    """Each event as the process Claude Code starts, ``runs`` rounds after an untimed one.
    ``every_cold`` adds every event without NexusMem's bytecode (by default only the note)."""
    hook, src = HOOK_ARGV, next(repo.glob("src/**/*.py"))
    cold = env | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(base / "cold")}

    def bash_(event: str, command: str) -> Callable[[], bytes]:
        return lambda: bash(event, sid(), repo, command)

    def start() -> bytes:
        return payload("SessionStart", sid(), repo, source="startup")

    note, silent = bash_("PreToolUse", failed), bash_("PreToolUse", NEW_CMD)
    cases: list[tuple[str, list[str], dict, Callable[[], bytes], bool]] = [
        ("PreToolUse Bash, failed before (note)", hook, env, note, True),
        ("PreToolUse Bash, never seen (silent)", hook, env, silent, False),
        ("PostToolUse Bash, success", hook, env, bash_("PostToolUse", "make fmt"), False),
        ("PostToolUseFailure Bash (recall)", hook, env, bash_("PostToolUseFailure", failed), True),
        ("PostToolUse Edit", hook, env, lambda: edit(sid(), repo, src), False),
        ("SessionStart (digest)", hook, env, start, True),
        ("PreToolUse (note), without -S", [PYTHON, "-P", str(HOOK)], env, note, True),
        ("PreToolUse (note)" + COLD, hook, cold, note, True),
        ("baseline: python -S -P -c pass", [PYTHON, "-S", "-P", "-c", "pass"], env, bytes, False),
        ("baseline: python -c pass", [PYTHON, "-c", "pass"], env, bytes, False),  # stdin: b""
        (
            "baseline: -S -P, import redaction",
            [PYTHON, "-S", "-P", "-c", REDACT],
            env,
            bytes,
            False,
        ),
    ]
    if every_cold:
        cases += [(name + COLD, hook, cold, make, want) for name, _, _, make, want in cases[:6]]
    for agent in OTHER_AGENTS:  # each event of the other agents, in their own payloads
        argv = [*hook, agent]
        cases += [
            (name, argv, env, make, want)
            for name, make, want in agent_cases(agent, repo, failed, src)
        ]
    times: dict[str, list[float]] = {name: [] for name, *_ in cases}
    wrong: Counter[str] = Counter()
    background: list[int] = []
    waited: list[float] = []
    adopted = become_subreaper()
    say(f"latency: {runs} rounds of {len(cases)} cases, after one untimed round")
    with acquire(repo / ".nexusmem" / SYNC_LOCK):
        for round_ in range(runs + 1):
            if round_ == 1:  # the bytecode is cached now; the cold cache is it minus NexusMem's
                shutil.copytree(env["PYTHONPYCACHEPREFIX"], cold["PYTHONPYCACHEPREFIX"])
                shutil.rmtree(cold["PYTHONPYCACHEPREFIX"] + str(ROOT))
            for name, cmd, case_env, make, expect_note in cases:
                ms, answer = call(cmd, make(), case_env)
                if round_:
                    times[name].append(ms)
                    wrong[name] += (answer is not None) != expect_note
                if "SessionStart" in name or "session start" in name:  # wait for its sync
                    t0 = time.perf_counter()
                    background += reap() if adopted else []
                    waited.append((time.perf_counter() - t0) * 1000)
    return Latency(times, wrong, background, waited, adopted)


OTHER_AGENTS = ("codex", "gemini", "cursor", "opencode")


def agent_cases(
    agent: str, repo: Path, failed: str, src: Path
) -> list[tuple[str, Callable[[], bytes], bool]]:
    """One agent's events as the timed cases: (name, payload maker, whether a note is due). A
    note is due where the agent can take one (its adapter's NOTES), as for Claude Code."""
    sys.path.insert(0, str(ROOT / "bench" / "eval"))
    import importlib

    from agents import BUILDERS, session_start
    from model import AgentStep

    notes = importlib.import_module(f"nexusmem_core.collectors.agent.adapters.{agent}").NOTES
    label, cwd, build = agent, str(repo), BUILDERS[agent]

    def event(step: AgentStep, index: int) -> Callable[[], bytes]:
        return lambda: json.dumps(build(step, cwd, sid(), sid()[:12])[index]).encode()

    fail = AgentStep(failed, 1, own_error(failed))
    return [
        (f"{label}: before, failed before", event(fail, 0), "PreToolUse" in notes),
        (f"{label}: after, success", event(AgentStep("make fmt", 0, "ok"), 1), False),
        (f"{label}: after, failure (recall)", event(fail, 1), "PostToolUseFailure" in notes),
        (f"{label}: edit", event(AgentStep(edit=str(src.relative_to(repo))), 0), False),
        (
            f"{label}: session start",
            lambda: json.dumps(session_start(agent, cwd, sid())).encode(),
            "SessionStart" in notes,
        ),
    ]


def failed_command(records: list[dict]) -> str:
    """The command whose PreToolUse is timed for a note: the last pytest run that failed."""
    return next(r["cmd"] for r in reversed(records) if r["exit"] and "pytest" in r["cmd"])


def bench_latency(base: Path, repo: Path, env: dict[str, str], failed: str, runs: int) -> None:
    measured = hook_latency(base, repo, env, failed, runs)
    times, wrong, background = measured.times, measured.wrong, measured.background
    waited, adopted = measured.waited, measured.adopted
    rows = []
    for name, values in times.items():
        p50, p95, p99 = median(values), percentile(values, 95), percentile(values, 99)
        ok = mark(p50 < TARGET_P50_MS and p99 < TARGET_P99_MS)
        checks = ["-", "-"] if name.startswith("baseline") else [f"{runs - wrong[name]}/{runs}", ok]
        rows.append([name, f"{p50:.1f}", f"{p95:.1f}", f"{p99:.1f}", f"{max(values):.1f}", *checks])
    print("## 1. Hook latency per event (whole process)\n")
    print(
        f"`python -S -P hook.py [agent]` with the payload on stdin, as each agent runs it: {runs} "
        "runs per event (after one untimed round), round-robin, each with a fresh session. The "
        "Claude Code rows come first; `codex:`, `gemini:`, `cursor:` and `opencode:` rows send "
        "that agent's own payloads (bench/eval/agents.py), a note due where it can take one.\n"
    )
    print(
        table(
            [
                "event",
                "p50 (ms)",
                "p95 (ms)",
                "p99 (ms)",
                "max (ms)",
                "answer as expected",
                "target",
            ],
            rows,
        )
    )
    with_s = median(times["PreToolUse Bash, failed before (note)"])
    without_s = median(times["PreToolUse (note), without -S"])
    codes = ", ".join(f"exit {c}: {n}" for c, n in sorted(Counter(background).items()))
    print(
        f"\nTargets: p50 < {TARGET_P50_MS:g} ms and p99 < {TARGET_P99_MS:g} ms per event (with "
        f"{runs} runs, p99 lies between the two slowest). *answer as expected*: a note when one "
        "is due, silence otherwise. Bytecode is cached (`PYTHONPYCACHEPREFIX` in the bench's "
        "temporary directory), as from a hook's second call on; *NexusMem not compiled* has the "
        "standard library's bytecode only, and `PYTHONDONTWRITEBYTECODE=1` (the first call after "
        "an upgrade, or an environment that forbids writing bytecode, as this sandbox's does). "
        f"`-S` saves {without_s - with_s:.1f} ms at the median ({with_s:.1f} against "
        f"{without_s:.1f}). A note or digest that reaches the agent is also remembered, "
        "redacted (the notes log): importing the redaction table, its baseline row less "
        "`python -S -P -c pass`, is most of what that adds to a PreToolUse note.\n"
    )
    print(
        "SessionStart spawns `cli.py sync -C ROOT --auto --quiet`, detached. This process was "
        f"{'the' if adopted else 'NOT the (so they were not waited for)'} subreaper of those "
        "syncs and held `.nexusmem/sync.lock` throughout, so a working `--auto` sync would skip "
        "and leave the agent tail unsynced. After each SessionStart it waited for the sync to "
        f"exit (median {median(waited):.0f} ms after the hook returned) before the next event. "
        f"Exit codes of the {len(waited)} background syncs (one per session start of each "
        f"agent, the untimed round included): {codes or 'none seen'}.\n"
    )


# --- 2. notes emitted and suppressed ---------------------------------------------------------


class Driver:
    """Runs hook processes and counts the notes of one situation at a time."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.rows: list[list[str]] = []
        self.notes: list[str | None] = []
        self.false: list[str] = []  # notes given where none (or fewer) was allowed

    def __call__(self, data: bytes) -> str | None:
        self.notes.append(call(HOOK_ARGV, data, self.env)[1])
        return self.notes[-1]

    def row(self, situation: str, allowed: int, due: int, check: bool = True) -> None:
        """Exactly ``allowed`` notes (none if ``due`` is 0) for ``due`` calls whose command has a
        failure on record; the rest suppressed by rationing. ``check``: the note's content."""
        got = sum(n is not None for n in self.notes)
        if got > allowed:
            self.false += [f"{situation}: {n}" for n in self.notes if n]
        cells = [len(self.notes), allowed, got, due - allowed, due - got]
        self.rows.append([situation, *map(str, cells), mark(got == allowed and check)])
        self.notes = []


def due_notes(records: list) -> list[tuple[str, str]]:
    """(command, directory) pairs a note is due for: the command's last run in that directory,
    in the last 90 days, failed with an error (not a search's "nothing found")."""
    last: dict[tuple[str, str], dict] = {}
    for r in sorted(records, key=lambda r: r["start"]):
        last[(r["cmd"], r["cwd"])] = r
    recent = time.time() - 90 * 86400
    return sorted(
        key
        for key, r in last.items()
        if r["exit"] not in (None, 0, 130, 131)
        and r["start"] >= recent
        and not (r["exit"] == 1 and is_predicate(key[0]))
    )


def bench_notes(repo: Path, base: Path, env: dict, records: list, quick: bool) -> int:
    rng, hook = random.Random(7), Driver(env)
    agent = [json.loads(line) for line in (base / "home" / "agent-events.jsonl").open()]
    seen = {r["cmd"] for r in records} | {r["cmd"] for r in agent}
    failed = sorted({r["cmd"] for r in records if r["exit"]})  # in the synced shell log
    passed = sorted(seen - set(failed) - {r["cmd"] for r in agent if r["outcome"] == "failed"})
    say("notes: scenario (a)")
    target = next(p for p in sorted(repo.glob("src/**/*.py")) if p.name != "__init__.py")
    cmd, s1 = "make check-migrations", sid()
    for event in ["PreToolUse", "PostToolUseFailure", "PreToolUse", "PostToolUseFailure"]:
        hook(bash(event, s1, repo, cmd))
    hook(edit(s1, repo, target))
    hook(bash("PreToolUse", s1, repo, cmd))
    hook(bash("PostToolUse", s1, repo, cmd))
    hook.row("(a) fails twice, file edited, passes; one session", 1, 3)
    note = hook(bash("PreToolUse", sid(), repo, cmd)) or ""
    hook.row("(a) new session, same command: names the fix", 1, 1, target.name in note)
    say(f"  fix note: {note}")
    revert, s2 = f"git checkout -- {target.relative_to(repo)}", sid()
    hook(bash("PreToolUse", s2, repo, revert))
    hook(bash("PostToolUse", s2, repo, revert))
    note = hook(bash("PreToolUse", sid(), repo, cmd)) or ""
    hook.row("(a) `git checkout -- file` ran; new session: says reverted", 1, 1, "reverted" in note)
    say(f"  revert note: {note}")
    say("notes: corpus (b)")
    corpus = list(dict.fromkeys(fill(rng.choice(UNRELATED), rng) for _ in range(3000)))
    corpus = [c for c in corpus if c not in seen][: 60 if quick else 220]
    for c in corpus[20:]:
        hook(bash("PreToolUse", sid(), repo / rng.choice(["", "src", "docs"]), c))
    hook.row(f"(b) {len(corpus) - 20} commands never run in this repository", 0, 0)
    for c in rng.sample(passed, 30):
        hook(bash("PreToolUse", sid(), repo, c))
    hook.row("(b) commands run here before that never failed", 0, 0)
    misses = [
        f"{c} {rng.choice(['-q', '--lf', '-v', '--verbose'])}" for c in rng.sample(failed, 30)
    ]
    for c in (m for m in misses if m not in seen):
        hook(bash("PreToolUse", sid(), repo, c))
    hook.row("(b) near misses of failed commands (an extra flag)", 0, 0)
    elsewhere, other = base / "elsewhere", base / "other-repo"
    elsewhere.mkdir()
    run(["git", "init", "-q", str(other)], env)
    for c in rng.sample(failed, 20):
        hook(bash("PreToolUse", sid(), rng.choice([elsewhere, other]), c))
    hook.row("(b) commands that failed here, run outside this repository", 0, 0)
    for c in corpus[:20]:
        hook(bash("PostToolUseFailure", sid(), repo, c))
    hook.row("(b) first failure of a new command (PostToolUseFailure)", 0, 0)
    say("notes: rationing (c)")
    due = due_notes(records)
    session = sid()
    for c, cwd in rng.sample(due, 10):
        hook(bash("PreToolUse", session, Path(cwd), c))
    hook.row("(c) 10 distinct failed commands in one session", 5, 10)
    session, (again, cwd) = sid(), rng.choice(due)
    for _ in range(3):
        hook(bash("PreToolUse", session, Path(cwd), again))
    hook.row("(c) the same failed command 3 times in one session", 1, 3)
    bench_errors(hook, repo, rng)
    print("## 2. Notes emitted and suppressed\n")
    print(
        "The hook as whole processes on the memory of part 1. A note is *due* on a call for a "
        "command whose last run in that directory in the last 90 days failed (an error, not a "
        "search finding nothing); what is due beyond the allowance (5 notes a session, one per "
        "command) is suppressed. Each (b) call has its own session.\n"
    )
    heads = ["situation", "hook calls", "notes expected", "notes got", "suppressed expected"]
    print(table([*heads, "suppressed got", "result"], hook.rows))
    print(f"\nPrecision violations (a note where none, or fewer, was allowed): {len(hook.false)}.")
    print("".join(f"- {note}\n" for note in hook.false))
    return len(hook.false)


YAML_PYTEST = (
    "Exit code 2\n==== test session starts ====\ncollected 0 items / 1 error\n"
    "tests/test_{mod}.py:1: in <module>\n    import yaml\n"
    "E   ModuleNotFoundError: No module named 'yaml'\n==== 1 error in 0.0{n}s ===="
)
TRACEBACK = (
    'Exit code 1\nTraceback (most recent call last):\n  File "/tmp/{n}/src/{mod}.py", line {n}, '
    "in <module>\n    import {module}\nModuleNotFoundError: No module named '{module}'"
)
DISTINCT = [  # what else goes wrong: each a different error
    "Exit code 1\nTypeError: Cannot read properties of undefined (reading '{word}')",
    "Exit code 101\nerror[E0425]: cannot find value `{word}` in this scope\n --> src/{mod}.rs:"
    "{n}:5\nerror: could not compile `{mod}`",
    "Exit code 2\nsrc/{mod}.ts({n},5): error TS2339: Property '{word}' does not exist on type "
    "'{mod}'.",
    'Exit code 1\nsrc/{mod}.py:{n}: error: Name "{word}" is not defined  [name-defined]',
    "Exit code 1\nFAILED tests/test_{mod}.py::test_{word} - KeyError: '{word}_{n}'",
    'Exit code 1\nnpm ERR! Missing script: "{word}"\nnpm ERR! A complete log of this run',
    "Exit code 2\npanic: {mod}: nil map entry for {word}\n\ngoroutine 1 [running]:",
]
GENERIC = ["Exit code 1\nError", "Exit code 2\nmake: *** [all] Error 2", "Exit code 1", ""]


def bench_errors(hook: Driver, repo: Path, rng: random.Random) -> None:
    """(d) Failures matched by what went wrong: due where two commands share an error and it
    went away; silent for a near miss of it, for the same command failing otherwise, for
    generic errors and for distinct ones."""
    say("notes: errors (d)")
    mod, s1 = rng.choice(MODS), sid()
    first = f"pytest tests/test_{mod}.py -q"
    hook(bash("PostToolUseFailure", s1, repo, first, YAML_PYTEST.format(mod=mod, n=5)))
    hook(bash("PostToolUse", s1, repo, "pip install pyyaml"))
    hook(bash("PostToolUse", s1, repo, first))
    hook.row("(d) an error, an install, a pass; one session", 0, 0)
    due = [f"python -m orbit.{mod}.load", f"pytest -k {mod}_load", "python scripts/seed.py"]
    notes = []
    for i, command in enumerate(due):
        error = TRACEBACK.format(n=40 + i, mod=mod, module="yaml")
        notes.append(hook(bash("PostToolUseFailure", sid(), repo, command, error)) or "")
    hook.row(
        "(d) other commands, the same error: names the install",
        len(due),
        len(due),
        all("went away after `pip install pyyaml`" in n for n in notes),
    )
    say(f"  error note: {notes[0]}")
    for module in ("requests", "yaml_extra", "pyyaml"):
        error = TRACEBACK.format(n=7, mod=mod, module=module)
        hook(bash("PostToolUseFailure", sid(), repo, f"python -m orbit.{mod}.{module}", error))
    hook.row("(d) near misses of the error (another module)", 0, 0)
    other = f"Exit code 1\nFAILED tests/test_{mod}.py::test_load - AssertionError: assert 1 == 2"
    hook(bash("PostToolUseFailure", sid(), repo, first, other))
    hook.row("(d) the same command failing with another error", 0, 0)
    for i, error in enumerate(GENERIC * 3):
        hook(bash("PostToolUseFailure", sid(), repo, f"make target-{i}", error))
    hook.row("(d) generic errors (exit code only, a bare Error, make's banner)", 0, 0)
    for i in range(30):
        command = f"{rng.choice(['npm run', 'cargo', 'go run', 'tox -e'])} job-{i}"
        word = rng.choice(WORDS)
        error = rng.choice(DISTINCT).format(mod=rng.choice(MODS), word=f"{word}{i}", n=i + 3)
        hook(bash("PostToolUseFailure", sid(), repo, command, error))
    hook.row("(d) 30 distinct errors of new commands", 0, 0)


# --- 3. chains on a realistic shell log ------------------------------------------------------


def bench_chains(base: Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    repo, home = base / "chains-repo", base / "chains-home"
    say("chains: a 300-commit repository and a shell log with a known intent per failure")
    gen_repo.generate(repo, 300, args.seed, quiet=True)
    repo, env = repo.resolve(), env | {"NEXUSMEM_HOME": str(home)}
    run([NEXUSMEM, "init", "-C", str(repo)], env)
    records, truth = shell_story(home, repo, args.chain_lines, args.seed + 1, time.time() - 86400)
    write_log(home, records)
    sync = [NEXUSMEM, "sync", "-C", str(repo), "--no-embed", "--json"]
    wall: dict[str, list[float]] = {}
    reports: dict[str, dict] = {}
    for phase, extra in (("first", ["--rebuild"]), ("second", [])):
        for _ in range(3):
            for link in ("without", "with"):  # the last run links, so the DB holds its links
                t0 = time.perf_counter()
                out = run([*sync, *extra, *(["--link-failures"] if link == "with" else [])], env)
                name = f"{phase} sync, {link} --link-failures"
                wall.setdefault(name, []).append(time.perf_counter() - t0)
                reports[name] = json.loads(out.stdout)
    db = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    links = dict(
        db.execute(
            "select s.ref, d.ref from links l join nodes s on s.id = l.src "
            "join nodes d on d.id = l.dst where l.kind = 'retry'"
        ).fetchall()
    )
    discussion = db.execute("select count(*) from links where kind = 'discussion'").fetchone()[0]
    db.close()
    rows: list[list] = []
    right = 0
    for kind in ("fixed", "never", "late", "elsewhere"):
        ids = [f for f, (k, _) in truth.items() if k == kind]
        linked = [f for f in ids if f in links]
        good = sum(links[f] == truth[f][1] for f in linked) if kind == "fixed" else 0
        right += good
        expected = len(ids) if kind == "fixed" else 0
        rows.append([kind, len(ids), expected, len(linked), good, len(linked) - good])
    linkable = sum(kind == "fixed" for kind, _ in truth.values())
    report = reports["first sync, with --link-failures"]
    print("## 3. Failure -> fix chains on a generated shell log\n")
    print(
        f"{len(records):,} commands in sessions; {len(truth):,} failures, each with a known "
        "intent: *fixed* (the same command passes in the same directory minutes later, after "
        "edits, sometimes after a second failure), *never* fixed, fixed *late* (25-72 h later), "
        "or fixed *elsewhere* (passes in another directory). One routine command in five is a "
        "build or test command that simply passes, so a later, unrelated pass can be linked.\n"
    )
    heads = ["intent", "failures", "expected linkable", "linked by retry", "to the intended fix"]
    print(table([*heads, "to another pass"], rows))
    figures = [
        ["commands", f"{len(records):,}"],
        ["failures examined (sync report)", f"{report['failures_examined']:,}"],
        ["linked by retry (sync report)", f"{report['linked_retry']:,}"],
        ["expected linkable", f"{linkable:,}"],
        ["precision (links to the intended fix)", f"{right / len(links):.1%}" if links else "-"],
        ["recall (of expected linkable)", f"{right / linkable:.1%}" if linkable else "-"],
        ["linked by discussion", f"{discussion} (not measurable yet: see below)"],
    ]
    figures += [[f"{name} (s, median of 3)", f"{median(v):.2f}"] for name, v in wall.items()]
    print("\n" + table(["figure", "value"], figures))
    print(
        "\nA link *to another pass* is a later pass of the same command in the same directory "
        "within 24 h that the story did not mean as the fix: a routine run (a flaky test passing, "
        "another branch) or another incident's fix. The heuristic cannot tell them apart. "
        "Discussion links need conversation or session-summary nodes, which no collector writes "
        "yet (a later issue), so none can be made or measured here. Syncs are whole processes: "
        "*first* is `--rebuild` (git, docs and the log from scratch), *second* finds nothing "
        "new (`--link-failures` keeps a cursor and examines only failures near new commands).\n"
    )


# --- 4. chains by error signature on generated agent sessions ---------------------------------

INSTALLS = ["pip install py{module}", "npm install {module}", "uv add {module}", "make deps"]


def error_sessions(home: Path, repo: Path, incidents: int, seed: int, end: float) -> tuple:
    """Agent log records of ``incidents`` sessions, each a failure with a known intent, with its
    error and signature as the hook keeps them; and, for each failure's id, the id of the pass
    meant as the fix (None where no link is due)."""
    from nexusmem_core.collectors.agent.signature import failure_fields

    rng = random.Random(seed)
    records: list[dict] = []
    truth: dict[str, str | None] = {}
    clock = end - incidents * 900.0
    kinds = Counter[str]()

    def add(session: str, command: str, error: str | None = None) -> str:
        nonlocal clock
        clock += rng.uniform(5, 60)
        kept, sig = failure_fields(error, str(repo), str(home)) if error else (None, None)
        ident = f"e{len(records)}"
        records.append(
            {
                "v": 1, "id": ident, "shell": "claude", "agent": "claude", "session": session,
                "cwd": str(repo), "cmd": command, "cmd_hash": command_hash(str(home), command),
                "outcome": "failed" if error else "ok", "exit": 1 if error else 0,
                "error": kept, "sig": sig, "edited": [], "ts": round(clock, 3),
            }
        )  # fmt: skip
        return ident

    for n in range(incidents):
        session, mod = f"err-{n}", rng.choice(MODS)
        module = f"{rng.choice(WORDS)}{n}"
        error = TRACEBACK.format(n=n, mod=mod, module=module)
        first, second = f"pytest tests/test_{mod}.py -q", f"pytest -k {rng.choice(WORDS)}"
        kinds_ = ["fixed", "persists", "back", "others", "unrelated"]
        kind = rng.choices(kinds_, [50, 15, 10, 15, 10])[0]
        kinds[kind] += 1
        fails = [add(session, first, error)]
        if rng.random() < 0.5:
            fails.append(add(session, second, error))
        add(session, rng.choice(["git status", "ls", f"cat src/{mod}.py"]))
        if kind == "others":  # only other programs pass: the error is not shown gone
            add(session, "npm run build")
            add(session, f"make lint-{mod}")
            truth.update(dict.fromkeys(fails))
            continue
        add(session, rng.choice(INSTALLS).format(module=module))
        if kind == "unrelated":  # the same program passes on a test that never needed it
            add(session, f"pytest tests/test_{rng.choice(MODS)}_unrelated.py")
            truth.update(dict.fromkeys(fails))
            continue
        if kind == "persists":
            fails.append(add(session, first, error))
            truth.update(dict.fromkeys(fails))
            continue
        if kind == "back":  # it passes, then the error comes back, and stays
            add(session, second)
            fails.append(add(session, first, error))
            truth.update(dict.fromkeys(fails))
            continue
        fix = add(session, rng.choice([first, second, f"pytest tests/test_{mod}.py"]))
        add(session, "git commit -am wip")
        truth.update(dict.fromkeys(fails, fix))
    return records, truth, kinds


def bench_error_chains(base: Path, args: argparse.Namespace, env: dict[str, str]) -> None:
    repo, home = base / "errors-repo", base / "errors-home"
    say("error chains: generated agent sessions, each failure with a known intent")
    gen_repo.generate(repo, 100, args.seed, quiet=True)
    repo, env = repo.resolve(), env | {"NEXUSMEM_HOME": str(home)}
    run([NEXUSMEM, "init", "-C", str(repo)], env)
    incidents = 60 if args.quick else 400
    records, truth, kinds = error_sessions(home, repo, incidents, args.seed, time.time() - 3600)
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "agent-events.jsonl", "a", encoding="utf-8") as out:
        for r in records:
            out.write(json.dumps(r, separators=(",", ":")) + "\n")
    t0 = time.perf_counter()
    run([NEXUSMEM, "sync", "-C", str(repo), "--no-embed", "--link-failures", "-q"], env)
    took = time.perf_counter() - t0
    db = sqlite3.connect(f"file:{repo / '.nexusmem' / 'memory.db'}?mode=ro", uri=True)
    links = dict(
        db.execute(
            "select s.ref, d.ref from links l join nodes s on s.id = l.src "
            "join nodes d on d.id = l.dst where l.kind = 'signature'"
        ).fetchall()
    )
    signed = db.execute(
        "select count(*) from nodes where json_extract(meta, '$.sig') is not null"
    ).fetchone()[0]
    db.close()
    due = [f for f, fix in truth.items() if fix is not None]
    right = sum(links.get(f) == truth[f] for f in due)
    wrong = sum(1 for f, dst in links.items() if truth.get(f) != dst)
    rows = [
        ["incidents (fixed / persists / comes back / only others pass / unrelated pass)",
         " / ".join(str(kinds[k]) for k in ("fixed", "persists", "back", "others", "unrelated"))],
        ["failures, with a signature (nodes)", f"{len(truth)}, {signed}"],
        ["links due (failures of fixed incidents)", str(len(due))],
        ["signature links made", str(len(links))],
        ["to the intended pass", str(right)],
        ["where none was due, or to another pass", str(wrong)],
        ["precision", f"{right / len(links):.1%}" if links else "-"],
        ["recall", f"{right / len(due):.1%}" if due else "-"],
        ["sync with --link-failures (s)", f"{took:.2f}"],
    ]  # fmt: skip
    print("## 4. Failure -> fix chains by error signature, on generated agent sessions\n")
    print(
        f"{incidents} agent sessions, each a failure (a missing module of its own) with a known "
        "intent: *fixed* (an install, then a pass of the failing command or of the same "
        "program), *persists* (an install, and it fails again), *comes back* (a pass, then the "
        "error again), *only others pass* (other programs pass after it: nothing shows it "
        "gone), *unrelated pass* (an install, then the same program passes on a test that never "
        "needed the module, and the failing command is not run again). Records are written as "
        "the hook writes them (error text and signature through `signature.failure_fields`).\n"
    )
    print(
        "The stories are generated to the rule's own shape, so *fixed*, *persists*, *comes "
        "back* and *only others pass* check that it is implemented as meant; *unrelated pass* "
        "is the case it cannot tell from a fix (a pass of the same program counts as the error "
        "gone), and its links are the rule's known false positives.\n"
    )
    print(table(["figure", "value"], rows))
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and lines: a smoke test")
    parser.add_argument("--runs", type=int, default=40, help="timed runs per hook event")
    parser.add_argument("--lines", type=int, default=20_000, help="shell-log commands in part 1")
    parser.add_argument("--chain-lines", type=int, default=20_000, help="commands in part 3")
    parser.add_argument("--commits", type=int, default=5000, help="size of part 1's repository")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.lines, args.chain_lines = 6, 3000, 3000
    started = time.perf_counter()
    print("# NexusMem agent loop\n")
    print(f"{machine()}. Load average at the start: {os.getloadavg()[0]:.2f}.\n", flush=True)
    base = Path(tempfile.mkdtemp(prefix="nexusmem-bench-agent-"))
    try:
        repo, env, records = setup_memory(base, args)
        failed = failed_command(records)
        print(
            f"Memory: a {args.commits:,}-commit repository, {args.lines:,} shell commands synced "
            f"({sum(1 for r in records if r['exit']):,} failed), 200 agent records not synced "
            f"yet. The failed command timed: `{failed}`.\n"
        )
        bench_latency(base, repo, env, failed, args.runs)
        violations = bench_notes(repo, base, env, records, args.quick)
        sys.stdout.flush()
        bench_chains(base, args, env)
        bench_error_chains(base, args, env)
    finally:
        reap(timeout=30)  # nothing is left running behind us, even after an error
        shutil.rmtree(base, ignore_errors=True)
    took = time.perf_counter() - started
    print(f"Load average at the end: {os.getloadavg()[0]:.2f}; total time {took:.0f} s.")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
