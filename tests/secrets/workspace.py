"""One isolated NexusMem installation for a channel run: a git repository, a ``NEXUSMEM_HOME``,
a ``HOME`` and agent directories of its own, and every entry point run as a separate process
the way a user, a shell hook or Claude Code runs it.

Whatever a run leaves behind is what the leak search reads: the files of ``.nexusmem/`` (the
database and its WAL and shared-memory files, config, locks; backups are kept apart, since
``scrub-secrets`` documents that they keep the old text), every file under the home directory
(hook logs, registry, session state), and the stdout and stderr of every process run here
(structlog writes to stderr).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "Commit", "Workspace"]

ROOT = Path(__file__).resolve().parents[2]
RECORDER = "nexusmem_core.collectors.shell.record"
HOOK = ROOT / "nexusmem_core" / "collectors" / "agent" / "hook.py"
BASE_TS = 1_767_225_600  # 2026-01-01T00:00:00Z
WORKERS = max(2, os.cpu_count() or 2)

Commit = tuple[str, dict[str, str]]  # a message and the files it writes


class Workspace:
    """A repository and the homes around it, under ``root``; ``outputs`` collects what every
    process printed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "repo"
        self.home = root / "nexusmem-home"
        self.claude = root / "claude"
        self.outputs: list[bytes] = []
        self.commits = 0
        for path in (self.repo, self.home, root / "user", self.claude, root / "codex"):
            path.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "NEXUSMEM_HOME": str(self.home),
            "HOME": str(root / "user"),  # no scraping of the user's own shell history
            "CLAUDE_CONFIG_DIR": str(self.claude),
            "CODEX_HOME": str(root / "codex"),
            "OLLAMA_HOST": "127.0.0.1:9",  # nothing listens there: no embedding, no network
            "NEXUSMEM_VECTOR": "off",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
        }
        self.env.pop("NEXUSMEM_EMBED_MODEL", None)
        # An installed NexusMem has its bytecode cached; without it every hook process would
        # compile the package again. The cache is the run's own (one for all its workspaces),
        # never in the tree.
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["PYTHONPYCACHEPREFIX"] = str(root.parent / "pycache")

    def run(self, argv: Sequence[str], input: bytes | None = None) -> subprocess.CompletedProcess:
        done = subprocess.run(
            list(argv), cwd=self.repo, env=self.env, input=input, capture_output=True,
            timeout=600,
        )  # fmt: skip
        self.outputs += [done.stdout, done.stderr]
        return done

    def nexusmem(self, *args: str) -> subprocess.CompletedProcess:
        """``nexusmem ARGS`` as the console script runs it (``cli:main``), in the repository."""
        done = self.run([sys.executable, "-c", "import sys, cli; sys.exit(cli.main())", *args])
        if done.returncode != 0:
            raise RuntimeError(f"nexusmem {' '.join(args)}: {done.stderr.decode()[-2000:]}")
        return done

    # --- the repository ------------------------------------------------------------------

    def git(self, *args: str, input: bytes | None = None) -> bytes:
        done = subprocess.run(
            ["git", *args], cwd=self.repo, env=self.env, input=input, capture_output=True,
            check=True,
        )  # fmt: skip
        return done.stdout

    def commit_all(self, commits: Iterable[Commit]) -> None:
        """Write ``commits`` on ``main`` in one ``git fast-import`` stream (an hour apart), then
        check the result out, so the work tree holds the files as a clone would."""
        if not (self.repo / ".git").exists():
            self.git("init", "-q", "-b", "main")
            self.git("config", "user.name", "Test Author")
            self.git("config", "user.email", "test@example.com")
        tip = subprocess.run(
            ["git", "rev-parse", "-q", "--verify", "main"], cwd=self.repo, env=self.env,
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        stream = bytearray()
        for n, (message, files) in enumerate(commits):
            when = BASE_TS + 3600 * (n + self.commits)
            self.commits += 1
            data = message.encode()
            stream += b"commit refs/heads/main\n"
            stream += f"author Test Author <test@example.com> {when} +0000\n".encode()
            stream += f"committer Test Author <test@example.com> {when} +0000\n".encode()
            stream += b"data %d\n%s\n" % (len(data), data)
            if tip and n == 0:
                stream += f"from {tip}\n".encode()
            for path, text in files.items():
                blob = text.encode()
                stream += f"M 100644 inline {path}\n".encode()
                stream += b"data %d\n%s\n" % (len(blob), blob)
        self.git("fast-import", "--quiet", input=bytes(stream))
        self.git("reset", "-q", "--hard", "main")

    def init(self, **config: Any) -> None:
        """``nexusmem init``, then ``config`` merged into ``.nexusmem/config.json``
        (``{"sources": {"diff": {"maxCommits": 5000}}}`` style, camelCase as on disk)."""
        self.nexusmem("init")
        path = self.repo / ".nexusmem" / "config.json"
        current = json.loads(path.read_text())
        path.write_text(json.dumps(_merged(current, config), indent=2) + "\n")

    # --- the hooks -------------------------------------------------------------------------

    def record_shell(self, commands: Sequence[tuple[str, str]]) -> None:
        """Each ``(session, command)`` through the shell recorder as the bash hook starts it:
        the command on stdin, the facts as options, the working directory the repository."""

        def one(item: tuple[int, tuple[str, str]]) -> subprocess.CompletedProcess:
            n, (session, command) = item
            start = BASE_TS + 10 * n
            argv = [
                sys.executable, "-m", RECORDER, "--home", str(self.home), "--shell", "bash",
                "--exit", "0", "--start", f"{start}.250", "--end", f"{start + 1}.750",
                "--cwd", str(self.repo), "--session", session,
            ]  # fmt: skip
            return self.run(argv, input=command.encode())

        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(one, enumerate(commands)))

    def agent_events(self, payloads: Sequence[Sequence[dict[str, Any]]]) -> None:
        """Each sequence of Claude Code hook payloads, in order, through the installed hook
        command (``python -S -P hook.py``, payload on stdin); sequences run side by side."""

        def chain(events: Sequence[dict[str, Any]]) -> None:
            for event in events:
                data = json.dumps(event).encode()
                self.run([sys.executable, "-S", "-P", str(HOOK)], input=data)

        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(chain, payloads))

    # --- what is left --------------------------------------------------------------------

    def stored(self) -> bytes:
        """Every byte NexusMem left outside the repository's own files, joined."""
        parts = [_files(self.repo / ".nexusmem", skip="backups"), _files(self.home)]
        return b"\n\0\n".join([*parts, *self.outputs])

    def backups(self) -> bytes:
        return _files(self.repo / ".nexusmem" / "backups")


def _files(top: Path, skip: str | None = None) -> bytes:
    chunks = []
    for dirpath, dirnames, filenames in os.walk(top):
        if skip in dirnames:
            dirnames.remove(skip)
        for name in filenames:
            try:
                chunks.append(Path(dirpath, name).read_bytes())
            except OSError:
                continue
    return b"\n\0\n".join(chunks)


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out
