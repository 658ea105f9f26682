"""What the agents were told: each note and digest the hook delivered is remembered, synced per
repository, and listed with what the command did next; the next session's digest is previewed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexusmem_core.collectors.agent import AGENT_NOTES
from nexusmem_core.config import Settings
from nexusmem_core.engine import open_engine
from nexusmem_core.errors import UsageError
from nexusmem_core.handlers.agents import next_digest, told
from nexusmem_core.handlers.projects import sync

from .collectors.agent.hookrun import context, payload, run_hook
from .conftest import Repo, run_cli


@pytest.fixture
def project(repo: Repo) -> Repo:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "-C", str(repo.path)).returncode == 0
    return repo


def hook(name: str, cwd: Path, session: str, step: int, **changes: Any) -> str | None:
    """One event of a Claude Code session, through the installed hook; the note it gave."""
    data = payload(name, cwd, session_id=session, **changes)
    return context(run_hook({**data, "tool_use_id": f"toolu_{session}_{step}"}))


def fail_then_pass(cwd: Path, command: str, session: str = "s1") -> str:
    """A failure, the note before the same command, and its pass; the note."""
    assert hook("failure_bash_exit", cwd, session, 1, command=command) is None
    note = hook("pre_bash", cwd, session, 2, command=command)
    assert note is not None and "failed once" in note
    assert hook("post_bash_ok", cwd, session, 3, command=command) is None
    return note


async def synced_notes(settings: Settings, repo: Repo, **options: Any) -> list[dict[str, Any]]:
    async with open_engine(settings, repo.path) as engine:
        await sync(engine)
        return await told(engine, **options)


async def test_a_note_is_listed_with_its_command_and_what_the_command_did_next(
    project: Repo, settings: Settings
):
    note = fail_then_pass(project.path, "npm test")
    (listed,) = await synced_notes(settings, project)
    assert (listed["kind"], listed["event"], listed["agent"]) == ("recall", "PreToolUse", "claude")
    assert (listed["command"], listed["text"], listed["session"]) == ("npm test", note, "s1")
    assert listed["then"]["outcome"] == "ok" and listed["then"]["exit"] == 0
    assert listed["then"]["ts"] > listed["ts"]
    assert len(listed["date"]) == len("2026-12-07 00:00")


async def test_a_note_before_a_command_not_yet_run_again_has_no_then(
    project: Repo, settings: Settings
):
    cwd = project.path
    assert hook("failure_bash_exit", cwd, "s1", 1, command="make docs") is None
    assert hook("pre_bash", cwd, "s1", 2, command="make docs") is not None
    (listed,) = await synced_notes(settings, project)
    assert listed["command"] == "make docs" and listed["then"] is None


async def test_a_note_right_after_a_failure_follows_the_next_run_not_the_failure(
    project: Repo, settings: Settings
):
    cwd = project.path
    assert hook("failure_bash_exit", cwd, "s1", 1, command="npm test") is None
    note = hook("failure_bash_exit", cwd, "s1", 2, command="npm test")
    assert note is not None
    assert hook("post_bash_ok", cwd, "s1", 3, command="npm test") is None
    (listed,) = await synced_notes(settings, project)
    assert (listed["event"], listed["text"]) == ("PostToolUseFailure", note)
    assert listed["then"]["outcome"] == "ok"


async def test_the_session_digest_is_listed_and_previewed_alike(project: Repo, settings: Settings):
    fail_then_pass(project.path, "npm test")
    assert hook("failure_bash_exit", project.path, "s1", 4, command="make docs") is None
    async with open_engine(settings, project.path) as engine:
        preview = await next_digest(engine)
    digest = hook("session_start", project.path, "s2", 1)
    assert digest is not None and "`make docs` failed 1x" in digest
    assert preview == digest
    notes = await synced_notes(settings, project)
    assert [n["kind"] for n in notes] == ["digest", "recall"]  # newest first
    first = notes[0]
    assert (first["event"], first["session"], first["text"]) == ("SessionStart", "s2", digest)
    assert first["command"] is None and first["then"] is None
    async with open_engine(settings, project.path) as engine:
        assert await next_digest(engine) == digest  # synced or not, the same memory


async def test_nothing_to_digest_is_an_empty_preview(project: Repo, settings: Settings):
    async with open_engine(settings, project.path) as engine:
        assert await next_digest(engine) == ""


async def test_a_secret_in_a_command_is_redacted_in_the_stored_note(
    project: Repo, settings: Settings, home: Path
):
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    fail_then_pass(project.path, f"GITHUB_TOKEN={secret} gh pr list")
    assert secret[:12] not in (home / AGENT_NOTES).read_text()
    (listed,) = await synced_notes(settings, project)
    assert "[REDACTED" in listed["command"] and secret[:12] not in json.dumps(listed)


async def test_another_repositorys_notes_stay_out_and_a_second_sync_adds_nothing(
    project: Repo, settings: Settings, make_repo: Any
):
    other = make_repo("other")
    other.commit("feat: start", {"app.py": "print(1)\n"})
    assert run_cli("init", "-C", str(other.path)).returncode == 0
    fail_then_pass(other.path, "make build", session="elsewhere")
    fail_then_pass(project.path, "npm test")
    (listed,) = await synced_notes(settings, project)
    assert listed["command"] == "npm test"
    again = await synced_notes(settings, project)
    assert again == [listed]
    async with open_engine(settings, project.path) as engine:
        (count,) = await engine.db.fetchone("select count(*) from agent_notes") or (0,)
    assert count == 1
    (theirs,) = await synced_notes(settings, other)
    assert theirs["command"] == "make build" and theirs["session"] == "elsewhere"


async def test_pages_go_back_in_time_and_an_agent_keeps_its_own(project: Repo, settings: Settings):
    for i, command in enumerate(("npm test", "make lint", "cargo test")):
        fail_then_pass(project.path, command, session=f"s{i}")
    notes = await synced_notes(settings, project)
    assert [n["command"] for n in notes] == ["cargo test", "make lint", "npm test"]
    async with open_engine(settings, project.path) as engine:
        page = await told(engine, limit=2)
        rest = await told(engine, limit=2, before=page[-1]["ts"])
        assert page + rest == notes
        assert await told(engine, agent="codex") == []
        assert await told(engine, agent="claude") == notes


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"agent": "aider"}, "agent"),
        ({"before": float("nan")}, "before"),
    ],
)
async def test_bad_arguments_are_named(
    project: Repo, settings: Settings, options: dict[str, Any], argument: str
):
    async with open_engine(settings, project.path) as engine:
        with pytest.raises(UsageError) as raised:
            await told(engine, **options)
    assert raised.value.argument == argument


def test_a_notes_log_that_cannot_be_written_changes_nothing_the_agent_is_told(
    project: Repo, home: Path
):
    (home / AGENT_NOTES).mkdir(parents=True)  # a directory where the log should be
    note = fail_then_pass(project.path, "npm test")
    assert "`npm test` failed once" in note
