"""Both transcript formats parse into questions and text replies; whatever else a transcript
holds (tool calls and results, thinking, harness messages, broken lines) stays out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexusmem_core.collectors.conversation import transcript
from nexusmem_core.collectors.conversation.claude import claude_slug, parse_claude
from nexusmem_core.collectors.conversation.codex import parse_codex

from ...fuzz.bounds import within
from .transcripts import CLAUDE_FIXTURE, CLAUDE_SESSION, CODEX_FIXTURE, CODEX_SESSION


def anywhere(_cwd: str) -> bool:
    return True


def test_a_claude_transcript_gives_each_typed_question_and_its_text_reply():
    found = parse_claude(str(CLAUDE_FIXTURE), anywhere)
    questions = [e.question.splitlines()[0] for e in found.exchanges]
    # Not questions: the tool result, the caveat (isMeta), the /cost command and its output,
    # the subagent's sidechain and the interruption notice.
    assert questions == [
        "Why does tests/test_upload.py fail with a timeout? My env has "
        "AWS_ACCESS_KEY_ID=AKIAZ3MQK7RT4PLW9XVB if that matters.",
        "Write a short deployment guide for the upload service.",
        "ok thanks",
    ]
    first, guide, _ = found.exchanges
    # The reply's text blocks joined; thinking and the tool call left out.
    assert first.answer.startswith("Let me look at the test and the retry code.\n\nThe test fails")
    assert "read retry.py first" not in first.answer and "RETRY_BUDGET = 3" not in first.answer
    assert first.answered == 1_768_035_612  # 2026-01-10T09:00:12Z, the reply's last text
    assert "<system-reminder>" not in guide.question  # the reminder is the harness's
    assert [line for line in guide.answer.splitlines() if line.startswith("#")] == [
        "# Deployment guide",
        "## Build",
        "## Release",
        "## Rollback",
    ]
    assert (found.session, found.git_branch) == (f"claude-{CLAUDE_SESSION}", "fix/upload-timeout")
    assert found.cwd == "/home/dev/project" and found.ours
    assert found.skipped == 2  # the torn line and the unknown record type


def test_a_codex_rollout_gives_the_questions_not_the_context_codex_adds():
    found = parse_codex(str(CODEX_FIXTURE), anywhere)
    assert [e.question.split(" for ")[0] for e in found.exchanges] == [
        "npm run build fails with ERR_MODULE_NOT_FOUND",
        "Thanks. Let's go with esbuild instead of tsc",
    ]
    first = found.exchanges[0]
    assert first.answer.startswith("The build fails because package.json points `main`")
    assert "Inspecting the build script" not in first.answer  # reasoning
    assert (found.session, found.cwd, found.git_branch) == (
        CODEX_SESSION,
        "/home/dev/project",
        "main",
    )
    assert found.skipped == 2  # "not json at all" and the unknown record type


@pytest.mark.parametrize("parse", [parse_claude, parse_codex])
def test_a_transcript_of_another_directory_is_read_no_further(parse, tmp_path: Path):
    fixture = CLAUDE_FIXTURE if parse is parse_claude else CODEX_FIXTURE
    asked: list[str] = []

    def elsewhere(cwd: str) -> bool:
        asked.append(cwd)
        return False

    found = parse(str(fixture), elsewhere)
    assert asked == ["/home/dev/project"] and not found.ours and found.exchanges == []


def test_oversize_lines_are_skipped_and_a_torn_last_line_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(transcript, "MAX_LINE", 200)
    path = tmp_path / "rollout-x.jsonl"
    meta = {"type": "session_meta", "payload": {"id": "s1", "cwd": "/w"}}
    ask = {"type": "response_item", "payload": {"type": "message", "role": "user"}}
    ask["payload"]["content"] = [{"type": "input_text", "text": "why is the cache cold?"}]
    huge = {"type": "response_item", "payload": {"type": "message", "content": "x" * 5000}}
    lines = [json.dumps(meta), json.dumps(huge), json.dumps(ask)]
    path.write_text("\n".join(lines) + '\n{"type": "response_item", "payl')
    found = parse_codex(str(path), anywhere)
    assert found.skipped == 1 and len(found.exchanges) == 1  # the torn line is not counted
    with path.open("a") as handle:
        handle.write('oad": {"type": "message", "role": "assistant", "content": []}}\n')
    assert parse_codex(str(path), anywhere).skipped == 1  # now whole, and read


def test_the_slug_is_claude_codes_every_other_character_a_dash():
    assert claude_slug("/home/me/my_app.v2") == "-home-me-my-app-v2"
    assert claude_slug("/srv/a b/é") == "-srv-a-b--"  # runs are not collapsed


HOSTILE = [
    "[" * 100_000,  # nested past the recursion limit
    '{"type": ["user"]}',  # a type that is not text
    '{"type": "user", "cwd": "/w", "message": {"content": "why \\ud800?"}}',  # lone surrogate
    '{"type": "assistant", "cwd": "/w", "message": "not an object"}',
    '{"type": "user", "cwd": "/w", "message": {"content": [{"type": "text", "text": 5}]}}',
    '{"type": "user", "cwd": "/w", "timestamp": "yesterday", "message": {"content": "and now?"}}',
]


def test_hostile_lines_are_passed_over_and_counted(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(HOSTILE) + "\n")
    found = parse_claude(str(path), anywhere)
    assert found.skipped == 4  # the number in a text block is no text: no question, no count
    assert [(e.question, e.asked) for e in found.exchanges] == [("and now?", None)]
    rollout = tmp_path / "rollout-s.jsonl"
    meta = {"type": "session_meta", "payload": {"id": "s", "cwd": "/w\ud800"}}
    rollout.write_text(json.dumps(meta) + '\n{"type": {}, "payload": {}}\n')
    found = parse_codex(str(rollout), anywhere)
    assert (found.cwd, found.ours, found.skipped) == (None, False, 1)


def test_harness_markup_that_never_closes_is_kept():
    # Many blocks that fail to match at the very end, and reminders never closed: a
    # backtracking pattern took twice as long for each block more (30 blocks: hours, which the
    # watchdog stops), a scan per reminder.
    tags = "<a>" + "</a><a>" * 30 + "x>"
    reminders = "<system-reminder>" * 50_000 + "why?"
    with within():
        assert transcript.human_text(tags) == tags
        assert transcript.human_text(reminders) == reminders
    assert (
        transcript.human_text("<command-name>/cost</command-name>\n<command-args></command-args>")
        == ""
    )


def test_a_codex_rollout_gives_the_shell_commands_it_ran_with_their_exit_code(tmp_path: Path):
    found = parse_codex(str(CODEX_FIXTURE), anywhere)
    [build] = found.commands
    assert (build.command, build.exit, build.cwd) == ("npm run build", 1, "/home/dev/project")
    assert build.error == "Error [ERR_MODULE_NOT_FOUND]: Cannot find module dist/index.js"
    # A call never answered (the session stopped) and one whose output is not JSON.
    meta = {"type": "session_meta", "payload": {"id": CODEX_SESSION, "cwd": "/p"}}
    calls = [
        {"type": "function_call", "name": "shell", "call_id": "a",
         "arguments": json.dumps({"command": ["cargo", "test"], "workdir": "/p"})},
        {"type": "function_call", "name": "shell", "call_id": "b",
         "arguments": json.dumps({"command": ["bash", "-lc", "make"]})},
        {"type": "function_call_output", "call_id": "b", "output": "aborted"},
    ]  # fmt: skip
    lines = [meta] + [{"type": "response_item", "payload": c} for c in calls]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    [make] = parse_codex(str(path), anywhere).commands
    assert (make.command, make.exit, make.cwd, make.error) == ("make", None, "/p", "aborted")
