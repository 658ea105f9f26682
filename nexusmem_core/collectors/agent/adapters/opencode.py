"""opencode (https://opencode.ai/docs/plugins).

opencode has no hook commands: a plugin (``nexusmem.js`` in ``~/.config/opencode/plugins/``
or a project's ``.opencode/plugins/``, written by ``agent install``) runs inside it and pipes
one JSON object per call of a shell or edit tool to ``<python> -S -P hook.py opencode``,
waiting at most 5 s. The object mirrors the plugin API's ``tool.execute.before(input,
output)`` and ``tool.execute.after(input, output)``::

    {
      "hook_event_name": "tool.execute.before" | "tool.execute.after",
      "session_id": "ses_...",          // input.sessionID
      "call_id": "call_...",            // input.callID
      "tool": "bash" | "edit" | "write" | "patch" | "multiedit",   // input.tool
      "cwd": "/abs/dir",                // the plugin's ``directory``
      "args": {"command": "npm test", "workdir": "web"},   // output.args of before
      "output": "...",                  // after: output.output
      "metadata": {"exit": 1}           // after: output.metadata (bash: exit, output)
    }

``"session.created"`` (from the plugin's ``event`` hook) is read as a session start. Edits
name their file in ``args.filePath`` (``patch``: the ``*** Add/Update/Delete File:`` lines of
``args.patchText``). The answer is ``{"note": "<text>"}``; the plugin appends it to the
call's ``output.output``, the one text of a plugin the model sees. So a note before a repeat
reaches the model with that run's output, and there is none at session start: a plugin
cannot add to the prompt there. Time limit: the plugin's own, 5 s.
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

LABEL = "opencode"
CONTEXT = (
    "a plugin can only add text to a tool's output: a note comes with the command's output, "
    "none at session start"
)
NOTES = frozenset({"PreToolUse", "PostToolUseFailure"})
SHELL = "bash"
EDIT_TOOLS = ("edit", "write", "multiedit")
PATCH_TOOLS = ("patch", "apply_patch")
_EVENTS = {
    "tool.execute.before": "PreToolUse",
    "tool.execute.after": "PostToolUse",
    "session.created": "SessionStart",
}
_PATCHED = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)
_TIMEOUT = re.compile(r"terminated command after exceeding timeout", re.IGNORECASE)
_ABORTED = re.compile(r"\baborted\b", re.IGNORECASE)


def parse(payload: dict[str, Any]) -> AgentEvent | Dropped | None:
    """The event in one object from the NexusMem opencode plugin."""
    out = begin("opencode", payload, _EVENTS)
    if not isinstance(out, AgentEvent):
        return out
    if out.native == "session.created":
        out.source = "startup"
        return out
    tool, args = payload.get("tool"), payload.get("args")
    if not isinstance(tool, str) or not isinstance(args, dict):
        return Dropped("malformed")
    out.tool, out.tool_use_id = tool, text_of(payload.get("call_id"))
    if tool in EDIT_TOOLS or tool in PATCH_TOOLS:
        return _edit(out, tool, args)
    if tool != SHELL:
        return None
    command = args.get("command")
    if not isinstance(command, str):
        return Dropped("malformed")
    if not command.strip():
        return None
    out.command = clean(command)
    where = args.get("workdir")
    if isinstance(where, str) and where and "\x00" not in where:
        out.cwd = os.path.join(out.cwd, clean(where))
    if out.native == "tool.execute.after":
        _ended(out, payload)
    return out


def answer(event: AgentEvent, note: str) -> str | None:
    """``{"note": note}``, for the plugin to append to the call's output."""
    if event.event not in NOTES:
        return None
    return json.dumps({"note": note})


def _ended(out: AgentEvent, payload: dict[str, Any]) -> None:
    metadata = payload.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    text = payload.get("output")
    text = clean(text) if isinstance(text, str) else ""
    code = metadata.get("exit")
    out.stdout_tail = text[-200:]
    if isinstance(code, int) and not isinstance(code, bool):
        out.exit = code
        out.outcome = "ok" if code == 0 else "failed"
    elif _TIMEOUT.search(text[-2000:]):
        out.outcome = "failed"  # killed at its timeout: ran and failed, code unknown
    elif _ABORTED.search(text[-2000:]):
        out.outcome = "interrupted"
    else:
        out.outcome = "unknown"
    if out.outcome == "failed":
        out.event = "PostToolUseFailure"
        out.error = text.strip() or None


def _edit(out: AgentEvent, tool: str, args: dict[str, Any]) -> AgentEvent | Dropped | None:
    if out.native != "tool.execute.after":
        return None
    if tool in PATCH_TOOLS:
        patch = args.get("patchText")
        paths = _PATCHED.findall(patch) if isinstance(patch, str) else []
    else:
        path = args.get("filePath")
        if not isinstance(path, str) or not path:
            return Dropped("malformed")
        paths = [path]
    out.paths, out.outcome = [clean(p) for p in paths], "ok"
    return out if out.paths else None
