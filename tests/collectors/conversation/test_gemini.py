"""Gemini CLI's session files give the questions, the text replies and the shell commands the
agent ran, with how each ended; another project's folders, broken lines and files too large
to read are passed over and counted."""

from __future__ import annotations

import json
from pathlib import Path

from nexusmem_core.collectors.conversation import gemini
from nexusmem_core.collectors.conversation.gemini import gemini_files, parse_gemini

from ...fuzz.bounds import within
from .agents import GEMINI_FIXTURE, GEMINI_SESSION, gemini_dir, install_gemini, legacy_gemini_text
from .transcripts import GITHUB_TOKEN, RECORDED_CWD


def anywhere(_cwd: str) -> bool:
    return True


def test_a_session_gives_questions_replies_and_the_commands_with_their_outcome():
    found = parse_gemini(str(GEMINI_FIXTURE), RECORDED_CWD, anywhere)
    assert found.session == GEMINI_SESSION and found.cwd == RECORDED_CWD and found.ours
    # The rewound question is gone; the terminal's own info message is not a question.
    assert [e.question for e in found.exchanges] == [
        "pytest tests/test_upload.py fails with a timeout, can you find out why?",
        f"Do it, and check my token works: I use {GITHUB_TOKEN}",  # redacted when stored
    ]
    assert found.exchanges[0].answer.startswith("The test fails because the retry budget")
    ran = {(c.command.split(" -H")[0], c.exit, c.outcome) for c in found.commands}
    assert ran == {
        ("pytest tests/test_upload.py -x", 1, None),  # Exit Code: 1 in the result
        ("curl -s", 0, None),
        ("pytest tests/test_upload.py -x", 0, None),
        ("npm run dev", None, "interrupted"),
    }  # the file edit (`replace`) is not a shell command
    failed = found.commands[0]
    assert failed.ts == 1_770_113_710 and failed.cwd == RECORDED_CWD
    assert failed.error is not None and "TimeoutError: upload to s3" in failed.error
    assert "untrusted_context" not in failed.error
    assert [c.cwd for c in found.commands if c.command == "npm run dev"] == [
        f"{RECORDED_CWD}/web"  # dir_path is relative to the project
    ]
    assert found.skipped == 2  # the broken line and the record of an unknown kind


def test_only_the_project_folders_of_the_repository_are_listed(tmp_path: Path):
    home, repo = tmp_path / "gh", tmp_path / "project"
    install_gemini(home, repo, slug="project")
    install_gemini(home, repo / "src", slug="src")  # started in a subdirectory: ours
    install_gemini(home, tmp_path / "project-old", slug="project-old")  # the shared prefix
    install_gemini(home, repo, legacy=True, text=legacy_gemini_text())  # the hashed folder
    subagent = gemini_dir(home) / "tmp" / "project" / "chats" / GEMINI_SESSION / "sub.jsonl"
    subagent.parent.mkdir()
    subagent.write_text("{}\n")
    listed = sorted(
        (p.parent.parent.name, cwd) for p, cwd in gemini_files(gemini_dir(home), [str(repo)])
    )
    legacy = [name for name, _ in listed if len(name) == 64]
    assert [(n, c) for n, c in listed if n not in legacy] == [
        ("project", str(repo)),
        ("src", str(repo / "src")),
    ]
    assert len(legacy) == 1  # found by the hash of the repository's path, no marker needed
    assert gemini_files(tmp_path / "nowhere", [str(repo)]) == []


def test_an_older_whole_object_session_file_is_read(tmp_path: Path):
    path = install_gemini(tmp_path, tmp_path / "p", legacy=True, text=legacy_gemini_text())
    found = parse_gemini(str(path), str(tmp_path / "p"), anywhere)
    assert len(found.exchanges) == 1 and [c.exit for c in found.commands] == [1]
    assert found.skipped == 0


def test_a_file_too_large_or_not_json_is_one_skip(tmp_path: Path, monkeypatch):
    path = install_gemini(tmp_path, tmp_path / "p", legacy=True, text=legacy_gemini_text())
    monkeypatch.setattr(gemini, "MAX_JSON_FILE", 100)
    found = parse_gemini(str(path), str(tmp_path / "p"), anywhere)
    assert (found.exchanges, found.commands, found.skipped) == ([], [], 1)
    monkeypatch.undo()
    path.write_text("[1, 2")
    assert parse_gemini(str(path), str(tmp_path / "p"), anywhere).skipped == 1


def test_a_session_of_another_repository_is_not_read(tmp_path: Path):
    found = parse_gemini(str(GEMINI_FIXTURE), "/home/dev/elsewhere", lambda cwd: False)
    assert not found.ours and found.exchanges == [] and found.commands == []


def test_many_rewinds_cost_linear_time(tmp_path: Path):
    """A rewind drops what it names and what follows, each message at most once."""
    lines = ['{"sessionId": "s", "projectHash": "h"}']
    for i in range(20_000):
        lines.append(f'{{"id": "m{i}", "type": "user", "content": "question {i}"}}')
        if i % 2:
            lines.append(f'{{"$rewindTo": "m{i}"}}')
    path = tmp_path / "session-big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with within(2.0):
        found = parse_gemini(str(path), str(tmp_path), anywhere)
    assert len(found.exchanges) == 10_000


def test_a_long_result_keeps_its_end_where_the_exit_code_and_the_reason_are(tmp_path: Path):
    printed = "Output: " + "progress line\n" * 40_000 + "E   AssertionError: boom"
    call = {
        "id": "c1",
        "name": "run_shell_command",
        "args": {"command": "make test"},
        "status": "success",
        "result": [{"functionResponse": {"response": {"output": printed + "\nExit Code: 2"}}}],
    }
    lines = [
        {"sessionId": "s", "projectHash": "h"},
        {"id": "m1", "type": "user", "content": "run the tests"},
        {"id": "m2", "type": "gemini", "content": "", "toolCalls": [call]},
    ]
    path = tmp_path / "session-long.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    [ran] = parse_gemini(str(path), str(tmp_path), anywhere).commands
    assert ran.exit == 2 and ran.error is not None
    assert ran.error.startswith("progress line\n") and ran.error.endswith("AssertionError: boom")
