"""Codex CLI (https://developers.openai.com/codex/hooks).

Hooks live in ``~/.codex/hooks.json`` or ``<repo>/.codex/hooks.json`` (or ``[hooks]`` in
``config.toml``); older releases need ``[features] codex_hooks = true`` (now ``hooks``, on by
default). Every event brings ``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``model``, ``permission_mode``:

* ``SessionStart``: ``source`` (startup | resume | clear | compact).
* ``PreToolUse`` (``Bash``): ``turn_id``, ``tool_name``, ``tool_use_id``,
  ``tool_input.command``.
* ``PostToolUse`` (``Bash``, ``apply_patch``): the same plus ``tool_response``. It fires
  whether or not the command passed. For Bash the response is the output as text; the shell
  tool opens it with ``Exit code: N`` (the unified exec tool says ``Process exited with code
  N``), the only exit code a hook sees. Without either the outcome is "unknown", never
  guessed. ``apply_patch``'s ``tool_input.command`` is the patch; its ``*** Add/Update/
  Delete File:`` lines name the files edited.

Context reaches the model as ``hookSpecificOutput.additionalContext`` (``hookEventName``
the event's own name) of ``PreToolUse``, ``PostToolUse`` and ``SessionStart``. Time limit:
``timeout`` per hook in seconds (600 when omitted).
"""

from __future__ import annotations

import json
import re

from ..payload import AgentEvent, Dropped, begin, clean, text_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["CONTEXT", "LABEL", "NOTES", "answer", "parse"]

LABEL = "Codex CLI"
CONTEXT = None
NOTES = frozenset({"PreToolUse", "PostToolUseFailure", "SessionStart"})

# The shell tool's response opens with its exit code; the unified exec tool states it on a
# line of its header. Only there: a command's own output may print anything.
# PostToolUse is made PostToolUseFailure once the command is read as failed.
_EVENTS = {"PreToolUse": "PreToolUse", "PostToolUse": "PostToolUse", "SessionStart": "SessionStart"}
_EXIT = re.compile(r"\A\s*Exit code:\s*(-?\d{1,5})\b")
_EXITED = re.compile(r"^Process exited with code (-?\d{1,5})\b", re.M)
_PATCHED = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


def parse(payload: dict[str, Any]) -> AgentEvent | Dropped | None:
    """The event in one Codex payload."""
    out = begin("codex", payload, _EVENTS)
    if not isinstance(out, AgentEvent):
        return out
    if out.native == "SessionStart":
        out.source = text_of(payload.get("source"))
        return out
    tool, tool_input = payload.get("tool_name"), payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        return Dropped("malformed")
    out.tool, out.tool_use_id = tool, text_of(payload.get("tool_use_id"))
    if tool == "apply_patch":
        return _patch(out, tool_input, payload.get("tool_response"))
    if tool != "Bash":
        return None  # MCP tools are not ours
    command = tool_input.get("command")
    if not isinstance(command, str):
        return Dropped("malformed")
    if not command.strip():
        return None
    out.command = clean(command)
    if out.native == "PostToolUse":
        _ended(out, payload.get("tool_response"))
    return out


def answer(event: AgentEvent, note: str) -> str | None:
    """The note as ``additionalContext`` under Codex's own name for the event."""
    if event.event not in NOTES:
        return None
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event.native, "additionalContext": note}}
    )


def _response_text(response: Any) -> tuple[str, int | None]:
    """The output text and an exit code given as a field, if the response is an object."""
    if isinstance(response, str):
        return clean(response), None
    if not isinstance(response, dict):
        return "", None
    code = next((response[k] for k in ("exit_code", "exitCode") if k in response), None)
    text = next((response[k] for k in ("output", "stdout") if k in response), "")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    return (clean(text) if isinstance(text, str) else ""), code


def _exit_code(response: Any) -> tuple[str, int | None]:
    text, code = _response_text(response)
    if code is None:
        match = _EXIT.match(text) or _EXITED.search(text[:1024])
        if match:
            code = int(match.group(1))
    return text, code


def _ended(out: AgentEvent, response: Any) -> None:
    text, code = _exit_code(response)
    out.exit = code
    out.stdout_tail = text[-200:]
    if code is None:
        out.outcome = "unknown"  # Codex said nothing of how it ended
    elif code == 0:
        out.outcome = "ok"
    else:
        out.outcome, out.event = "failed", "PostToolUseFailure"
        out.error = text.strip() or None  # whole: runner.py redacts, then keeps an excerpt


def _patch(out: AgentEvent, tool_input: dict[str, Any], response: Any) -> AgentEvent | None:
    patch = next((tool_input[k] for k in ("command", "patch", "input") if k in tool_input), None)
    if out.native != "PostToolUse" or not isinstance(patch, str):
        return None
    if _exit_code(response)[1] not in (0, None):
        return None  # a patch that did not apply changed nothing
    out.paths = [clean(p) for p in _PATCHED.findall(patch)]
    out.outcome = "ok"
    return out if out.paths else None
