"""opencode's database gives, for each session run inside the repository, the questions, the
text replies and the bash commands with how each ended; opencode's own text, another
directory's sessions and rows too large or broken are passed over and counted."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from nexusmem_core.collectors.conversation import opencode
from nexusmem_core.collectors.conversation.opencode import opencode_sessions, parse_opencode

from .agents import AWS_SECRET, OPENCODE_SESSION, install_opencode, opencode_rows


def within_repo(repo: Path):
    return lambda cwd: cwd == str(repo) or cwd.startswith(f"{repo}/")


def test_only_the_sessions_run_inside_the_repository_are_listed(tmp_path: Path):
    repo = tmp_path / "project"
    db = install_opencode(tmp_path, repo)
    listed = opencode_sessions(db, within_repo(repo))
    assert [(s.session, s.directory, s.parts) for s in listed] == [
        (OPENCODE_SESSION, str(repo), 13)
    ]
    assert listed[0].key == f"{db}#{OPENCODE_SESSION}"
    assert listed[0].updated_ms == 1_770_200_090_000  # the session's, newer than any part's
    assert opencode_sessions(tmp_path / "none.db", within_repo(repo)) == []


def test_a_session_gives_questions_replies_and_the_commands_with_their_outcome(tmp_path: Path):
    repo = tmp_path / "project"
    db = install_opencode(tmp_path, repo)
    found = parse_opencode(f"{db}#{OPENCODE_SESSION}", str(repo), within_repo(repo))
    assert found.ours and found.session == OPENCODE_SESSION
    # The file opencode attached to the question (a synthetic part) is not the question.
    assert [e.question for e in found.exchanges] == [
        "npm run build fails with TS2307, what is going on?",
        f"Go ahead, and upload the build with my key AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
    ]
    first = found.exchanges[0]
    assert first.answer.startswith("The build fails because src/index.ts imports")
    assert "Let me run the build first" not in first.answer  # reasoning
    assert [(c.command, c.exit, c.outcome) for c in found.commands] == [
        ("npm run build", 2, None),
        ("grep -rn \"from './retry'\" src/lib", 1, None),  # nothing found: judged as a node
        ("rm -rf dist", None, "denied"),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} aws s3 sync dist s3://project-builds", 0, None),
        ("npm run build", 0, None),
    ]
    build = found.commands[0]
    assert build.error is not None and "error TS2307: Cannot find module './retry'" in build.error
    assert (build.cwd, build.ts, build.call) == (str(repo), 1_770_200_002, "toolu_01Build")
    assert found.skipped == 0


def test_a_row_too_large_or_broken_is_passed_over_and_counted(tmp_path: Path, monkeypatch):
    repo = tmp_path / "project"
    rows = opencode_rows(repo)
    db = install_opencode(tmp_path, repo, rows)
    huge = json.dumps({"type": "text", "text": "x" * 20_000})
    with sqlite3.connect(db) as con:
        con.execute("update part set data = '{broken' where id = 'prt_a4d'")
        con.execute("update part set data = ? where id = 'prt_a2c'", (huge,))
    con.close()
    monkeypatch.setattr(opencode, "MAX_DATA", 10_000)
    found = parse_opencode(f"{db}#{OPENCODE_SESSION}", str(repo), within_repo(repo))
    assert found.commands[0].command.startswith("grep")  # the first build's row was too large
    assert found.skipped == 2
    assert len(found.exchanges) == 2


def test_a_database_that_is_not_one_raises_a_database_error(tmp_path: Path):
    db = tmp_path / "opencode" / "opencode.db"
    db.parent.mkdir()
    db.write_bytes(b"not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        opencode_sessions(db, lambda cwd: True)
    with pytest.raises(OSError):
        parse_opencode(f"{db}#ses_x", str(tmp_path), lambda cwd: True)


def test_reading_never_writes_to_the_database(tmp_path: Path):
    repo = tmp_path / "project"
    db = install_opencode(tmp_path, repo)
    before = db.read_bytes()
    parse_opencode(f"{db}#{OPENCODE_SESSION}", str(repo), within_repo(repo))
    assert db.read_bytes() == before and json.loads(json.dumps(str(db)))


def test_a_subagents_session_gives_its_commands_not_its_prompts(tmp_path: Path):
    repo = tmp_path / "project"
    rows = opencode_rows(repo)
    rows["session"][0]["parent_id"] = "ses_3f2a9c1d4ffeParentSession"
    db = install_opencode(tmp_path, repo, rows)
    found = parse_opencode(f"{db}#{OPENCODE_SESSION}", str(repo), within_repo(repo))
    assert found.exchanges == [] and len(found.commands) == 5
