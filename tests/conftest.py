"""Shared fixtures: settings in a tmp home -> real git repositories -> an open engine.

Everything is real: git runs, SQLite files are written to tmp dirs, the CLI runs as a process.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine, open_engine

ROOT = Path(__file__).resolve().parent.parent
DAY = 86_400
BASE_TS = 1_767_225_600  # 2026-01-01T00:00:00Z
# The console script installed beside this interpreter, exactly what a user runs.
NEXUSMEM = str(Path(sys.executable).with_name("nexusmem"))


def pytest_configure(config: pytest.Config) -> None:
    """Every process the suite starts (the CLI, the hooks, the MCP server: hundreds of them)
    reads the package's bytecode from one cache instead of compiling the package again: an
    editable install has none beside its sources, and with ``PYTHONDONTWRITEBYTECODE=1`` (set
    on these machines, and maybe on a user's) none is ever written, so each process paid the
    compile an installed wheel never pays. The cache is under ``.pytest_cache``, never beside
    the sources; set here, before xdist starts its workers, everything the run starts
    inherits it. What a process imports is unchanged, and no test measures time."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has set it
        return
    cache = getattr(config, "cache", None)  # none with -p no:cacheprovider
    if cache is None:  # nowhere of the run's own to put it
        return
    os.environ.setdefault("PYTHONPYCACHEPREFIX", str(cache.mkdir("pycache")))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


class Repo:
    """A real git repository in a tmp dir, with commits at controlled times."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = BASE_TS
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Test Author")
        self.git("config", "user.email", "test@example.com")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str | bytes, input: bytes | None = None) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_DATE": f"@{self.clock} +0000",
            "GIT_COMMITTER_DATE": f"@{self.clock} +0000",
        }
        out = subprocess.run(
            ["git", *args], cwd=self.path, env=env, input=input, capture_output=True, check=True
        )
        return out.stdout.decode("utf-8", "replace")

    def write(self, name: str | bytes, content: str | bytes) -> None:
        target = self.path / os.fsdecode(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())

    def commit(
        self, message: str | bytes, files: dict[str, str] | None = None, days: float = 1
    ) -> str:
        """Write ``files``, commit everything ``days`` after the previous commit; return sha."""
        self.clock += int(days * DAY)
        for name, content in (files or {}).items():
            self.write(name, content)
        self.git("add", "-A")
        msg = message if isinstance(message, bytes) else message.encode()
        self.git("commit", "-q", "--allow-empty", "-F", "-", input=msg)
        return self.git("rev-parse", "HEAD").strip()


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own NEXUSMEM_HOME: no test may touch the user's registry."""
    path = tmp_path / "home"
    monkeypatch.setenv("NEXUSMEM_HOME", str(path))
    # Hermetic: no test may reach a real Ollama (port 9 is discard: nothing listens there).
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:9")
    monkeypatch.delenv("NEXUSMEM_EMBED_MODEL", raising=False)
    # Nor read the user's own Claude Code transcripts, Codex, Gemini CLI or opencode sessions.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gemini-home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return path


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings.from_env()


@pytest.fixture
def make_repo(tmp_path: Path) -> Callable[[str], Repo]:
    def make(name: str = "repo") -> Repo:
        return Repo(tmp_path / name)

    return make


@pytest.fixture
def repo(make_repo: Callable[[str], Repo]) -> Repo:
    """A small project: a fix with an explanation, a feature, a chore, and docs."""
    r = make_repo("project")
    r.commit(
        "feat: add the retry loop\n\nUploads retry three times before giving up.",
        {
            "src/retry.py": "RETRY_BUDGET = 3\n\ndef upload():\n    pass\n",
            "README.md": "# Project\n\nIntro text.\n\n## Install\n\nRun pip install.\n",
        },
    )
    r.commit(
        "fix: raise the retry budget after S3 upload timeouts\n\n"
        "S3 timed out under load twice in one week; three retries were not enough, "
        "so the budget goes to five and the backoff doubles each time.",
        {"src/retry.py": "RETRY_BUDGET = 5\n\ndef upload():\n    backoff()\n"},
    )
    r.commit("chore: bump version", {"VERSION": "1.0.1\n"})
    r.commit(
        "docs: explain the architecture",
        {
            "docs/guide.rst": "Guide\n=====\n\nOverview of the system.\n\n"
            "Why BM25 first\n--------------\n\nBM25 needs no model and "
            "works offline.\n"
        },
    )
    return r


@pytest.fixture
async def engine(settings: Settings, repo: Repo) -> AsyncIterator[Engine]:
    async with open_engine(settings, repo.path, create=True) as eng:
        yield eng


def run_cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``nexusmem`` as a user types it: a separate process, its own stdout and stderr."""
    return subprocess.run(
        [NEXUSMEM, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        input=input,
        timeout=120,
    )


def modules_imported_by(cwd: Path, *args: str) -> set[str]:
    """Every module a ``nexusmem`` command run in ``cwd`` imported, from its ``-X importtime``
    lines: what a command pays for before and while it works, seen from outside."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", NEXUSMEM, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def modules_loaded_by(module: str) -> set[str]:
    """Every module a fresh ``python -S`` has loaded after importing ``module``: what a hook's
    start-up pays for on every command."""
    code = (
        "import sys, importlib; sys.path.insert(0, sys.argv[1]);"
        "importlib.import_module(sys.argv[2]);"
        "print(' '.join(sorted(sys.modules)))"
    )
    top = str(Path(__file__).parents[1])
    out = subprocess.run(
        [sys.executable, "-S", "-P", "-c", code, top, module],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def changed(value: Any, **changes: Any) -> Any:
    """``value`` with ``changes``: settings and config sections are pydantic models (frozen),
    the rest dataclasses."""
    if hasattr(value, "model_copy"):
        return value.model_copy(update=changes)
    return dataclasses.replace(value, **changes)
