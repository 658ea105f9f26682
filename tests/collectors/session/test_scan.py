"""``scan-session`` and the sync's lines about summaries, run as a user types them, against a
fake Ollama over real HTTP that counts what it is sent."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine

from ...conftest import Repo, run_cli
from ...fake_ollama import FakeOllama
from .plant import plant


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        fake.chat_mode = "summary"
        yield fake


def enable_sessions(repo: Repo) -> None:
    """``sources.session`` on in the user's own config.json (a repository's cannot turn it on),
    with the fake's model in the repository's."""
    config = repo.path / ".nexusmem" / "config.json"
    data = json.loads(config.read_text())
    data["sources"]["session"].update(model="fake-chat", timeoutSeconds=5)
    config.write_text(json.dumps(data))
    home = Path(os.environ["NEXUSMEM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text(json.dumps({"sources": {"session": {"enabled": True}}}))


async def planted(settings: Settings, path: Path, session: str, **options: int) -> None:
    async with open_engine(settings, path) as engine:
        await plant(engine, session, **options)


async def test_scan_session_dry_run_prints_the_prompt_and_calls_nothing(
    settings: Settings, repo: Repo, ollama: FakeOllama
):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    out = run_cli("scan-session", "--dry-run", "-C", str(repo.path))
    assert out.returncode == 0 and "no conversation turns in memory" in out.stderr
    await planted(settings, repo.path, "old-session", minutes_ago=600)
    await planted(settings, repo.path, "new-session")
    await planted(settings, repo.path, "live-session", minutes_ago=1)
    env = {"OLLAMA_HOST": ollama.url}
    out = run_cli("scan-session", "--dry-run", "-C", str(repo.path), env=env)
    assert out.returncode == 0 and ollama.chat_requests == []
    assert out.stdout.index("=== session new-session") < out.stdout.index("=== session old")
    assert "live-session" not in out.stdout
    assert "Developer: Why do uploads fail under load?" in out.stdout
    assert "Decisions" in out.stdout  # the system message is shown too
    assert "2 of 2 due session(s) shown" in out.stderr and "1 still live" in out.stderr
    assert "the model was not called, nothing was written" in out.stderr
    limited = run_cli("scan-session", "--dry-run", "--json", "--limit", "1", "-C", str(repo.path))
    (shown,) = json.loads(limited.stdout)["sessions"]
    assert shown["session"] == "new-session" and shown["prompt"] in out.stdout
    # Without --dry-run the model is asked about one session, and still nothing is written.
    out = run_cli("scan-session", "-C", str(repo.path), env=env)
    assert "set sources.session.model in config.json" in out.stderr  # qwen2.5:3b by default
    enable_sessions(repo)
    out = run_cli("scan-session", "-C", str(repo.path), env=env)
    assert out.returncode == 0 and len(ollama.chat_requests) == 1
    assert "title: Why do uploads fail under load?" not in out.stdout  # the model's stands
    assert "title: Raise the retry budget after S3 timeouts" in out.stdout
    assert ollama.chat_requests[0]["messages"][1]["content"] == shown["prompt"]
    status = json.loads(run_cli("status", "--json", "-C", str(repo.path)).stdout)
    assert status["sessions"] == {} and "session_summary" not in status["by_kind"]


async def test_sync_says_what_it_summarised_and_why_it_could_not(
    settings: Settings, repo: Repo, ollama: FakeOllama
):
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    out = run_cli("sync", "--no-embed", "-C", str(repo.path))
    assert "session summaries" not in out.stdout + out.stderr  # off by default
    enable_sessions(repo)
    await planted(settings, repo.path, "s1")
    env = {"OLLAMA_HOST": ollama.url}
    out = run_cli("sync", "--no-embed", "-C", str(repo.path), env=env)
    assert out.returncode == 0 and out.stderr == ""
    assert "session summaries: 1 written, 0 queued for the next sync" in out.stdout
    await planted(settings, repo.path, "s2")
    out = run_cli("sync", "--no-embed", "-C", str(repo.path))  # OLLAMA_HOST: nothing there
    assert out.returncode == 0 and "session summaries: 0 written" in out.stdout
    (line,) = out.stderr.splitlines()
    assert line.startswith("session summaries: skipped: Ollama is not reachable at")
    assert line.endswith("1 session(s) stay pending")
    status = run_cli("status", "-C", str(repo.path)).stdout
    assert "sessions   1 summarised, 0 queued, 1 pending" in status
