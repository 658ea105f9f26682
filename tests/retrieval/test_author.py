"""``author``: a search kept to what one author ran, from the CLI and the MCP tool; results say
who ran each command instead of ``shell:``."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from nexusmem_core.collectors.agent import AGENT_LOG
from nexusmem_core.collectors.shell import hooklog
from nexusmem_core.config import Settings
from nexusmem_mcp.server import build_server

from ..conftest import Repo, run_cli
from ..test_chains import T0, query, sync
from ..test_shell_sync import log_command


def agent_command(home: Path, repo: Repo, agent: str | None, command: str, at: float) -> None:
    """One command an agent's hook logged (``agent`` None: a log written before the field)."""
    record = {
        "v": 1,
        "id": f"{agent}-{at}",
        "shell": agent or "claude-code",
        "session": "s",
        "cwd": str(repo.path),
        "cmd": command,
        "cmd_hash": hooklog.command_hash(home, command),
        "outcome": "failed",
        "exit": 1,
        "edited": [],
        "ts": at,
    }
    if agent is not None:
        record["agent"] = agent
    hooklog.append(home, record, AGENT_LOG)


@pytest.fixture
def ran(repo: Repo, home: Path) -> Repo:
    """The same failing test run by the user, by Codex, by Gemini CLI, and by Claude Code
    before records named their agent; and a build only the user ran."""
    log_command(home, "pytest tests/test_retry.py", repo.path, 1, T0)
    log_command(home, "make retry-build", repo.path, 2, T0 + 10)
    agent_command(home, repo, "codex", "pytest tests/test_retry.py -x", T0 + 20)
    agent_command(home, repo, "gemini", "pytest tests/test_retry.py -q", T0 + 30)
    agent_command(home, repo, None, "pytest tests/test_retry.py -k slow", T0 + 40)
    sync(repo)
    return repo


def titles(repo: Repo, text: str, *flags: str) -> list[str]:
    return [r["title"] for r in query(repo, text, *flags)["results"]]


def test_results_say_who_ran_each_command(ran: Repo) -> None:
    found = titles(ran, "pytest test_retry")
    assert "you: pytest tests/test_retry.py  (exit 1)" in found
    assert "codex: pytest tests/test_retry.py -x  (exit 1)" in found
    assert "gemini-cli: pytest tests/test_retry.py -q  (exit 1)" in found
    assert "claude-code: pytest tests/test_retry.py -k slow  (exit 1)" in found  # an old record


@pytest.mark.parametrize(
    ("author", "expected"),
    [
        ("you", {"you: pytest tests/test_retry.py  (exit 1)"}),
        ("codex", {"codex: pytest tests/test_retry.py -x  (exit 1)"}),
        ("gemini-cli", {"gemini-cli: pytest tests/test_retry.py -q  (exit 1)"}),
        ("claude-code", {"claude-code: pytest tests/test_retry.py -k slow  (exit 1)"}),
        ("claude", {"claude-code: pytest tests/test_retry.py -k slow  (exit 1)"}),
        ("cursor", set()),
    ],
)
def test_author_keeps_what_that_author_ran(ran: Repo, author: str, expected: set[str]) -> None:
    assert set(titles(ran, "pytest test_retry", "--author", author)) == expected


def test_author_without_a_word_memory_holds_lists_that_authors_latest(ran: Repo) -> None:
    assert titles(ran, "anything lately", "--author", "codex") == [
        "codex: pytest tests/test_retry.py -x  (exit 1)"
    ]
    assert titles(ran, "the", "--author", "you") == []  # "the" is in commits, not commands
    assert titles(ran, "anything lately", "--author", "you") == [
        "you: make retry-build  (exit 2)",
        "you: pytest tests/test_retry.py  (exit 1)",
    ]


def test_an_unknown_author_is_one_line_naming_the_choices(ran: Repo) -> None:
    result = run_cli("query", "-C", str(ran.path), "pytest", "--author", "copilot")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "error: --author: 'copilot' is not an author; use one of you, claude-code, codex, "
        "gemini-cli, cursor, opencode"
    ]


async def test_the_mcp_tool_takes_author(ran: Repo, settings: Settings) -> None:
    async with Client(build_server(settings)) as client:
        result = await client.call_tool(
            "search_memory",
            {"query": "pytest test_retry", "author": "codex", "project_root": str(ran.path)},
        )
        wrong = await client.call_tool(
            "search_memory",
            {"query": "pytest", "author": "copilot", "project_root": str(ran.path)},
        )
    assert not result.is_error
    found = [r["title"] for r in result.structured_content["results"]]
    assert found == ["codex: pytest tests/test_retry.py -x  (exit 1)"]
    assert wrong.is_error and "author: 'copilot' is not an author" in wrong.content[0].text
