"""Claude Code hook payloads: the JSON object on the hook's stdin, parsed, normalized, acted on.

The hook must never fail (a failure is swallowed, so it would silently lose the command) and
every record it appends must be one that sync can read back.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from nexusmem_core.collectors.agent.payload import (
    AgentEvent,
    Dropped,
    normalize,
    parse,
    status_from_output,
)
from nexusmem_core.collectors.agent.recall import AGENT_LOG
from nexusmem_core.collectors.agent.runner import handle
from nexusmem_core.collectors.agent.settings import read_drops
from nexusmem_core.collectors.shell.hooklog import LogCursor, read_new

from .bounds import Store, Target, mutated, repeated, within

CWD = "/work/repo"  # replaced by the real repository directory of the check

_COMMANDS = [
    "pytest -q",
    "cd /work/repo && make test 2>&1; echo $?",
    "cd ~nobody\x00x && ls",
    'cd "/work/repo" ; npm test',
    "cd ~ && ls",
    "make \ud800",
    "",
    "   ",
    "grep -r TODO src",
    "export TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a && gh api user",
]
_HOSTILE: list[Any] = [
    "",
    "x",
    CWD + "/\x00",
    "\ud800",
    0,
    -1,
    2**70,
    1.5,
    True,
    None,
    [],
    {},
    ["a"],
    {"a": {}},
]
_ERRORS = [
    "Exit code 2\nmake: *** [test] Error 2",
    "Error: Exit code -99999",
    "Exit code: 1",
    "The user doesn't want to proceed with this tool use.",
    "Blocked by a PreToolUse hook",
    "",
]
_BASES: list[dict[str, Any]] = [
    {
        "hook_event_name": "PostToolUse",
        "session_id": "s1",
        "cwd": CWD,
        "tool_name": "Bash",
        "tool_use_id": "toolu_1",
        "tool_input": {"command": "pytest -q", "run_in_background": False},
        "tool_response": {"stdout": "1 passed\n0", "interrupted": False, "exit_code": 0},
    },
    {
        "hook_event_name": "PostToolUseFailure",
        "session_id": "s1",
        "cwd": CWD,
        "tool_name": "Bash",
        "tool_input": {"command": "make test"},
        "error": "Exit code 2\nmake: *** [test] Error 2",
        "is_interrupt": False,
    },
    {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "cwd": CWD,
        "tool_name": "Bash",
        "tool_input": {"command": "make test"},
    },
    {
        "hook_event_name": "PostToolUse",
        "session_id": "s1",
        "cwd": CWD,
        "tool_name": "Edit",
        "tool_input": {"file_path": CWD + "/src/app.py", "old_string": "a", "new_string": "b"},
    },
    {"hook_event_name": "SessionStart", "session_id": "s1", "cwd": CWD, "source": "startup"},
]


@st.composite
def payloads(draw: st.DrawFn) -> bytes:
    """A payload Claude Code would send, some fields replaced, then maybe broken as bytes."""
    payload = json.loads(json.dumps(draw(st.sampled_from(_BASES))))
    for key in draw(st.lists(st.sampled_from(sorted(payload)), max_size=3)):
        payload[key] = draw(st.sampled_from(_HOSTILE).map(copy.deepcopy))
    inner = payload.get("tool_input")
    if isinstance(inner, dict) and "command" in inner:
        inner["command"] = draw(st.one_of(st.sampled_from(_COMMANDS), mutated(_COMMANDS)))
    if "error" in payload:
        payload["error"] = draw(st.one_of(st.sampled_from(_ERRORS), st.text(max_size=30)))
    data = json.dumps(payload, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))
    return data if cut is None else data[:cut]


def check_payload(data: bytes, store: Store) -> None:
    """Parsing, normalizing and the whole hook never raise; what the hook appends, sync reads;
    a payload it cannot use is counted."""
    data = data.replace(CWD.encode(), str(store.root).encode())
    home = store.root.parent / "home"
    drops = sum(read_drops(home).values())
    with within():
        event = parse(data)
        if isinstance(event, AgentEvent) and event.command is not None:
            assert normalize(event.command, event.cwd).text.strip()
            status_from_output(event.stdout_tail)
        if isinstance(event, AgentEvent) and event.event == "SessionStart":
            return  # it starts a background sync: not something to do per example
        handle(data, str(home), 1767225600.0)
    if isinstance(event, Dropped):
        assert sum(read_drops(home).values()) == drops + 1
    log = home / AGENT_LOG
    read = read_new(log, LogCursor())
    assert read.malformed == 0, log.read_bytes()[-300:]


@settings(max_examples=100, deadline=None)
@given(data=payloads())
@example(data=b"[" * 100_000)
@example(data=json.dumps({**_BASES[0], "tool_input": {"command": "cd ~a\x00b && ls"}}).encode())
@example(data=json.dumps({**_BASES[1], "cwd": CWD + "/\x00"}).encode())
@example(data=json.dumps({**_BASES[1], "tool_input": {"command": "make \ud800"}}).encode())
def test_a_payload_is_acted_on_or_counted(store: Store, data: bytes) -> None:
    check_payload(data, store)


_WRAPPERS = [" ", "\n", "\t", ";", "&&", "||", "echo", " $?", '"$?"', "'", "2>&1", "cd ", "~", "x"]


@settings(max_examples=100, deadline=None)
@given(
    command=st.one_of(st.sampled_from(_COMMANDS), mutated(_COMMANDS), repeated(_WRAPPERS, 30_000)),
    cwd=st.sampled_from([CWD, "/", "relative", CWD + "/\x00", "\ud800"]),
)
@example(command="make" + " " * 30_000 + "x", cwd=CWD)
@example(command="make" + " " * 30_000 + "2>&1 x", cwd=CWD)
def test_normalizing_a_command_never_raises(command: str, cwd: str) -> None:
    with within():
        text, _ = normalize(command, cwd)
    assert text == command.strip() or len(text) < len(command.strip())


TARGETS = {"agent payloads": Target(payloads(), check_payload, store=True)}
