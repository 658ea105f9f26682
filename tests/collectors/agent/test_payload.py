"""Claude Code payloads read into one shape; commands normalized the way an agent wraps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexusmem_core.collectors.agent.payload import (
    MAX_ERROR,
    MAX_PAYLOAD,
    Dropped,
    error_excerpt,
    normalize_command,
    parse,
)

from .hookrun import payload


def parsed(name: str, **changes: object):
    return parse(json.dumps(payload(name, Path("/repo"), **changes)).encode())


def test_a_failure_takes_its_exit_code_only_from_claude_codes_message():
    assert parsed("failure_bash_exit").exit == 2
    event = parsed("failure_bash_no_code")
    assert (event.outcome, event.exit) == ("failed", None)  # never an invented 1


def test_outcomes_of_bash_runs():
    assert (parsed("post_bash_ok").outcome, parsed("post_bash_ok").exit) == ("ok", 0)
    assert parsed("post_bash_background").outcome == "background"
    assert parsed("post_bash_background").exit is None
    assert parsed("post_bash_interrupted").outcome == "interrupted"
    assert parsed("failure_bash_interrupt").outcome == "interrupted"


def test_edit_tools_give_paths_and_never_content():
    for name, path in [
        ("post_edit", "/repo/src/app.js"),
        ("post_write", "/repo/test/app.test.js"),
        ("post_multiedit", "/repo/src/util.js"),
        ("post_notebook", "/repo/nb/analysis.ipynb"),
    ]:
        event = parsed(name)
        assert event.paths == [path] and event.command is None
        assert "SECRET" not in repr(event) and "sk-live" not in repr(event)


def test_payloads_that_are_not_ours_are_ignored_and_broken_ones_dropped():
    assert parsed("failure_edit") is None  # a failed edit changed nothing
    assert parsed("post_read") is None
    assert parse(b"not json") == Dropped("malformed")
    assert parse(b"[1, 2]") == Dropped("malformed")
    assert parsed("missing_cwd") == Dropped("malformed")
    assert parsed("bash_without_command") == Dropped("malformed")
    assert parse(b" " * (MAX_PAYLOAD + 1)) == Dropped("oversize")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm test", "npm test"),
        ("cd /repo && npm test", "npm test"),
        ("cd '/repo' && npm test; echo $?", "npm test"),
        ('cd "/repo/." ; npm test 2>&1; echo "exit=$?"', "npm test"),
        ("npm test 2>&1", "npm test"),
        ("cd /repo/web && npm test", "cd /repo/web && npm test"),  # another directory: kept
        ("npm test | tail -5", "npm test | tail -5"),  # tail's status is not npm's: kept
        ("  pytest -q  ", "pytest -q"),
    ],
)
def test_wrappers_an_agent_adds_are_stripped(command: str, expected: str):
    assert normalize_command(command, "/repo") == expected


def test_an_error_excerpt_keeps_the_first_line_and_the_end():
    lines = "Exit code 2\n" + "".join(f"step {i} ok\n" for i in range(100)) + "error: E0308 here"
    kept = error_excerpt(lines)
    assert kept.startswith("Exit code 2\n…\n") and kept.endswith("error: E0308 here")
    one_line = "a" * 500 + "THE END"
    kept = error_excerpt(one_line)  # no line to keep whole: its start and its end
    assert kept.startswith("a" * 100) and kept.endswith("THE END")
    assert max(len(error_excerpt(lines)), len(kept)) <= MAX_ERROR
    assert error_excerpt("Exit code 1\nshort") == "Exit code 1\nshort"
