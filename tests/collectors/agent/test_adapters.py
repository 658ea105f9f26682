"""Every coding agent's hook payloads, from its documentation, read into the one event shape,
recorded by the real hook command, and answered in that agent's own format."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nexusmem_core.collectors.agent import AGENTS
from nexusmem_core.collectors.agent.payload import AgentEvent, Dropped, adapter, parse

from ...conftest import Repo, modules_loaded_by, run_cli
from .hookrun import FIXTURES, fixture, log_records, run_hook

NOTE = "NexusMem: `npm test` failed 2 times in this repository before."

# (agent, fixture) -> what it must read as: canonical event, command, outcome, exit, paths,
# the tool call's id and the session.
EXPECTED: dict[tuple[str, str], dict[str, Any]] = {
    ("claude", "pre_tool_use_bash"): dict(event="PreToolUse", command="npm test", outcome=None),
    ("claude", "post_tool_use_bash"): dict(event="PostToolUse", outcome="ok", exit=0),
    ("claude", "post_tool_use_failure_bash"): dict(
        event="PostToolUseFailure", outcome="failed", exit=1, tool_use_id="toolu_01FAIL"
    ),
    ("claude", "post_tool_use_edit"): dict(event="PostToolUse", paths=["src/retry.py"]),
    ("claude", "session_start"): dict(event="SessionStart", session="sess-c1"),
    ("codex", "pre_tool_use_bash"): dict(event="PreToolUse", command="npm test"),
    ("codex", "post_tool_use_bash"): dict(event="PostToolUse", outcome="ok", exit=0),
    ("codex", "post_tool_use_bash_failed"): dict(
        event="PostToolUseFailure", outcome="failed", exit=1, tool_use_id="call_FAIL"
    ),
    ("codex", "post_tool_use_bash_exec"): dict(
        event="PostToolUse", command="cargo build", outcome="unknown", exit=None
    ),
    ("codex", "post_tool_use_apply_patch"): dict(event="PostToolUse", paths=["src/retry.py"]),
    ("codex", "session_start"): dict(
        event="SessionStart", session="019a0e5c-7f1e-7c61-9d1b-3f2a8e6c4b10"
    ),
    ("gemini", "before_tool_shell"): dict(event="PreToolUse", command="npm test"),
    ("gemini", "after_tool_shell"): dict(event="PostToolUse", outcome="ok", exit=0),
    ("gemini", "after_tool_shell_failed"): dict(
        event="PostToolUseFailure", outcome="failed", exit=1, tool_use_id=None
    ),
    ("gemini", "after_tool_replace"): dict(event="PostToolUse", paths=["src/retry.py"]),
    ("gemini", "after_tool_write_file"): dict(event="PostToolUse", paths=["test/retry_test.py"]),
    ("gemini", "session_start"): dict(
        event="SessionStart", session="7c2d9f2e-1b1a-4e7a-9b61-0f3c2b8d5e11"
    ),
    ("cursor", "before_shell_execution"): dict(event="PreToolUse", command="npm test"),
    ("cursor", "post_tool_use_shell"): dict(event="PostToolUse", outcome="ok", exit=0),
    ("cursor", "post_tool_use_failure_shell"): dict(
        event="PostToolUseFailure", outcome="failed", exit=1, tool_use_id="tool_FAIL"
    ),
    ("cursor", "after_shell_execution"): dict(event="PostToolUse", outcome="unknown", exit=None),
    ("cursor", "after_file_edit"): dict(event="PostToolUse", paths=["src/retry.py"]),
    ("cursor", "session_start"): dict(
        event="SessionStart", session="668320d2-2fd8-4888-b33c-2a466fec86e7"
    ),
    ("opencode", "tool_execute_before_bash"): dict(event="PreToolUse", command="npm test"),
    ("opencode", "tool_execute_after_bash"): dict(event="PostToolUse", outcome="ok", exit=0),
    ("opencode", "tool_execute_after_bash_failed"): dict(
        event="PostToolUseFailure", outcome="failed", exit=1, tool_use_id="toolu_01FAILED"
    ),
    ("opencode", "tool_execute_after_edit"): dict(event="PostToolUse", paths=["src/retry.py"]),
    ("opencode", "session_created"): dict(
        event="SessionStart", session="ses_5d1c9a2e7ffeS1zq0w0J6uXb2K"
    ),
}


def test_every_fixture_has_an_expectation_and_a_documented_source():
    found = {(p.parent.name, p.stem) for p in FIXTURES.glob("*/*.json")}
    assert found == set(EXPECTED)
    assert {p.parent.name for p in FIXTURES.glob("*/README.md")} == set(AGENTS)
    for readme in FIXTURES.glob("*/README.md"):
        assert "Source: https://" in readme.read_text(), readme


@pytest.mark.parametrize(("agent", "name"), sorted(EXPECTED))
def test_each_fixture_reads_into_its_canonical_event(agent: str, name: str):
    event = parse(json.dumps(fixture(agent, name, Path("/repo"))).encode(), agent)
    assert isinstance(event, AgentEvent), event
    want = {"command": None, "paths": [], "outcome": None, "exit": None} | EXPECTED[agent, name]
    if want["event"] in ("PostToolUse", "PostToolUseFailure") and not want["paths"]:
        want["command"] = want["command"] or "npm test"
    if want["paths"]:
        want["paths"] = [f"/repo/{p}" for p in want["paths"]]
        want["outcome"] = "ok"
    if want["event"] == "PreToolUse":
        want.pop("outcome")
    got = {key: getattr(event, key) for key in want}
    got["paths"] = [os.path.join(event.cwd, p) for p in event.paths]  # Codex's are relative
    assert got == want
    assert event.agent == agent and event.cwd == "/repo"


# How a run ended, as each agent states it (or does not): (agent, fixture, changes at dotted
# paths) -> (outcome, exit code, working directory).
ENDINGS = [
    ("codex", "post_tool_use_bash", {"tool_response": "Output:\nExit code: 3\n"}, "unknown", None),
    (
        "codex",
        "post_tool_use_bash",
        {"tool_response": "Wall time: 0.2 seconds\nProcess exited with code 2\nOutput:\nboom"},
        "failed",
        2,
    ),
    ("codex", "post_tool_use_bash", {"tool_response": {"exit_code": 0, "output": "ok"}}, "ok", 0),
    (
        "gemini",
        "after_tool_shell",
        {"tool_response.llmContent": "Command was cancelled by user before it could complete."},
        "interrupted",
        None,
    ),
    ("gemini", "after_tool_shell", {"tool_input.is_background": True}, "background", None),
    (
        "gemini",
        "after_tool_shell",
        {"tool_response.error": {"message": "spawn ENOENT", "type": "shell_execute_error"}},
        "failed",
        None,
    ),
    ("cursor", "post_tool_use_failure_shell", {"is_interrupt": True}, "interrupted", None),
    (
        "cursor",
        "post_tool_use_failure_shell",
        {"failure_type": "permission_denied", "error_message": "Rejected by the user"},
        "denied",
        None,
    ),
    (
        "cursor",
        "post_tool_use_failure_shell",
        {"failure_type": "timeout", "error_message": "Command timed out after 30s"},
        "failed",
        None,
    ),
    (
        "opencode",
        "tool_execute_after_bash",
        {
            "metadata": {},
            "output": "bash tool terminated command after exceeding timeout 120000 ms",
        },
        "failed",
        None,
    ),
    (
        "opencode",
        "tool_execute_after_bash",
        {"metadata.exit": None, "output": "User aborted the command"},
        "interrupted",
        None,
    ),
]


def _changed(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    for path, value in changes.items():
        *parents, key = path.split(".")
        target = data
        for name in parents:
            target = target[name]
        target[key] = value
    return data


@pytest.mark.parametrize(("agent", "name", "changes", "outcome", "code"), ENDINGS)
def test_an_outcome_is_what_the_agent_stated_and_never_a_guess(
    agent: str, name: str, changes: dict[str, Any], outcome: str, code: int | None
):
    data = _changed(fixture(agent, name, Path("/repo")), changes)
    event = parse(json.dumps(data).encode(), agent)
    assert isinstance(event, AgentEvent)
    assert (event.outcome, event.exit) == (outcome, code)
    if outcome == "failed":  # notes after a failure hang on the canonical event
        assert event.event == "PostToolUseFailure"


@pytest.mark.parametrize(
    ("agent", "name", "changes"),
    [
        ("gemini", "before_tool_shell", {"tool_input.dir_path": "web"}),
        ("cursor", "post_tool_use_shell", {"tool_input.working_directory": "/repo/web"}),
        ("opencode", "tool_execute_before_bash", {"args.workdir": "web"}),
    ],
)
def test_a_command_runs_where_the_agent_says(agent: str, name: str, changes: dict[str, Any]):
    data = _changed(fixture(agent, name, Path("/repo")), changes)
    event = parse(json.dumps(data).encode(), agent)
    assert isinstance(event, AgentEvent) and event.cwd == "/repo/web"


def test_gemini_output_is_read_without_the_lines_gemini_adds():
    """``make; echo $?`` shows its status at the end of what the command printed: Gemini's
    own ``Process Group PGID`` line after it must not hide it."""
    data = fixture("gemini", "after_tool_shell", Path("/repo"))
    data["tool_response"]["llmContent"] = (
        "<untrusted_context>\nOutput: built\n2\nProcess Group PGID: 77\n</untrusted_context>"
    )
    event = parse(json.dumps(data).encode(), "gemini")
    assert isinstance(event, AgentEvent) and event.stdout_tail == "built\n2"


def test_a_gemini_failure_keeps_what_the_command_printed_not_geminis_frame():
    data = fixture("gemini", "after_tool_shell_failed", Path("/repo"))
    event = parse(json.dumps(data).encode(), "gemini")
    assert isinstance(event, AgentEvent) and event.outcome == "failed"
    assert event.error == "npm ERR! Test failed.  See above for more details."


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_payloads_that_are_broken_or_not_ours(agent: str):
    event_key = "hook_event_name"
    assert parse(b"[1]", agent) == Dropped("malformed")
    assert parse(json.dumps({event_key: 3}).encode(), agent) == Dropped("malformed")
    start = {"claude": "session_start", "codex": "session_start", "gemini": "session_start"}
    name = start.get(agent) or {"cursor": "session_start", "opencode": "session_created"}[agent]
    no_cwd = fixture(agent, name, Path("/repo"))
    for key in ("cwd", "workspace_roots"):
        no_cwd.pop(key, None)
    assert parse(json.dumps(no_cwd).encode(), agent) == Dropped("malformed")
    other = fixture(agent, name, Path("/repo")) | {event_key: "SomethingElse"}
    assert parse(json.dumps(other).encode(), agent) is None


def test_an_unknown_agent_is_refused():
    with pytest.raises(ValueError, match="unknown coding agent 'aider'"):
        parse(b"{}", "aider")


def _answered(agent: str, event: str, native: str) -> Any:
    made = AgentEvent(event, "s", "/repo", agent)
    made.native = native
    text = adapter(agent).answer(made, NOTE)
    return None if text is None else json.loads(text)


def test_each_agent_answers_in_its_own_format_or_not_at_all():
    hooked = {"hookSpecificOutput": {"hookEventName": "", "additionalContext": NOTE}}

    def hook_output(native: str) -> dict[str, Any]:
        return {"hookSpecificOutput": hooked["hookSpecificOutput"] | {"hookEventName": native}}

    assert _answered("claude", "PreToolUse", "PreToolUse") == hook_output("PreToolUse")
    assert _answered("claude", "PostToolUseFailure", "PostToolUseFailure") == hook_output(
        "PostToolUseFailure"
    )
    # Codex knows no PostToolUseFailure: its answer names the event that asked.
    assert _answered("codex", "PostToolUseFailure", "PostToolUse") == hook_output("PostToolUse")
    assert _answered("codex", "SessionStart", "SessionStart") == hook_output("SessionStart")
    assert _answered("gemini", "PreToolUse", "BeforeTool") is None
    assert _answered("gemini", "PostToolUseFailure", "AfterTool") == hook_output("AfterTool")
    assert _answered("cursor", "PreToolUse", "beforeShellExecution") == {"agent_message": NOTE}
    assert _answered("cursor", "SessionStart", "sessionStart") == {"additional_context": NOTE}
    assert _answered("cursor", "PostToolUseFailure", "postToolUseFailure") is None
    assert _answered("opencode", "PreToolUse", "tool.execute.before") == {"note": NOTE}
    assert _answered("opencode", "SessionStart", "session.created") is None
    for agent in AGENTS:
        module = adapter(agent)
        assert isinstance(module.LABEL, str) and module.LABEL
        # CONTEXT says why exactly when some kind of note cannot reach the agent.
        full = {"PreToolUse", "PostToolUseFailure", "SessionStart"} <= module.NOTES
        assert (module.CONTEXT is None) == full, agent


@pytest.fixture
def project(repo: Repo) -> Repo:
    assert run_cli("init", "-C", str(repo.path)).returncode == 0
    assert run_cli("sync", "-q", "-C", str(repo.path)).returncode == 0
    return repo


@pytest.mark.parametrize(("agent", "name"), sorted(EXPECTED))
def test_each_fixture_through_the_hook_command(project: Repo, home: Path, agent: str, name: str):
    result = run_hook(fixture(agent, name, project.path), agent)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    want = EXPECTED[agent, name]
    records = log_records(home)
    if want["event"] == "PreToolUse" or want["event"] == "SessionStart":
        assert records == []
        return
    if "paths" in want:  # an edit is told with the session's next command
        assert records == []
        session = Session(agent, project, _session_of(agent, name, project.path))
        session.ran("make check")
        (record,) = log_records(home)
        assert record["edited"] == want["paths"]
        return
    (record,) = records
    assert (record["agent"], record["shell"]) == (agent, agent)
    assert (record["outcome"], record["exit"]) == (want["outcome"], want["exit"])
    assert record["cmd"] == want.get("command", "npm test")
    assert record["cwd"] == str(project.path)
    if want.get("tool_use_id"):
        assert record["id"] == record["tool_use_id"] == want["tool_use_id"]
    if want["outcome"] == "failed":
        assert "npm ERR! Test failed." in record["error"]


def test_an_unknown_agent_argument_is_silent_and_records_nothing(project: Repo, home: Path):
    result = run_hook(fixture("codex", "post_tool_use_bash_failed", project.path), "aider")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert log_records(home) == []


def test_the_hook_without_an_agent_argument_is_claude_codes(project: Repo, home: Path):
    run_hook(fixture("claude", "post_tool_use_failure_bash", project.path))
    (record,) = log_records(home)
    assert (record["agent"], record["outcome"], record["exit"]) == ("claude", "failed", 1)


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_each_adapter_is_as_light_as_the_hook(agent: str):
    loaded = modules_loaded_by(f"nexusmem_core.collectors.agent.adapters.{agent}")
    heavy = {"typing", "pathlib", "dataclasses", "mcp", "pydantic", "anyio"}
    assert loaded & heavy == set()
    others = {f"nexusmem_core.collectors.agent.adapters.{a}" for a in AGENTS} - {
        f"nexusmem_core.collectors.agent.adapters.{agent}"
    }
    assert loaded & others == set()  # the hook imports only the agent it runs for


# How each agent's fixtures are driven in a scripted session.
SCRIPT = {
    "claude": (
        "pre_tool_use_bash",
        "post_tool_use_bash",
        "post_tool_use_failure_bash",
        "post_tool_use_edit",
        "session_start",
    ),
    "codex": (
        "pre_tool_use_bash",
        "post_tool_use_bash",
        "post_tool_use_bash_failed",
        "post_tool_use_apply_patch",
        "session_start",
    ),
    "gemini": (
        "before_tool_shell",
        "after_tool_shell",
        "after_tool_shell_failed",
        "after_tool_replace",
        "session_start",
    ),
    "cursor": (
        "before_shell_execution",
        "post_tool_use_shell",
        "post_tool_use_failure_shell",
        "after_file_edit",
        "session_start",
    ),
    "opencode": (
        "tool_execute_before_bash",
        "tool_execute_after_bash",
        "tool_execute_after_bash_failed",
        "tool_execute_after_edit",
        "session_created",
    ),
}


def _session_of(agent: str, name: str, cwd: Path) -> str:
    data = fixture(agent, name, cwd)
    return str(data.get("session_id") or data.get("conversation_id"))


class Session:
    """One session of ``agent`` driving the real hook with its documented payloads."""

    def __init__(self, agent: str, repo: Repo, session: str) -> None:
        self.agent, self.cwd, self.session, self.calls = agent, repo.path, session, 0
        self.before_, self.ok, self.fail, self.edit, self.start_ = SCRIPT[agent]

    def _send(self, name: str, command: str | None = None, path: str | None = None) -> Any:
        data = fixture(self.agent, name, self.cwd)
        self.calls += 1
        _reshape(self.agent, data, self.session, f"{self.session}-{self.calls}", command, path)
        result = run_hook(data, self.agent)
        assert (result.returncode, result.stderr) == (0, b""), result.stderr
        return json.loads(result.stdout) if result.stdout else None

    def before(self, command: str) -> Any:
        return self._send(self.before_, command)

    def ran(self, command: str) -> Any:
        return self._send(self.ok, command)

    def failed(self, command: str) -> Any:
        return self._send(self.fail, command)

    def edited(self, path: str) -> Any:
        return self._send(self.edit, path=path)

    def start(self) -> Any:
        return self._send(self.start_)


def _reshape(
    agent: str, data: dict[str, Any], session: str, call: str, command: str | None, path: str | None
) -> None:
    """Put a session, a call id, a command or an edited path where ``agent`` carries them."""
    tool_input = data.get("tool_input") or data.get("args") or {}
    for key in ("session_id", "conversation_id"):
        if key in data:
            data[key] = session
    for key in ("tool_use_id", "call_id"):
        if key in data:
            data[key] = call
    if command is not None:
        if "command" in data:
            data["command"] = command  # Cursor's shell events
        else:
            tool_input["command"] = command
    if path is not None:
        if agent == "codex":
            tool_input["command"] = tool_input["command"].replace("src/retry.py", path)
        elif agent == "opencode":
            tool_input["filePath"] = path
        elif "file_path" in data:
            data["file_path"] = path  # Cursor's afterFileEdit
        else:
            tool_input["file_path"] = path


def note_in(agent: str, answer: Any, native: str) -> str | None:
    """The note in an answer of ``agent``, checked to be in that agent's own shape."""
    if answer is None:
        return None
    if agent in ("claude", "codex", "gemini"):
        assert answer["hookSpecificOutput"]["hookEventName"] == native
        note: str = answer["hookSpecificOutput"]["additionalContext"]
    elif agent == "cursor":
        assert set(answer) == {"agent_message"}  # no permission of ours overrules the user's
        note = answer["agent_message"]
    else:
        assert set(answer) == {"note"}
        note = answer["note"]
    return note


NATIVE_BEFORE = {
    "claude": "PreToolUse",
    "codex": "PreToolUse",
    "gemini": "BeforeTool",
    "cursor": "beforeShellExecution",
    "opencode": "tool.execute.before",
}
NATIVE_FAILED = {"claude": "PostToolUseFailure", "codex": "PostToolUse", "gemini": "AfterTool"}


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_a_scripted_session_gets_its_note_and_links_the_failure_to_its_fix(
    project: Repo, agent: str
):
    work = Session(agent, project, f"{agent}-s1")
    work.edited("src/retry.py")
    assert work.failed("npm test") is None  # a first failure has no history
    after_repeat = work.failed("npm test")
    work.edited("src/retry.py")
    assert work.ran("npm test") is None
    if "PostToolUseFailure" in adapter(agent).NOTES:
        note = note_in(agent, after_repeat, NATIVE_FAILED.get(agent, ""))
        assert note is not None and "`npm test` failed once" in note
    else:
        assert after_repeat is None

    before = Session(agent, project, f"{agent}-s2").before("npm test")
    if "PreToolUse" in adapter(agent).NOTES:
        note = note_in(agent, before, NATIVE_BEFORE[agent])
        assert note is not None and "failed 2 times" in note
        assert "Recorded fix: it passed at" in note and "after editing src/retry.py" in note
    else:
        assert before is None

    assert run_cli("sync", "-q", "-C", str(project.path)).returncode == 0
    with sqlite3.connect(project.path / ".nexusmem" / "memory.db") as db:
        links = db.execute(
            "select s.source, s.body, d.source, d.body, json_extract(d.meta, '$.author') "
            "from links l join nodes s on s.id = l.src join nodes d on d.id = l.dst "
            "where l.kind = 'retry'"
        ).fetchall()
    label = adapter(agent).LABEL
    assert len(links) == 2  # both failures, each to the one run that fixed it
    for failed_source, failed_body, fix_source, fix_body, author in links:
        assert failed_source == fix_source == f"agent:{agent}"
        assert author == AGENTS[agent]
        assert "failed with an error (exit 1)" in failed_body
        assert "succeeded (exit 0)" in fix_body
        assert "changed before this ran: src/retry.py" in fix_body
        assert f"ran by: the coding agent ({label})" in fix_body


@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_session_start_gives_the_digest_where_the_agent_takes_it(project: Repo, agent: str):
    work = Session(agent, project, f"{agent}-s1")
    work.failed("make docs")
    answer = Session(agent, project, f"{agent}-s2").start()
    if "SessionStart" not in adapter(agent).NOTES:
        assert answer is None
        return
    if agent == "cursor":
        assert set(answer) == {"additional_context"}
        digest = answer["additional_context"]
    else:
        assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        digest = answer["hookSpecificOutput"]["additionalContext"]
    assert "`make docs` failed 1x" in digest


_DRIVER = """\
import { NexusMem } from "./nexusmem.mjs";
const [directory, session, steps] = process.argv.slice(2);
const hooks = await NexusMem({ directory });
const outputs = [];
let calls = 0;
for (const step of JSON.parse(steps)) {
  const input = { tool: step.tool, sessionID: session, callID: `call_${session}_${++calls}` };
  await hooks["tool.execute.before"](input, { args: step.args });
  const output = { title: "", output: step.output, metadata: step.metadata };
  await hooks["tool.execute.after"]({ ...input, args: step.args }, output);
  outputs.push(output.output);
}
console.log(JSON.stringify(outputs));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="opencode's plugins run on node or bun")
def test_the_installed_opencode_plugin_and_the_adapter_agree(project: Repo, tmp_path: Path):
    """The plugin ``agent install`` writes, run as opencode runs it, feeding the real hook."""
    from nexusmem_core.collectors.agent.install.plugin import render

    from .hookrun import HOOK

    (tmp_path / "nexusmem.mjs").write_text(
        render([sys.executable, "-S", "-P", str(HOOK), "opencode"])
    )
    (tmp_path / "driver.mjs").write_text(_DRIVER)

    def bash(command: str, code: int) -> dict[str, Any]:
        text = "npm ERR! Test failed.\n" if code else "42 passing\n"
        return {
            "tool": "bash",
            "args": {"command": command},
            "output": text,
            "metadata": {"exit": code, "output": text},
        }

    def edit(path: str) -> dict[str, Any]:
        args = {"filePath": str(project.path / path), "oldString": "3", "newString": "5"}
        return {"tool": "edit", "args": args, "output": "", "metadata": {}}

    def session(name: str, *steps: dict[str, Any]) -> list[str]:
        argv = ["node", str(tmp_path / "driver.mjs"), str(project.path), name, json.dumps(steps)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        outputs: list[str] = json.loads(done.stdout)
        return outputs

    first = session(
        "ses_a",
        edit("src/retry.py"),
        bash("npm test", 1),
        bash("npm test", 1),
        edit("src/retry.py"),
        bash("npm test", 0),
    )
    assert first[1] == "npm ERR! Test failed.\n"  # a first failure: the output as it was
    failed, _, note = first[2].partition("\n\nNexusMem: ")  # the note follows the output
    assert failed.rstrip() == "npm ERR! Test failed." and note.startswith("`npm test` failed once")
    assert first[4] == "42 passing\n"
    (again,) = session("ses_b", bash("npm test", 0))
    passed, _, note = again.partition("\n\nNexusMem: ")
    assert passed.rstrip() == "42 passing" and note.startswith("`npm test` failed 2 times")
    assert "Recorded fix: it passed at" in note and "after editing src/retry.py" in note


def test_a_command_node_names_its_agent_and_an_old_record_is_claude_codes():
    from nexusmem_core.collectors.agent.nodes import agent_node

    record = {"v": 1, "id": "r1", "cmd": "npm test", "outcome": "ok", "exit": 0, "ts": 1.5}
    for agent in AGENTS:
        node = agent_node("p", record | {"agent": agent, "shell": agent}, 1000)
        assert (node.source, node.meta["author"]) == (f"agent:{agent}", AGENTS[agent])
        assert f"ran by: the coding agent ({adapter(agent).LABEL})" in node.body
    for old in (record, record | {"agent": "aider"}, record | {"agent": 7}):
        node = agent_node("p", old, 1000)  # a log line from before the field, or from elsewhere
        assert (node.source, node.meta["author"]) == ("agent:claude", "claude-code")
        assert "ran by: the coding agent (Claude Code)" in node.body
