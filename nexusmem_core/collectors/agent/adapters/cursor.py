"""Cursor (https://cursor.com/docs/agent/hooks).

Hooks live in ``~/.cursor/hooks.json`` or ``<project>/.cursor/hooks.json``, ``{"version": 1,
"hooks": {event: [{"command": ..., "timeout": seconds, "matcher": ...}]}}``. Every event
brings ``conversation_id``, ``generation_id``, ``model``, ``hook_event_name``,
``cursor_version``, ``workspace_roots``, ``user_email``, ``transcript_path``:

* ``sessionStart``: ``session_id`` (the conversation's id), ``is_background_agent``,
  ``composer_mode``; answers ``additional_context``.
* ``beforeShellExecution``: ``command``, ``cwd``, ``sandbox``; answers ``permission``,
  ``user_message``, ``agent_message``. The note goes as ``agent_message`` alone: a
  ``permission`` of ours would overrule the user's own approval rules, which a note must not.
* ``postToolUse`` / ``postToolUseFailure`` of ``Shell``: ``tool_input.command``,
  ``tool_use_id``, ``cwd``; after a success ``tool_output``, after a failure
  ``error_message``, ``failure_type`` (error | timeout | permission_denied) and
  ``is_interrupt``. Neither takes output. The exit code is only known when the message
  states it.
* ``afterShellExecution``: ``command``, ``output``, ``duration``, no exit code nor status:
  its runs are recorded with an unknown outcome. Install it or the two above, not both.
* ``afterFileEdit``: ``file_path`` (absolute), ``edits``; no output.

Time limit: ``timeout`` per hook in seconds.
"""

from __future__ import annotations

import json
import re

from ..payload import AgentEvent, Dropped, begin, clean, text_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CONTEXT", "LABEL", "NOTES", "answer", "parse"]

LABEL = "Cursor"
CONTEXT = (
    "a failed command's hook takes no output: notes come before a repeat and at session "
    "start, not right after a failure"
)
NOTES = frozenset({"PreToolUse", "SessionStart"})
SHELL = "Shell"
_EVENTS = {
    "sessionStart": "SessionStart",
    "beforeShellExecution": "PreToolUse",
    "afterShellExecution": "PostToolUse",
    "postToolUse": "PostToolUse",
    "postToolUseFailure": "PostToolUseFailure",
    "afterFileEdit": "PostToolUse",
}
_EXIT = re.compile(r"\bexit(?:ed with)? code:?\s*(-?\d{1,5})\b", re.IGNORECASE)


def parse(payload: dict[str, Any]) -> AgentEvent | Dropped | None:
    """The event in one Cursor payload."""
    session = payload.get("conversation_id", payload.get("session_id"))
    out = begin("cursor", payload, _EVENTS, session, _cwd(payload))
    if not isinstance(out, AgentEvent):
        return out
    name = out.native
    if name == "sessionStart":
        out.source = "background" if payload.get("is_background_agent") is True else "startup"
        return out
    if name == "afterFileEdit":
        path = payload.get("file_path")
        if not isinstance(path, str) or not path:
            return Dropped("malformed")
        out.paths, out.outcome = [clean(path)], "ok"
        return out
    if name in ("postToolUse", "postToolUseFailure"):
        return _tool_use(out, payload)
    out.tool = SHELL
    if not _command(out, payload.get("command")):
        return None if isinstance(payload.get("command"), str) else Dropped("malformed")
    if name == "afterShellExecution":
        out.outcome = "unknown"  # Cursor does not say how it ended
        output = payload.get("output")
        out.stdout_tail = clean(output)[-200:] if isinstance(output, str) else ""
    return out


def answer(event: AgentEvent, note: str) -> str | None:
    """``agent_message`` before a shell command, ``additional_context`` at session start."""
    if event.event == "PreToolUse":
        return json.dumps({"agent_message": note})
    if event.event == "SessionStart":
        return json.dumps({"additional_context": note})
    return None


def _cwd(payload: dict[str, Any]) -> object:
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd:
        return cwd
    roots = payload.get("workspace_roots")
    return roots[0] if isinstance(roots, list) and roots else None


def _command(out: AgentEvent, command: object) -> bool:
    if not isinstance(command, str) or not command.strip():
        return False
    out.command = clean(command)
    return True


def _tool_use(out: AgentEvent, payload: dict[str, Any]) -> AgentEvent | Dropped | None:
    tool, tool_input = payload.get("tool_name"), payload.get("tool_input")
    if tool != SHELL:
        return None  # edits arrive as afterFileEdit; other tools are not ours
    if not isinstance(tool_input, dict):
        return Dropped("malformed")
    out.tool, out.tool_use_id = tool, text_of(payload.get("tool_use_id"))
    if not _command(out, tool_input.get("command")):
        return None if isinstance(tool_input.get("command"), str) else Dropped("malformed")
    where = tool_input.get("working_directory")
    if isinstance(where, str) and where.startswith("/") and "\x00" not in where:
        out.cwd = clean(where)
    if out.native == "postToolUse":
        out.outcome, out.exit = "ok", 0  # postToolUse fires after a tool succeeded
        output = payload.get("tool_output")
        out.stdout_tail = clean(output)[-200:] if isinstance(output, str) else ""
        return out
    message = text_of(payload.get("error_message"))
    out.error = message.strip() if message else None
    kind = payload.get("failure_type")
    if payload.get("is_interrupt") is True:
        out.outcome = "interrupted"
    elif kind == "permission_denied":
        out.outcome = "denied"
    else:
        match = _EXIT.search(message or "")
        out.outcome, out.exit = "failed", int(match.group(1)) if match else None
    return out
