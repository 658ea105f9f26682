"""The story's coding-agent sessions, as each agent's hook hands them over.

Each step of an ``AgentSession`` (story.py) becomes the payloads its agent sends: a command's
before-event, then its after-event with the output or the error text the agent gives, and an
edit's after-event. They go through the real hook's handling (``runner.handle``, the agent
named as the installed hook names it), so the log holds exactly what the hooks would have
written: commands redacted, errors kept as the setting says, edits attached to the next
command. The shapes follow the fixtures in ``tests/collectors/agent/fixtures/<agent>/``, each
from its agent's hook reference.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from model import AgentSession, AgentStep

__all__ = ["BUILDERS", "payloads", "replay", "session_start"]


def _ids(session: AgentSession, index: int) -> tuple[str, str]:
    sid = hashlib.sha256(f"{session.agent}:{session.when}".encode()).hexdigest()[:16]
    return sid, f"call_{sid[:6]}_{index}"


def _claude(step: AgentStep, cwd: str, sid: str, call: str) -> list[dict[str, Any]]:
    base = {"session_id": sid, "cwd": cwd, "tool_use_id": call, "permission_mode": "default"}
    if step.edit:
        return [
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "Edit",
                "tool_input": {"file_path": f"{cwd}/{step.edit}"},
                "tool_response": {"success": True},
            }
        ]
    before = {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    before["tool_input"] = {"command": step.cmd}
    if step.exit == 0:
        after = {**before, "hook_event_name": "PostToolUse"}
        after["tool_response"] = {"stdout": step.output, "stderr": "", "interrupted": False}
    else:
        after = {**before, "hook_event_name": "PostToolUseFailure", "is_interrupt": False}
        after["error"] = f"Exit code {step.exit}\n{step.output}"
    return [before, after]


def _codex(step: AgentStep, cwd: str, sid: str, call: str) -> list[dict[str, Any]]:
    base = {"session_id": sid, "turn_id": "turn-1", "transcript_path": None, "cwd": cwd}
    base |= {"model": "gpt-5.1-codex", "permission_mode": "default", "tool_use_id": call}
    if step.edit:
        patch = f"*** Begin Patch\n*** Update File: {step.edit}\n@@\n-a\n+b\n*** End Patch\n"
        return [
            {
                **base,
                "hook_event_name": "PostToolUse",
                "tool_name": "apply_patch",
                "tool_input": {"command": patch},
                "tool_response": f"Exit code: 0\nOutput:\nSuccess. Updated the following "
                f"files:\nM {step.edit}\n",
            }
        ]
    before = {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    before["tool_input"] = {"command": step.cmd}
    after = {**before, "hook_event_name": "PostToolUse"}
    after["tool_response"] = f"Exit code: {step.exit}\nWall time: 2.0 seconds\nOutput:\n"
    after["tool_response"] += step.output
    return [before, after]


def _gemini(step: AgentStep, cwd: str, sid: str, call: str) -> list[dict[str, Any]]:
    base = {"session_id": sid, "transcript_path": None, "cwd": cwd}
    if step.edit:
        return [
            {
                **base,
                "hook_event_name": "AfterTool",
                "tool_name": "replace",
                "tool_input": {"file_path": f"{cwd}/{step.edit}", "old_string": "a"},
                "tool_response": {"llmContent": "Successfully modified file", "returnDisplay": ""},
            }
        ]
    before = {**base, "hook_event_name": "BeforeTool", "tool_name": "run_shell_command"}
    before["tool_input"] = {"command": step.cmd, "description": "run it"}
    code = f"\nExit Code: {step.exit}" if step.exit else ""
    content = f"<untrusted_context>\nOutput: {step.output}{code}\n</untrusted_context>"
    after = {**before, "hook_event_name": "AfterTool"}
    after["tool_response"] = {"llmContent": content, "returnDisplay": step.output}
    return [before, after]


def _cursor(step: AgentStep, cwd: str, sid: str, call: str) -> list[dict[str, Any]]:
    base = {"conversation_id": sid, "generation_id": call, "model": "claude-4.5-sonnet"}
    base |= {"cursor_version": "2.1.0", "workspace_roots": [cwd], "transcript_path": None}
    if step.edit:
        edit = {**base, "hook_event_name": "afterFileEdit", "file_path": f"{cwd}/{step.edit}"}
        return [edit | {"edits": [{"old_string": "a", "new_string": "b"}]}]
    before = {**base, "hook_event_name": "beforeShellExecution", "command": step.cmd}
    before |= {"cwd": cwd, "sandbox": False}
    tool = {**base, "tool_name": "Shell", "tool_input": {"command": step.cmd}}
    tool |= {"tool_use_id": call, "cwd": cwd, "duration": 2000}
    if step.exit == 0:
        after = {**tool, "hook_event_name": "postToolUse", "tool_output": step.output}
    else:
        after = {**tool, "hook_event_name": "postToolUseFailure", "failure_type": "error"}
        after["error_message"] = f"Command failed with exit code {step.exit}: {step.output}"
        after["is_interrupt"] = False
    return [before, after]


def _opencode(step: AgentStep, cwd: str, sid: str, call: str) -> list[dict[str, Any]]:
    base = {"session_id": f"ses_{sid}", "call_id": call, "cwd": cwd}
    if step.edit:
        args = {"filePath": f"{cwd}/{step.edit}", "oldString": "a", "newString": "b"}
        return [
            {
                **base,
                "hook_event_name": "tool.execute.after",
                "tool": "edit",
                "args": args,
                "output": "",
                "metadata": {"diagnostics": {}},
            }
        ]
    args = {"command": step.cmd, "description": "run it"}
    before = {**base, "hook_event_name": "tool.execute.before", "tool": "bash", "args": args}
    after = {**before, "hook_event_name": "tool.execute.after", "output": step.output}
    after["metadata"] = {"output": step.output, "exit": step.exit, "description": "run it"}
    return [before, after]


BUILDERS = {
    "claude": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "cursor": _cursor,
    "opencode": _opencode,
}


def session_start(agent: str, cwd: str, sid: str) -> dict[str, Any]:
    """The payload of a new session of ``agent`` (opencode: its plugin's session.created)."""
    if agent == "opencode":
        return {"hook_event_name": "session.created", "session_id": f"ses_{sid}", "cwd": cwd}
    if agent == "cursor":
        return {
            "conversation_id": sid,
            "session_id": sid,
            "hook_event_name": "sessionStart",
            "workspace_roots": [cwd],
            "is_background_agent": False,
            "composer_mode": "agent",
        }
    return {"session_id": sid, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}


def payloads(session: AgentSession, repo: Path) -> list[tuple[float, bytes]]:
    """Every payload of ``session``, with the moment its hook runs."""
    from model import ts

    clock, out = float(ts(session.when)), []
    for index, step in enumerate(session.steps):
        clock += step.after * 60
        cwd = str(repo / step.cwd) if step.cwd else str(repo)
        sid, call = _ids(session, index)
        events = BUILDERS[session.agent](step, cwd, sid, call)
        for offset, event in enumerate(events):  # the after-event once the command has run
            out.append((clock + offset * step.duration, json.dumps(event).encode()))
        clock += step.duration
    return out


def replay(sessions: list[AgentSession], repo: Path, home: Path) -> dict[str, int]:
    """Every session's payloads through the hook's handling, in time order; how many of each
    agent's payloads there were."""
    from nexusmem_core.collectors.agent.runner import handle

    timed = [
        (when, session.agent, data)
        for session in sessions
        for when, data in payloads(session, repo)
    ]
    counts: dict[str, int] = {}
    for when, agent, data in sorted(timed, key=lambda item: item[0]):
        handle(data, str(home), when, agent)
        counts[agent] = counts.get(agent, 0) + 1
    return counts
