"""The shell hook's cost: at the prompt, in the background recorder, and at sync time.

    .venv/bin/python bench/bench_shell.py [--iterations 200] [--warmup 20] [--lines 100000]
                                          [--shells bash zsh fish] [--profile 20]

1. **Prompt overhead.** For bash, zsh and fish, three interactive shells run under a pty side
   by side: one whose rc file only sets the prompt, one with the same rc file plus the NexusMem
   hook (``hooks.install`` into its temporary HOME), and one with the hook pointed at
   ``/bin/true`` instead of Python (the shell's own share of the cost). ``true`` is typed again
   and again and the time from writing Enter to reading the next prompt is measured; for bash
   also a bare Enter, which takes another path through the hook. The shells alternate in
   blocks, so a busy moment on a shared machine hits all of them. After each command the
   hooked shell's recorder is given time to land its line (as it would between two commands a
   person types), and the lines are checked: one per command, none for a bare Enter.
2. **Recorder.** The background process a hook starts for each command, timed on its own.
3. **Sync.** A 100,000-line hook log, about half of it run inside a small repository, then
   ``nexusmem sync -q`` as a whole process: first (ingests), second (nothing new), and after
   1,000 more lines (incremental). ``--profile N`` adds a cProfile of the first sync.

Markdown tables go to stdout, progress to stderr. ``NEXUSMEM_HOME`` and ``HOME`` point at
temporary directories; the user's own shell files and registry are never touched.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import os
import pstats
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _common import (
    NEXUSMEM,
    PYTHON,
    ROOT,
    bench_env,
    machine,
    mark,
    measured,
    median,
    percentile,
    run,
    table,
)

sys.path.insert(0, str(ROOT))
from nexusmem_core.collectors.shell import hooks
from nexusmem_core.collectors.shell.hooklog import LOG_FILE
from nexusmem_core.collectors.shell.scripts import RECORDER as RECORDER_FILE
from nexusmem_core.trust import KEY_FILE
from tests.collectors.shell.pty_shell import spawn

TARGET_HOOK_MS = 5.0  # the hook's cost at the prompt, difference of medians
TARGET_PEAK_MB = 150.0  # a sync's peak RSS, as in bench_sync.py
# The prompt: a counter between markers that typed input never contains.
PROMPT_RE = re.compile(r"<NXM-(\d+)>")
SHELLS = ("bash", "zsh", "fish")
RECORDER = "nexusmem_core.collectors.shell.record"  # the module; the scripts run RECORDER_FILE


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- an interactive shell under a pty (as tests/collectors/shell/pty_shell.py, timed) ----------


class PtyShell:
    """An interactive shell on a pty; ``enter`` types a line and times the next prompt.

    The prompt carries a counter that grows by one each time the shell computes a prompt, so a
    new prompt is told from a repaint of the old one (fish redraws the prompt and the line when
    Enter is pressed, before running it) and from the echo of what was typed.
    """

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc, self.master = spawn(argv, env, cwd)
        self.output = ""
        self.prompts = 0  # the counter in the last prompt read
        self.skipped = 0  # prompts that came and went unseen: the shell drew more than one
        self._read_prompt(30.0)

    def _read(self, timeout: float) -> None:
        if select.select([self.master], [], [], timeout)[0]:
            chunk = os.read(self.master, 65536)
            if not chunk:
                raise EOFError(f"the shell exited: {self.output[-400:]!r}")
            self.output += chunk.decode("utf-8", "replace")

    def _newer(self) -> int:
        return max((int(n) for n in PROMPT_RE.findall(self.output)), default=0)

    def _read_prompt(self, timeout: float) -> float:
        """Read until a prompt newer than the last one; return the perf_counter() it came at."""
        deadline = time.monotonic() + timeout
        while (seen := self._newer()) <= self.prompts:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no prompt after {timeout}s; got: {self.output[-400:]!r}")
            self._read(left)
        arrived = time.perf_counter()
        self.skipped += seen - self.prompts - 1 if self.prompts else 0
        self.prompts = seen
        self.output = ""
        return arrived

    def _drain(self) -> None:
        """Read what the shell printed since the last prompt; a newer prompt in it is counted."""
        while select.select([self.master], [], [], 0)[0]:
            self._read(0)
        if (seen := self._newer()) > self.prompts:
            self.skipped += seen - self.prompts
            self.prompts = seen
        self.output = ""

    def enter(self, line: str, timeout: float = 15.0) -> float:
        """Type ``line`` and Enter; seconds from writing Enter to reading the next prompt."""
        self._drain()
        if line:
            os.write(self.master, line.encode())
            # Only Enter to prompt is timed: wait for the line editor to echo the text first.
            deadline = time.monotonic() + 2.0
            while line not in self.output and time.monotonic() < deadline:
                self._read(0.5)
            self._drain()
        start = time.perf_counter()
        os.write(self.master, b"\r")
        return self._read_prompt(timeout) - start

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        os.close(self.master)


# Each prompt shows a counter it increments itself: <NXM-1>, <NXM-2>, ...
USER_RC = {
    "bash": (".bashrc", "PS1='<NXM-$((++__bench_prompts))>'\n"),
    "zsh": (
        ".zshrc",
        "setopt PROMPT_SUBST\nunsetopt PROMPT_SP\nPS1='<NXM-$((++__bench_prompts))>'\n",
    ),
    "fish": (
        ".config/fish/config.fish",
        "set -g __bench_prompts 0\n"
        "function fish_prompt\n"
        "    set -g __bench_prompts (math $__bench_prompts + 1)\n"
        "    printf '<NXM-%s>' $__bench_prompts\n"
        "end\n"
        "function fish_greeting; end\n",
    ),
}


def shell_version(shell: str) -> str:
    if shutil.which(shell) is None:
        return "(not installed)"
    out = subprocess.run([shell, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"\d+\.\d+(\.\d+)?", out)
    return match.group(0) if match else "?"


def shell_argv(shell: str, home: Path) -> list[str]:
    if shell == "bash":
        return ["bash", "--noprofile", "--rcfile", str(home / ".bashrc"), "-i"]
    return [shell, "-i"]


def shell_env(home: Path, nm_home: Path, shell: str) -> dict[str, str]:
    return {
        "HOME": str(home),
        "NEXUSMEM_HOME": str(nm_home),
        "TERM": "dumb",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "SHELL": shutil.which(shell) or f"/usr/bin/{shell}",
        "LANG": "C.UTF-8",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "ZDOTDIR": str(home),
        "HISTCONTROL": "ignorespace",
    }


# The shells each case runs in, side by side: the hook's recorder interpreter, or None for no hook.
# "stub" runs the hook with /bin/true for the interpreter: everything the shell does, without
# the recorder's Python starting up next to it on the same cores.
VARIANTS = {"plain": None, "hooked": PYTHON, "stub": "/bin/true"}


def start_shell(
    shell: str, base: Path, variant: str, extra_env: dict[str, str] | None = None
) -> tuple[PtyShell, Path]:
    """A shell whose rc only sets the prompt, plus the hook unless ``variant`` is plain; and the
    NEXUSMEM_HOME it logs into. ``extra_env`` is added to the shell's environment (and so the
    recorder's): ``PYTHONDONTWRITEBYTECODE``, say."""
    home, nm_home = base / f"{shell}-{variant}-home", base / f"{shell}-{variant}-nm"
    work = base / "work"
    work.mkdir(parents=True, exist_ok=True)
    env = shell_env(home, nm_home, shell) | (extra_env or {})
    rc_name, rc_text = USER_RC[shell]
    (home / rc_name).parent.mkdir(parents=True, exist_ok=True)
    (home / rc_name).write_text(rc_text)
    if shell == "fish":
        # fish's first interactive start in a HOME makes completions from every man page, a
        # Python process per shell taking a core for ~10 s: once a machine for a user, but
        # here every fresh shell did it, and the hooked one's first ~90 prompts read +11 ms
        # instead of +3 (the recorder found no free core beside it). Made already.
        (home / ".local" / "share" / "fish" / "generated_completions").mkdir(parents=True)
    python = VARIANTS[variant]
    if python is not None:
        hooks.install(shell, nm_home, python, env)
    return PtyShell(shell_argv(shell, home), env, work), nm_home


def log_lines(nm_home: Path) -> int:
    try:
        return (nm_home / LOG_FILE).read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_lines(nm_home: Path, count: int, timeout: float) -> bool:
    """Wait until the hook log holds ``count`` lines (the recorder runs in the background)."""
    deadline = time.monotonic() + timeout
    while log_lines(nm_home) < count:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def check_lines(nm_home: Path, shell: str, typed: set[str]) -> int:
    """How many log lines are not a record of one of the ``typed`` commands, exit 0."""
    wrong = 0
    try:
        text = (nm_home / LOG_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            wrong += 1
            continue
        ok = record.get("cmd") in typed and record.get("exit") == 0
        wrong += not (ok and record.get("shell") == shell and record.get("cwd"))
    return wrong


@dataclass
class PromptCase:
    shell: str
    line: str  # what is typed before Enter ("" for a bare Enter)
    times: dict[str, list[float]] = field(default_factory=dict)  # variant -> seconds
    expected: int = 0  # records the hooked shell should have logged by the end (all cases)
    logged: int = 0  # records it did log
    late: int = 0  # commands whose record had not landed within the wait
    skipped: int = 0  # prompts drawn more often than Enter was pressed (a desync)
    wrong: int = 0  # lines that are not {"cmd": line, "exit": 0, "shell": shell, ...}

    def p50(self, variant: str) -> float:
        return median(self.times[variant]) * 1e3

    def p99(self, variant: str) -> float:
        return percentile(self.times[variant], 99) * 1e3


def bench_prompt(
    shell: str,
    lines: list[str],
    iterations: int,
    warmup: int,
    block: int,
    pause: float,
    extra_env: dict[str, str] | None = None,
) -> list[PromptCase]:
    """Per line, ``warmup`` untimed then ``iterations`` timed Enters in each variant's shell,
    in alternating blocks of ``block``. With ``pause``, after a recorded command the hooked
    shell's line is waited for, then ``pause`` seconds in every shell (the gap between two
    typed commands); without, Enters go back to back. ``extra_env``: see ``start_shell``."""
    base = Path(tempfile.mkdtemp(prefix=f"nexusmem-bench-{shell}-"))
    sessions: dict[str, PtyShell] = {}
    cases = [PromptCase(shell, line) for line in lines]
    records = 0  # what the hooked shell should have logged so far
    try:
        nm_hooked = base
        for variant in VARIANTS:
            sessions[variant], nm_home = start_shell(shell, base, variant, extra_env)
            if variant == "hooked":
                nm_hooked = nm_home
        for case in cases:
            recorded = bool(case.line.strip())
            case.times = {v: [] for v in VARIANTS}

            def type_in(variant: str, case: PromptCase = case, recorded: bool = recorded) -> float:
                nonlocal records
                seconds = sessions[variant].enter(case.line)
                if recorded and pause:
                    if variant == "hooked":
                        records += 1
                        if not wait_lines(nm_hooked, records, 5.0):
                            case.late += 1
                    time.sleep(pause)
                elif recorded and variant == "hooked":
                    records += 1
                return seconds

            for _ in range(warmup):
                for variant in VARIANTS:
                    type_in(variant)
            done, order = 0, list(VARIANTS)
            while done < iterations:
                n = min(block, iterations - done)
                for variant in order:
                    case.times[variant].extend(type_in(variant) for _ in range(n))
                order.reverse()  # ABC CBA ...: a drift over time hits every variant alike
                done += n
            say(
                f"  {shell} {case.line or '<Enter>'!r}: p50 "
                + ", ".join(f"{v} {case.p50(v):.2f} ms" for v in VARIANTS)
            )
        wait_lines(nm_hooked, records, 10.0)
        time.sleep(0.5)  # a record beyond the expected ones (a duplicate) would land by now
        logged = log_lines(nm_hooked)
        skipped = sum(s.skipped for s in sessions.values())
        wrong = check_lines(nm_hooked, shell, {c.line for c in cases if c.line.strip()})
        for case in cases:
            case.expected, case.logged, case.skipped, case.wrong = records, logged, skipped, wrong
        if skipped:
            say(f"  WARNING: {shell}: {skipped} more prompts than Enters: timings may be off")
    finally:
        for session in sessions.values():
            session.close()
        shutil.rmtree(base, ignore_errors=True)
    return cases


def print_prompt(cases: list[PromptCase], iterations: int, warmup: int, pause: float) -> None:
    print("## Prompt overhead of the hook\n")
    print(
        "Wall time from writing Enter to reading the next prompt, "
        f"{iterations} Enters per shell and case after {warmup} warm-up ones. *without*: an rc "
        "file that only sets the prompt; *with hook*: the same rc plus `hooks.install`; "
        "*recorder stubbed*: the hook with `/bin/true` as its interpreter (the shell's own "
        "work, without the recorder's Python starting on the same cores). The three shells run "
        "side by side, alternating in blocks. "
        + (
            "After each recorded command the hook's line was waited for, then "
            f"{pause * 1e3:g} ms in every shell (a person types slower than that).\n"
            if pause
            else "Enters were typed back to back (recorders pile up in the background).\n"
        )
    )
    rows = []
    for c in cases:
        cost = c.p50("hooked") - c.p50("plain")
        rows.append(
            [
                c.shell,
                f"`{c.line}`" if c.line else "Enter alone",
                f"{c.p50('plain'):.2f}",
                f"{c.p99('plain'):.2f}",
                f"{c.p50('hooked'):.2f}",
                f"{c.p99('hooked'):.2f}",
                f"{cost:+.2f} {mark(cost < TARGET_HOOK_MS)}",
                f"{c.p50('stub') - c.p50('plain'):+.2f}",
            ]
        )
    print(
        table(
            [
                "shell",
                "typed",
                "p50 without (ms)",
                "p99 without (ms)",
                "p50 with hook (ms)",
                "p99 with hook (ms)",
                "hook cost, Δp50 (ms)",
                "Δp50, recorder stubbed (ms)",
            ],
            rows,
            align=["l", "l", "r", "r", "r", "r", "r", "r"],
        )
    )
    print(f"\nTarget: the hook adds under {TARGET_HOOK_MS:g} ms at p50.\n")
    rows = []
    seen = set()
    for c in cases:
        if c.shell in seen:
            continue
        seen.add(c.shell)
        ok = c.logged == c.expected and c.late == 0 and c.wrong == 0
        rows.append(
            [
                c.shell,
                f"{c.expected:,}",
                f"{c.logged:,}",
                f"{c.wrong:,}",
                f"{c.late:,}",
                f"{c.skipped:,}",
                mark(ok),
            ]
        )
    print("### Records the hooked shells logged\n")
    print(
        table(
            [
                "shell",
                "commands typed",
                "lines in the log",
                "wrong lines",
                "late (> 5 s)",
                "extra prompts",
                "one line each",
            ],
            rows,
        )
    )
    print(
        "\nEvery non-empty command typed in the hooked shell (warm-up included) should give "
        "exactly one line (its text, exit 0, the shell's name, a cwd), and a bare Enter none. "
        "*late*: lines not there 5 s after the prompt. *extra prompts*: prompts drawn without "
        "an Enter (they would make the timings suspect).\n"
    )


# --- the recorder on its own ----------------------------------------------------------------


def bench_recorder(runs: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="nexusmem-bench-rec-"))
    facts = ["--home", str(home), "--shell", "bash", "--exit", "1"]
    facts += ["--start", "1", "--end", "2", "--cwd", "/tmp"]
    cmd = [PYTHON, "-S", "-P", RECORDER_FILE, *facts]  # as the hook scripts run it
    old = [PYTHON, "-m", RECORDER, *facts]  # as scripts before version 3 did
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXUSMEM")}
    env["NEXUSMEM_HOME"] = str(home)

    def timed(argv: list[str], stdin: bytes) -> float:
        t0 = time.perf_counter()
        subprocess.run(argv, input=stdin, env=env, cwd="/tmp", check=True)
        return time.perf_counter() - t0

    try:
        say("recorder ...")
        timed(cmd, b"make test")  # the first one also creates hook.key
        rec = [timed(cmd, b"make test") for _ in range(runs)]
        landed = log_lines(home)
        with_site = [timed(old, b"make test") for _ in range(runs)]
        bare = [timed([PYTHON, "-c", "pass"], b"") for _ in range(runs)]
        isolated = [timed([PYTHON, "-I", "-S", "-c", "pass"], b"") for _ in range(runs)]
        path = f"import sys; sys.path.insert(0, {str(ROOT)!r}); import {RECORDER}"
        imports = [timed([PYTHON, "-S", "-P", "-c", path], b"") for _ in range(runs)]
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print("## Background recorder\n")
    print(
        "`printf 'make test' | python -S -P .../shell/hook.py --home TMP ...`, the process every "
        f"recorded command starts in the background; median of {runs} (one warm-up before). "
        "It does not hold up the prompt, but it takes a core for this long.\n"
    )
    print(
        table(
            ["what", "p50 (ms)", "max (ms)"],
            [
                ["recorder, one command", f"{median(rec) * 1e3:.1f}", f"{max(rec) * 1e3:.1f}"],
                [
                    f"the same with site-packages (`python -m {RECORDER}`, scripts before v3)",
                    f"{median(with_site) * 1e3:.1f}",
                    f"{max(with_site) * 1e3:.1f}",
                ],
                [
                    "`python -c pass` (same venv)",
                    f"{median(bare) * 1e3:.1f}",
                    f"{max(bare) * 1e3:.1f}",
                ],
                ["`python -I -S -c pass`", f"{median(isolated) * 1e3:.1f}", ""],
                [f"`python -S -P -c 'import {RECORDER}'`", f"{median(imports) * 1e3:.1f}", ""],
            ],
        )
    )
    want = runs + 1
    print(f"\nRecords landed: {landed} of {want} {mark(landed == want)}.\n")


# --- sync of a large hook log -----------------------------------------------------------------

WORDS = "auth cache parser config retry session token index schema upload router queue".split()
MODULES = "api models utils cli storage search sync worker client server views".split()
PACKAGES = "requests httpx pydantic lodash react typescript numpy pandas rich".split()
BRANCHES = "main develop fix/login feat/search chore/deps release/1.4".split()
TEMPLATES = [
    (12, "make"),
    (10, "make test"),
    (4, "make lint"),
    (3, "make -j4 build"),
    (10, "pytest"),
    (8, "pytest tests/test_{mod}.py -x"),
    (5, "pytest -k {word} -q"),
    (3, "python -m pytest -q tests/{mod}"),
    (12, "git status"),
    (8, "git diff"),
    (4, "git add -p"),
    (6, "git commit -m 'fix {word} in {mod}'"),
    (4, "git push"),
    (3, "git pull --rebase"),
    (3, "git checkout {branch}"),
    (2, "git log --oneline -20"),
    (2, "git rebase -i HEAD~{n}"),
    (2, "git stash"),
    (5, "npm install"),
    (4, "npm run build"),
    (4, "npm test"),
    (2, "npm i {pkg}"),
    (12, "ls"),
    (6, "ls -la"),
    (10, "cd {mod}"),
    (6, "cd .."),
    (3, "cat README.md"),
    (5, "vim src/{mod}.py"),
    (4, "grep -rn {word} src"),
    (3, "pip install {pkg}"),
    (3, "ruff check ."),
    (2, "mypy src"),
    (2, "docker compose up -d"),
    (2, "curl -s http://localhost:8000/{word}"),
    (2, "python scripts/{mod}.py --{word} {n}"),
]
EXIT_CODES = [1] * 14 + [2] * 3 + [127, 130, 128]


def make_repo(path: Path) -> None:
    """A small git repository: a few files, two commits."""
    for sub in ("src", "tests", "docs"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    for mod in MODULES[:4]:
        (path / "src" / f"{mod}.py").write_text(f'"""The {mod} module."""\n')
    (path / "README.md").write_text("# demo\n\nA small project.\n")
    env = {**os.environ, "GIT_AUTHOR_DATE": "2024-01-01T00:00:00", "GIT_COMMITTER_DATE": ""}
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    ident = ["-c", "user.name=Bench", "-c", "user.email=bench@example.com"]
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(["git", "-C", str(path), *ident, "commit", "-qm", "init"], check=True, env=env)
    (path / "tests" / "test_api.py").write_text("def test_ok():\n    assert True\n")
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(
        ["git", "-C", str(path), *ident, "commit", "-qm", "add a test"], check=True, env=env
    )


class LogWriter:
    """Hook-log lines in the shape ``record.build_record`` gives them, written directly."""

    def __init__(self, nm_home: Path, repo: Path, elsewhere: Path, seed: int) -> None:
        self.rng = random.Random(seed)
        nm_home.mkdir(parents=True, exist_ok=True)
        key_path = nm_home / KEY_FILE
        if not key_path.exists():
            key_path.write_bytes(self.rng.randbytes(32))
            key_path.chmod(0o600)
        self.key = key_path.read_bytes()
        self.log = nm_home / LOG_FILE
        self.inside = [str(repo), str(repo / "src"), str(repo / "tests"), str(repo / "docs")]
        self.outside = [
            str(elsewhere / "other-project"),
            str(elsewhere / "other-project" / "web"),
            str(elsewhere),
            "/tmp",
            "/var/log",
        ]
        self.sessions = [f"{1000 + i}-{self.rng.randrange(10**8)}" for i in range(40)]
        self.clock = 1_700_000_000.0
        self.hashes: dict[str, str] = {}
        weights, self.templates = zip(*TEMPLATES, strict=True)
        self.cum = list(self._cumulative(weights))

    @staticmethod
    def _cumulative(weights: tuple[int, ...]) -> list[int]:
        total, out = 0, []
        for w in weights:
            total += w
            out.append(total)
        return out

    def command(self) -> str:
        rng = self.rng
        template = rng.choices(self.templates, cum_weights=self.cum)[0]
        return template.format(
            mod=rng.choice(MODULES),
            word=rng.choice(WORDS),
            pkg=rng.choice(PACKAGES),
            branch=rng.choice(BRANCHES),
            n=rng.randrange(2, 30),
        )

    def write(self, count: int) -> int:
        """Append ``count`` lines; return how many of them were run inside the repository."""
        rng = self.rng
        inside = 0
        with open(self.log, "a", encoding="utf-8") as out:
            for _ in range(count):
                cmd = self.command()
                digest = self.hashes.get(cmd)
                if digest is None:
                    digest = hmac.new(self.key, cmd.encode(), hashlib.sha256).hexdigest()
                    self.hashes[cmd] = digest
                if rng.random() < 0.5:
                    cwd = rng.choice(self.inside)
                    inside += 1
                else:
                    cwd = rng.choice(self.outside)
                self.clock += rng.expovariate(1 / 40.0)
                duration = round(min(600.0, rng.lognormvariate(-1.5, 1.6)), 3)
                record = {
                    "v": 1,
                    "id": f"{rng.getrandbits(96):024x}",
                    "shell": rng.choice(("bash", "bash", "zsh", "fish")),
                    "session": rng.choice(self.sessions),
                    "cwd": cwd,
                    "exit": rng.choice(EXIT_CODES) if rng.random() < 0.2 else 0,
                    "start": round(self.clock, 3),
                    "duration": duration,
                    "cmd": cmd,
                    "cmd_hash": digest,
                    "redactions": 0,
                }
                out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
        return inside


def shell_nodes(repo: Path, env: dict[str, str]) -> int:
    status = json.loads(run([NEXUSMEM, "status", "-C", str(repo), "--json"], env).stdout)
    return int(status.get("by_kind", {}).get("shell_command", 0))


@dataclass
class SyncRun:
    lines: int
    log_mb: float
    generate_s: float
    first: dict
    second: list[dict]  # one per repeat
    third: list[dict]  # one per repeat, each after ``more`` new lines
    expected_first: int
    ingested_first: int
    expected_more: int  # over all repeats
    ingested_more: int


def bench_sync_log(lines: int, more: int, repeats: int, seed: int) -> SyncRun:
    """A ``lines``-line log, first sync; ``repeats`` second syncs; ``repeats`` times ``more``
    new lines and an incremental sync."""
    base = Path(tempfile.mkdtemp(prefix="nexusmem-bench-shellsync-"))
    try:
        repo, nm_home = base / "repo", base / "nm"
        make_repo(repo)
        env = bench_env(nm_home)
        run([NEXUSMEM, "init", "-C", str(repo)], env)
        say(f"sync: writing a {lines:,}-line hook log ...")
        writer = LogWriter(nm_home, repo, base / "elsewhere", seed)
        t0 = time.perf_counter()
        expected_first = writer.write(lines)
        generate_s = time.perf_counter() - t0
        log_mb = writer.log.stat().st_size / 1024 / 1024
        sync = [NEXUSMEM, "sync", "-C", str(repo), "-q"]
        say(f"  written in {generate_s:.1f}s ({log_mb:.1f} MB); first sync ...")
        first = measured(sync, env)
        ingested_first = shell_nodes(repo, env)
        say(f"  first sync {first['seconds']:.2f}s; second syncs ...")
        second = [measured(sync, env) for _ in range(repeats)]
        say(f"  second sync {median([r['seconds'] for r in second]):.3f}s; incremental ...")
        third, expected_more = [], 0
        for _ in range(repeats):
            expected_more += writer.write(more)
            third.append(measured(sync, env))
        ingested_more = shell_nodes(repo, env) - ingested_first
        say(f"  incremental sync {median([r['seconds'] for r in third]):.3f}s")
        return SyncRun(
            lines,
            log_mb,
            generate_s,
            first,
            second,
            third,
            expected_first,
            ingested_first,
            expected_more,
            ingested_more,
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


def print_sync(runs: list[SyncRun], more: int, repeats: int) -> None:
    r0 = runs[0]
    print("## Sync of a large hook log\n")
    print(
        f"A {r0.lines:,}-line `shell-history.jsonl` ({r0.log_mb:.1f} MB; make/pytest/git/npm/ls/"
        "cd ... with about 20% non-zero exits; about half run inside a small git repository, "
        "the rest elsewhere), then `nexusmem sync -C repo -q` timed as a whole process "
        "(interpreter start-up included). Peak RSS: the sync process and its git children "
        "(the Python process alone in brackets). First sync: median of "
        f"{len(runs)} run(s); second and incremental syncs: median of {repeats} per run "
        f"(each incremental one after {more:,} new lines).\n"
    )

    idle = median([x["seconds"] for r in runs for x in r.second])

    def row(name: str, results: list[dict], lines: int, expected: int, got: int) -> list[str]:
        seconds = median([r["seconds"] for r in results])
        peak = median([r["tree_maxrss_kb"] for r in results]) / 1024
        self_peak = median([r["self_hwm_kb"] for r in results]) / 1024
        return [
            name,
            f"{lines:,}",
            f"{seconds:.3f}",
            f"{lines / seconds:,.0f}" if lines else "-",
            f"{seconds - idle:+.3f}" if lines else "-",
            f"{got:,} of {expected:,} {mark(got == expected)}",
            f"{peak:.0f} ({self_peak:.0f}) {mark(peak < TARGET_PEAK_MB)}",
        ]

    rows = [
        row("first sync", [r.first for r in runs], r0.lines, r0.expected_first, r0.ingested_first),
        row("second sync (nothing new)", [x for r in runs for x in r.second], 0, 0, 0),
        row(
            f"incremental (+{more:,} lines)",
            [x for r in runs for x in r.third],
            more,
            r0.expected_more,
            r0.ingested_more,
        ),
    ]
    print(
        table(
            [
                "sync",
                "new log lines",
                "wall (s)",
                "lines/s",
                "over a second sync (s)",
                "commands ingested",
                "peak RSS (MB)",
            ],
            rows,
        )
    )
    print(
        "\n*over a second sync*: the wall time minus that of a sync with nothing new (start-up, "
        "git, the log's cursor), i.e. what the new lines cost. "
        "*commands ingested*: `shell_command` nodes in `nexusmem status`, against the lines "
        "whose cwd is inside the repository (for the incremental syncs, all repeats together). "
        f"Peak RSS target (as in bench_sync.py): under {TARGET_PEAK_MB:g} MB."
    )
    if len(runs) > 1:
        each = " / ".join(f"{r.first['seconds']:.2f}" for r in runs)
        print(f"\nFirst sync, each run: {each} s.")
    print(
        "\nSecond syncs, each: "
        + " / ".join(f"{x['seconds']:.3f}" for r in runs for x in r.second)
        + " s; incremental, each: "
        + " / ".join(f"{x['seconds']:.3f}" for r in runs for x in r.third)
        + f" s. Generating the log took {r0.generate_s:.1f} s.\n"
    )


def profile_sync(lines: int, seed: int, top: int) -> None:
    """The first sync of the same log under cProfile: the top functions."""
    base = Path(tempfile.mkdtemp(prefix="nexusmem-bench-shellprof-"))
    stats_file = base / "sync.prof"
    try:
        repo, nm_home = base / "repo", base / "nm"
        make_repo(repo)
        env = bench_env(nm_home)
        run([NEXUSMEM, "init", "-C", str(repo)], env)
        LogWriter(nm_home, repo, base / "elsewhere", seed).write(lines)
        say("profiling the first sync ...")
        cli = [str(ROOT / "cli.py"), "sync", "-C", str(repo), "-q"]
        t0 = time.perf_counter()
        run([PYTHON, "-m", "cProfile", "-o", str(stats_file), *cli], env)
        wall = time.perf_counter() - t0
        stats = pstats.Stats(str(stats_file))
        entries = []
        for (filename, lineno, func), row in stats.stats.items():  # type: ignore[attr-defined]
            _, calls, tottime, cumtime, _ = row
            where = filename.replace(str(ROOT) + "/", "")
            ours = where.startswith("nexusmem_core/")
            if "/lib/python3" in where:
                where = where.split("/lib/python3", 1)[1].split("/", 1)[1]
            entries.append((cumtime, tottime, calls, f"{where}:{lineno}({func})", ours))
        print("## Where the first sync's time goes (cProfile)\n")
        print(
            f"`python -m cProfile cli.py sync -C repo -q` on the same {lines:,}-line log: "
            f"{wall:.1f} s under the profiler. Work done in threads (reading the log, SQLite "
            "writes) shows as the main thread waiting in `epoll.poll`.\n"
        )
        picks = (
            ("cumulative time, NexusMem's own functions", 0, True),
            ("own time, all functions", 1, False),
        )
        for title, index, only_ours in picks:
            chosen = [e for e in entries if e[4] or not only_ours]
            rows = [
                [f"`{name}`", f"{calls:,}", f"{tot:.3f}", f"{cum:.3f}"]
                for cum, tot, calls, name, _ in sorted(chosen, key=lambda e: -e[index])[:top]
            ]
            print(f"### Top {top} by {title}\n")
            print(table(["function", "calls", "own (s)", "cumulative (s)"], rows))
            print()
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=200, help="timed Enters per case")
    parser.add_argument("--warmup", type=int, default=20, help="untimed Enters first")
    parser.add_argument("--block", type=int, default=20, help="Enters per alternating block")
    parser.add_argument("--shells", nargs="+", default=list(SHELLS), choices=SHELLS)
    parser.add_argument(
        "--pause",
        type=float,
        default=0.02,
        help="seconds between a recorded command's line landing and the next Enter; "
        "0 types back to back",
    )
    parser.add_argument("--recorder-runs", type=int, default=20)
    parser.add_argument("--lines", type=int, default=100_000, help="hook log lines to sync")
    parser.add_argument("--more", type=int, default=1000, help="lines appended before sync 3")
    parser.add_argument("--sync-runs", type=int, default=1, help="first-sync runs (median)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="second and incremental syncs per run (median)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="also cProfile a first sync, top N"
    )
    parser.add_argument("--skip", nargs="+", default=[], choices=["prompt", "recorder", "sync"])
    args = parser.parse_args(argv)

    started = time.perf_counter()
    print("# NexusMem shell hook\n")
    print(
        f"{machine()}; bash {shell_version('bash')}, zsh {shell_version('zsh')}, "
        f"fish {shell_version('fish')}. Load average at the start: {os.getloadavg()[0]:.2f} "
        "(the machine may be shared: see the end for the load then).\n"
    )
    sys.stdout.flush()
    if "prompt" not in args.skip:
        cases: list[PromptCase] = []
        for shell in args.shells:
            if shutil.which(shell) is None:
                say(f"{shell} is not installed: skipped")
                continue
            say(f"prompt: {shell} ...")
            lines = ["true", ""] if shell == "bash" else ["true"]
            cases += bench_prompt(
                shell, lines, args.iterations, args.warmup, args.block, args.pause
            )
        if cases:
            print_prompt(cases, args.iterations, args.warmup, args.pause)
            sys.stdout.flush()
    if "recorder" not in args.skip:
        bench_recorder(args.recorder_runs)
        sys.stdout.flush()
    if "sync" not in args.skip:
        runs = [
            bench_sync_log(args.lines, args.more, args.repeats, args.seed + i)
            for i in range(args.sync_runs)
        ]
        print_sync(runs, args.more, args.repeats)
        if args.profile:
            profile_sync(args.lines, args.seed, args.profile)
    print(
        f"Load average at the end: {os.getloadavg()[0]:.2f}; total time "
        f"{time.perf_counter() - started:.0f} s."
    )
    say(f"done in {time.perf_counter() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
