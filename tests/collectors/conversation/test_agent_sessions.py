"""Gemini CLI and opencode sessions through sync and scan-conversation: read only when the
source is on, scoped to the repository, their failed commands remembered as backfilled
failures linked to the run that fixed them, and no secret on disk."""

from __future__ import annotations

import json
from pathlib import Path

from nexusmem_core import handlers
from nexusmem_core.config import Settings
from nexusmem_core.engine import Engine
from nexusmem_core.render import render_search

from ...conftest import Repo, changed, run_cli
from .agents import AWS_SECRET, install_gemini, install_opencode
from .transcripts import GITHUB_TOKEN


def install_both(settings: Settings, repo: Repo, tmp_path: Path) -> Path:
    install_gemini(settings.gemini_home, repo.path)
    install_gemini(settings.gemini_home, tmp_path / "project-old", slug="project-old")
    return install_opencode(settings.data_home, repo.path)


async def nodes_of(engine: Engine, source: str) -> list[tuple[str, str, dict[str, object]]]:
    rows = await engine.db.fetchall(
        "select kind, title, meta from nodes where source = ? order by ts, title", (source,)
    )
    return [(kind, title, json.loads(meta)) for kind, title, meta in rows]


async def test_sessions_are_read_only_when_the_source_is_on(
    engine: Engine, repo: Repo, settings: Settings, tmp_path: Path
):
    install_both(settings, repo, tmp_path)
    plain = await handlers.sync(engine, embed=False)
    assert await nodes_of(engine, "conversation:gemini") == []
    assert plain.agent == 0
    report = await handlers.sync(engine, embed=False, conversation=True)
    assert (report.conversation_files, report.conversation) == (2, 4)
    assert report.agent == 9  # 4 shell commands from Gemini CLI, 5 from opencode
    gemini = await nodes_of(engine, "conversation:gemini")
    commands = [(title, meta["outcome"], meta["exit"]) for kind, title, meta in gemini
                if kind == "shell_command"]  # fmt: skip
    assert commands[0] == ("pytest tests/test_upload.py -x", "failed", 1)
    # Its error has a signature, as a hook's failure has: read from under Gemini's framing.
    failed = next(meta for kind, title, meta in gemini if meta.get("outcome") == "failed")
    assert isinstance(failed["sig"], str) and len(failed["sig"]) == 16
    assert ("npm run dev", "interrupted", None) in commands
    opencode = await nodes_of(engine, "conversation:opencode")
    outcomes = {title: meta["outcome"] for kind, title, meta in opencode if kind == "shell_command"}
    assert outcomes["grep -rn \"from './retry'\" src/lib"] == "false"  # found nothing
    assert outcomes["rm -rf dist"] == "denied"
    # Another project's sessions are not read: the sibling folder and the other directory.
    stored = await engine.db.fetchall("select title from nodes where title like '%deploy%'")
    assert stored == []
    assert (report.linked_retry, report.redacted) == (2, 4)  # pytest and npm run build passed later


async def test_a_failure_from_a_past_session_is_backfilled_and_shows_its_fix(
    engine: Engine, repo: Repo, settings: Settings, tmp_path: Path
):
    install_both(settings, repo, tmp_path)
    await handlers.sync(engine, embed=False, conversation=True)
    found = await handlers.search(engine, "why did npm run build fail", vector=False)
    text = render_search(found)
    assert " [observed] [backfilled] opencode: npm run build  (exit 2)\n" in text
    assert "error TS2307: Cannot find module './retry'" in text
    fix = "opencode: npm run build  (exit 0)  -- linked as the fix (the same command passed)"
    assert fix in text
    found = await handlers.search(engine, "pytest test_upload TimeoutError", vector=False)
    text = render_search(found)
    assert "[observed] [backfilled] gemini-cli: pytest tests/test_upload.py -x  (exit 1)" in text
    assert "error: ============ 1 failed in 3.02s ============ / E   TimeoutError" in text
    assert "Process Group PGID" not in text


async def test_a_pasted_error_line_finds_a_backfilled_failure(
    engine: Engine, repo: Repo, settings: Settings, tmp_path: Path
):
    install_both(settings, repo, tmp_path)
    await handlers.sync(engine, embed=False, conversation=True)
    response = await handlers.search(engine, "TimeoutError: upload to s3 timed out", vector=False)
    assert response.results[0].title == "gemini-cli: pytest tests/test_upload.py -x  (exit 1)"


async def test_no_secret_from_a_session_reaches_the_database_file(
    engine: Engine, repo: Repo, settings: Settings, tmp_path: Path
):
    install_both(settings, repo, tmp_path)
    await handlers.sync(engine, embed=False, conversation=True)
    database = repo.path / ".nexusmem" / "memory.db"
    stored = b"".join(p.read_bytes() for p in database.parent.glob("memory.db*"))
    assert b"curl -s -H" in stored and b"aws s3 sync dist" in stored  # the commands are there
    for secret in (GITHUB_TOKEN, AWS_SECRET):
        assert secret.encode() not in stored


async def test_the_switches_hold_and_an_unchanged_session_is_not_read_again(
    engine: Engine, repo: Repo, settings: Settings, tmp_path: Path
):
    install_both(settings, repo, tmp_path)
    sources = engine.config.sources
    talk = changed(sources.conversation, enabled=True, gemini=False)
    engine.config = changed(engine.config, sources=changed(sources, conversation=talk))
    first = await handlers.sync(engine, embed=False)
    assert first.conversation_files == 1 and await nodes_of(engine, "conversation:gemini") == []
    assert (await handlers.sync(engine, embed=False)).conversation_files == 0
    pruned = await handlers.prune_source(engine, "conversation:opencode", apply=True)
    assert pruned.removed == 7 and pruned.reset == ["the record of read transcripts"]
    assert (await handlers.sync(engine, embed=False)).conversation_files == 1


async def test_an_unreadable_opencode_database_is_counted_not_fatal(
    engine: Engine, repo: Repo, settings: Settings
):
    db = settings.data_home / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 200)
    install_gemini(settings.gemini_home, repo.path)
    report = await handlers.sync(engine, embed=False, conversation=True)
    assert report.conversation_files == 1 and report.conversation_skipped == 3


def test_scan_conversation_previews_each_agent(repo: Repo, settings: Settings, tmp_path: Path):
    install_both(settings, repo, tmp_path)
    out = run_cli("scan-conversation", "-C", str(repo.path))
    assert out.returncode == 0, out.stderr
    assert "gemini-cli: pytest tests/test_upload.py -x  (exit 1)" in out.stdout
    assert "curl -s -H 'Authorization: token [REDACTED]'" in out.stdout
    assert GITHUB_TOKEN not in out.stdout + out.stderr
    lines = out.stderr.splitlines()
    assert (
        "gemini: 1 transcript(s), 2 turn(s), 4 command(s) (1 failed), 2 secret(s) redacted, "
        "2 passed over" in lines
    )
    assert (
        "opencode: 1 transcript(s), 2 turn(s), 5 command(s) (1 failed), 2 secret(s) "
        "redacted, 0 passed over" in lines
    )
    assert (
        "claude: 0 transcript(s), 0 turn(s), 0 command(s) (0 failed), 0 secret(s) "
        "redacted, 0 passed over" in lines
    )
    data = json.loads(run_cli("scan-conversation", "--json", "-C", str(repo.path)).stdout)
    assert data["agents"]["opencode"]["commands"] == 5
    sources = {row["source"] for row in data["nodes"]}
    assert sources == {"conversation:gemini", "conversation:opencode"}
    assert not (repo.path / ".nexusmem" / "memory.db").exists()  # a dry run writes nothing


async def test_a_command_the_agents_hook_recorded_is_not_written_twice(
    engine: Engine, repo: Repo, settings: Settings, home: Path
):
    from nexusmem_core.collectors.agent import AGENT_LOG
    from nexusmem_core.collectors.shell import hooklog

    install_opencode(settings.data_home, repo.path)
    record = {
        "v": 1,
        "id": "hooked-build",
        "agent": "opencode",
        "shell": "opencode",
        "session": "ses_3f2a9c1d5ffeQ8Rk2mVb7NcX1a",
        "tool_use_id": "toolu_01Build",  # the same call the session's part records
        "cwd": str(repo.path),
        "cmd": "npm run build",
        "cmd_hash": hooklog.command_hash(home, "npm run build"),
        "outcome": "failed",
        "exit": 2,
        "edited": [],
        "ts": 1_770_200_002,
    }
    hooklog.append(home, record, AGENT_LOG)
    report = await handlers.sync(engine, embed=False, conversation=True)
    assert report.agent == 5  # the hook's command, and four of the session's five
    rows = await engine.db.fetchall(
        "select source from nodes where title = 'npm run build' "
        "and json_extract(meta, '$.exit') = 2"
    )
    assert rows == [("agent:opencode",)]
