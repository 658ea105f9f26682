"""Claude Code (https://code.claude.com/docs/en/hooks).

Every event brings ``hook_event_name``, ``session_id``, ``cwd``; tool events add
``tool_name``, ``tool_input``, ``tool_use_id``, plus ``tool_response`` after a success or
``error`` / ``is_interrupt`` after a failure (``PostToolUseFailure``). A failure carries no
exit code field: Bash's error text starts with ``Exit code N`` when the command ran and
exited non-zero, and that is the only code taken from it. Context reaches the model as
``hookSpecificOutput.additionalContext`` of ``PreToolUse``, ``PostToolUseFailure`` and
``SessionStart``. Time limit: the ``timeout`` of each hook, in seconds (install writes 5 and
10).
"""

from __future__ import annotations

import json
import re

from ..payload import AgentEvent, Dropped, begin, clean, text_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CONTEXT", "LABEL", "NOTES", "answer", "parse"]

LABEL = "Claude Code"
CONTEXT = None
NOTES = frozenset({"PreToolUse", "PostToolUseFailure", "SessionStart"})
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "SessionStart")
_CANONICAL = {event: event for event in EVENTS}  # Claude Code's names are the canonical ones
EDIT_TOOLS = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}

_EXIT = re.compile(r"^\s*(?:Error:\s*)?Exit code:?\s*(-?\d{1,5})\b")
_DENIED = re.compile(
    r"doesn't want to proceed|permission (?:to use \w+ )?(?:was )?denied|"
    r"blocked by (?:a |the )?\w*\s*hook|user (?:rejected|declined|denied)",
    re.IGNORECASE,
)


def parse(payload: dict[str, Any]) -> AgentEvent | Dropped | None:
    """The event in one Claude Code payload."""
    out = begin("claude", payload, _CANONICAL)
    if not isinstance(out, AgentEvent):
        return out
    if out.native == "SessionStart":
        source = payload.get("source")
        out.source = source if isinstance(source, str) else None
        return out
    return _tool_event(out, payload)


def answer(event: AgentEvent, note: str) -> str | None:
    """The note as ``additionalContext`` of the event that asked."""
    if event.event not in NOTES:
        return None
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event.native, "additionalContext": note}}
    )


def _tool_event(out: AgentEvent, payload: dict[str, Any]) -> AgentEvent | Dropped | None:
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        return Dropped("malformed")
    out.tool = tool
    out.tool_use_id = text_of(payload.get("tool_use_id"))
    if tool == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return Dropped("malformed")
        if not command.strip():
            return None
        out.command = clean(command)
        if out.event == "PostToolUse":
            _success(out, tool_input, payload.get("tool_response"))
        elif out.event == "PostToolUseFailure":
            _failure(out, payload)
        return out
    key = EDIT_TOOLS.get(tool)
    if key is None or out.event != "PostToolUse":
        return None  # a failed edit changed nothing; other tools are not ours
    path = tool_input.get(key)
    if not isinstance(path, str) or not path:
        return Dropped("malformed")
    out.paths = [clean(path)]
    out.outcome = "ok"
    return out


def _success(out: AgentEvent, tool_input: dict[str, Any], response: Any) -> None:
    response = response if isinstance(response, dict) else {}
    if tool_input.get("run_in_background") is True or response.get("backgroundTaskId"):
        out.outcome = "background"  # still running: how it ends is not known here
        return
    if response.get("interrupted") is True:
        out.outcome = "interrupted"
        return
    for key in ("exit_code", "exitCode", "returnCode"):
        code = response.get(key)
        if isinstance(code, int) and not isinstance(code, bool):
            out.exit = code
            out.outcome = "ok" if code == 0 else "failed"
            stderr = response.get("stderr")
            if code and isinstance(stderr, str) and stderr.strip():
                out.error = clean(stderr).strip()  # why it failed: kept as a failure's message
            return
    # PostToolUse fires for a Bash command that succeeded, i.e. exited 0.
    out.outcome, out.exit = "ok", 0
    stdout = response.get("stdout")
    out.stdout_tail = stdout[-200:] if isinstance(stdout, str) else ""


def _failure(out: AgentEvent, payload: dict[str, Any]) -> None:
    found = payload.get("error", payload.get("error_message"))
    error = clean(found) if isinstance(found, str) else ""
    # Whole (the payload is bounded by MAX_PAYLOAD): a cut before redaction can halve a secret
    # so that no pattern knows it. runner.py redacts, then keeps ``error_excerpt``.
    out.error = error.strip() or None
    if payload.get("is_interrupt") is True:
        out.outcome = "interrupted"
        return
    match = _EXIT.match(error)
    if match:
        out.outcome, out.exit = "failed", int(match.group(1))
    elif _DENIED.search(error):
        out.outcome = "denied"  # never ran: the user or a hook said no
    else:
        out.outcome = "failed"  # ran and failed, code unknown (a timeout, a crash)
