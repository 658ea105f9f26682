"""Gemini CLI (https://geminicli.com/docs/hooks/reference).

Hooks live under ``hooks`` in ``~/.gemini/settings.json`` or ``.gemini/settings.json``.
Every event brings ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
``timestamp``:

* ``SessionStart``: ``source`` (startup | resume | clear).
* ``BeforeTool``: ``tool_name``, ``tool_input`` (for ``run_shell_command``: ``command``,
  ``dir_path``, ``is_background``).
* ``AfterTool``: the same plus ``tool_response`` = ``{llmContent, returnDisplay, error?}``.
  The shell tool's ``llmContent`` reads ``Output: ...``, then ``Error: ...``, ``Exit Code:
  N`` (only when non-zero) and ``Signal: ...`` lines; a cancelled command says "Command was
  cancelled", a backgrounded one "Command moved to background". Edits are ``replace`` and
  ``write_file`` (``tool_input.file_path``). There is no tool call id.

Context reaches the model as ``hookSpecificOutput.additionalContext`` of ``AfterTool``
(appended to the tool's result) and ``SessionStart``; ``BeforeTool`` can rewrite or deny a
call but not add context. Stdout must be JSON or nothing. Time limit: ``timeout`` per hook
in milliseconds (60000 when omitted).
"""

from __future__ import annotations

import json
import os
import re

from ..payload import AgentEvent, Dropped, begin, clean, text_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CONTEXT", "LABEL", "NOTES", "answer", "parse"]

LABEL = "Gemini CLI"
CONTEXT = (
    "BeforeTool cannot add context: notes come after a failed command and at session start, "
    "not before a repeat"
)
NOTES = frozenset({"PostToolUseFailure", "SessionStart"})
SHELL = "run_shell_command"
EDIT_TOOLS = ("replace", "write_file")
_EVENTS = {"BeforeTool": "PreToolUse", "AfterTool": "PostToolUse", "SessionStart": "SessionStart"}

_EXIT = re.compile(r"^Exit Code: (-?\d{1,5})\s*$", re.M)
_SIGNAL = re.compile(r"^Signal: \S", re.M)
_TRAILER = re.compile(r"^(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.M)
_WRAP = r"^(?:<untrusted_context>\s*)?"  # newer releases fence the content in this tag
_BACKGROUND = re.compile(_WRAP + r"Command (?:moved to|is running in) background")
_CANCELLED = re.compile(_WRAP + r"Command was cancelled by user")
_TIMEOUT = re.compile(_WRAP + r"Command was automatically cancelled")
_DENIED = re.compile(r"\b(?:denied|blocked|rejected)\b", re.IGNORECASE)


def parse(payload: dict[str, Any]) -> AgentEvent | Dropped | None:
    """The event in one Gemini CLI payload."""
    out = begin("gemini", payload, _EVENTS)
    if not isinstance(out, AgentEvent):
        return out
    if out.native == "SessionStart":
        out.source = text_of(payload.get("source"))
        return out
    tool, tool_input = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        return Dropped("malformed")
    out.tool = tool
    response = payload.get("tool_response")
    response = response if isinstance(response, dict) else {}
    if tool in EDIT_TOOLS:
        path = tool_input.get("file_path")
        if out.native != "AfterTool" or response.get("error"):
            return None  # a failed edit changed nothing
        if not isinstance(path, str) or not path:
            return Dropped("malformed")
        out.paths, out.outcome = [clean(path)], "ok"
        return out
    if tool != SHELL:
        return None
    command = tool_input.get("command")
    if not isinstance(command, str):
        return Dropped("malformed")
    if not command.strip():
        return None
    out.command = clean(command)
    where = tool_input.get("dir_path")
    if isinstance(where, str) and where and "\x00" not in where:
        out.cwd = os.path.join(out.cwd, clean(where))  # relative to the project, or absolute
    if out.native == "AfterTool":
        _ended(out, tool_input, response)
    return out


def answer(event: AgentEvent, note: str) -> str | None:
    """The note as ``additionalContext`` of ``AfterTool`` or ``SessionStart``."""
    if event.event not in NOTES:
        return None
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event.native, "additionalContext": note}}
    )


def _content(response: dict[str, Any]) -> str:
    """``llmContent`` as text: a string, or a list of parts with ``text``."""
    content = response.get("llmContent")
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        content = "\n".join(p for p in parts if isinstance(p, str))
    return clean(content).strip() if isinstance(content, str) else ""


def _output(text: str) -> str:
    """What the command printed: after ``Output:``, before the lines Gemini adds."""
    body = text.replace("</untrusted_context>", "").split("Output: ", 1)[-1]
    trailer = _TRAILER.search(body)
    return (body[: trailer.start()] if trailer else body).rstrip()


def _ended(out: AgentEvent, tool_input: dict[str, Any], response: dict[str, Any]) -> None:
    text = _content(response)
    error = response.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    message = clean(message) if isinstance(message, str) else None
    if tool_input.get("is_background") is True or _BACKGROUND.match(text):
        out.outcome = "background"
        return
    if _CANCELLED.match(text):
        out.outcome = "interrupted"
        return
    match = _EXIT.search(text)
    if match:
        out.outcome, out.exit = "failed", int(match.group(1))
    elif message or _SIGNAL.search(text) or _TIMEOUT.match(text):
        out.outcome = "denied" if message and _DENIED.search(message) else "failed"
    else:
        out.outcome, out.exit = "ok", 0  # no exit code line: Gemini prints it only when non-zero
        out.stdout_tail = _output(text)[-200:]
        return
    if out.outcome == "failed":
        out.event = "PostToolUseFailure"
        # What the command printed, without the fence and the lines Gemini adds around it.
        out.error = (message or _output(text) or text).strip() or None
