"""Claude Code hook payloads, read into one small shape.

Claude Code hands each hook a JSON object on stdin: ``hook_event_name``, ``session_id``,
``cwd``, and for tool events ``tool_name``, ``tool_input``, ``tool_use_id``, plus
``tool_response`` after a success or ``error`` / ``is_interrupt`` after a failure. A failure
carries no exit code field; Bash's error text starts with ``Exit code N`` when the command ran
and exited non-zero, and that is the only code taken from it. Nothing is ever invented: a
failure without that line is "failed, code unknown".

Standard library only: this runs on every tool call the agent makes.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~3 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "EDIT_TOOLS",
    "EVENTS",
    "MAX_ERROR",
    "MAX_PAYLOAD",
    "AgentEvent",
    "Dropped",
    "Normalized",
    "error_excerpt",
    "normalize",
    "normalize_command",
    "parse",
    "status_from_output",
]

MAX_PAYLOAD = 1024 * 1024  # a tool input larger than this is not a command worth keeping
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "SessionStart")
EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path"}
EDIT_TOOLS_NOTEBOOK = {"NotebookEdit": "notebook_path"}
MAX_ERROR = 300  # characters of a failure's message kept (after redaction)

_EXIT = re.compile(r"^\s*(?:Error:\s*)?Exit code:?\s*(-?\d{1,5})\b")
_DENIED = re.compile(
    r"doesn't want to proceed|permission (?:to use \w+ )?(?:was )?denied|"
    r"blocked by (?:a |the )?\w*\s*hook|user (?:rejected|declined|denied)",
    re.IGNORECASE,
)


class AgentEvent:
    """One hook call. A plain class: ``dataclasses`` alone would cost each call 17 ms."""

    def __init__(self, event: str, session: str, cwd: str) -> None:
        self.event, self.session, self.cwd = event, session, cwd
        self.tool: str | None = None
        self.tool_use_id: str | None = None
        self.command: str | None = None  # Bash only, as the agent wrote it
        self.paths: list[str] = []  # edit tools only
        self.outcome: str | None = None  # ok | failed | interrupted | background
        self.exit: int | None = None
        self.error: str | None = None
        self.source: str | None = None  # SessionStart: startup | resume | clear | compact
        self.stdout_tail = ""  # the end of a Bash command's output (read, never stored)

    def __repr__(self) -> str:
        return f"AgentEvent({self.__dict__!r})"


class Dropped(namedtuple("Dropped", "reason")):
    """A payload the hook will not use, and why (counted, never printed)."""

    __slots__ = ()
    reason: str


def parse(data: bytes) -> AgentEvent | Dropped | None:
    """The event in ``data``; ``Dropped`` for a payload that is broken; None for one that is
    fine but not ours (another tool, an event we did not subscribe to)."""
    if len(data) > MAX_PAYLOAD:
        return Dropped("oversize")
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nested a thousand deep
        return Dropped("malformed")
    if not isinstance(payload, dict):
        return Dropped("malformed")
    event = payload.get("hook_event_name")
    session = payload.get("session_id")
    cwd = payload.get("cwd")
    if not isinstance(event, str) or not isinstance(cwd, str) or not cwd or "\x00" in cwd:
        return Dropped("malformed")
    if event not in EVENTS:
        return None
    out = AgentEvent(event, _clean(session) if isinstance(session, str) else "", _clean(cwd))
    if event == "SessionStart":
        source = payload.get("source")
        out.source = source if isinstance(source, str) else None
        return out
    return _tool_event(out, payload)


def _tool_event(out: AgentEvent, payload: dict[str, Any]) -> AgentEvent | Dropped | None:
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if not isinstance(tool, str) or not isinstance(tool_input, dict):
        return Dropped("malformed")
    out.tool = tool
    use_id = payload.get("tool_use_id")
    out.tool_use_id = _clean(use_id) if isinstance(use_id, str) and use_id else None
    if tool == "Bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            return Dropped("malformed")
        if not command.strip():
            return None
        out.command = _clean(command)
        if out.event == "PostToolUse":
            _success(out, tool_input, payload.get("tool_response"))
        elif out.event == "PostToolUseFailure":
            _failure(out, payload)
        return out
    key = EDIT_TOOLS.get(tool) or EDIT_TOOLS_NOTEBOOK.get(tool)
    if key is None or out.event != "PostToolUse":
        return None  # a failed edit changed nothing; other tools are not ours
    path = tool_input.get(key)
    if not isinstance(path, str) or not path:
        return Dropped("malformed")
    out.paths = [_clean(path)]
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
            return
    # PostToolUse fires for a Bash command that succeeded, i.e. exited 0.
    out.outcome, out.exit = "ok", 0
    stdout = response.get("stdout")
    out.stdout_tail = stdout[-200:] if isinstance(stdout, str) else ""


def _failure(out: AgentEvent, payload: dict[str, Any]) -> None:
    found = payload.get("error", payload.get("error_message"))
    error = _clean(found) if isinstance(found, str) else ""
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


def error_excerpt(text: str, limit: int = MAX_ERROR) -> str:
    """What a failure's (redacted) message keeps: its first line, Bash's ``Exit code N``, and
    its end, where a failing command says why (the assertion, the compiler's error, the last
    line of a traceback). The head alone kept a test runner's banner and progress dots."""
    if len(text) <= limit:
        return text
    first, _, rest = text.partition("\n")
    if not rest.strip():  # one long line: its start and its end
        return f"{text[: limit // 2 - 1]}…{text[-(limit // 2) :]}"
    first = first[: limit // 4]
    return f"{first}\n…\n{rest[-(limit - len(first) - 3) :].lstrip()}"


def _clean(text: str) -> str:
    """``text`` as UTF-8 can hold it. JSON may carry a lone surrogate (Claude Code's strings
    are UTF-16: one cut inside an emoji), which no log line or database can store."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


_CD = re.compile(r"""^\s*cd\s+(?:"([^"]+)"|'([^']+)'|([^\s;&|]+))\s*(?:&&|;)\s*""")
# Both start at a literal, not at whitespace: a pattern led by `\s*` is tried from every
# position of a run of spaces, each try scanning the rest of it (20k spaces took 14 s). The
# whitespace before the match is stripped in code.
_ECHO_STATUS = re.compile(
    r"""(?:;|&&|\|\|)\s*echo\s+(?:"[^"]*\$\?[^"]*"|'[^']*'|[^;&|]*\$\?[^;&|]*)\s*$"""
)
_TRAILING_REDIRECT = re.compile(r"(?<=\s)2>&1\s*$")


class Normalized(namedtuple("Normalized", "text hid_status")):
    __slots__ = ()
    text: str
    hid_status: bool  # a `; echo $?` was stripped: the tool's status is echo's, not the command's


def normalize(command: str, cwd: str) -> Normalized:
    """The command as the same intent is always written: a leading ``cd`` into the directory
    it already runs in, a trailing ``; echo $?`` and a trailing ``2>&1`` are wrappers an
    agent adds, not part of what it runs."""
    text, hid = command.strip(), False
    for _ in range(3):  # wrappers can nest: `cd x && make 2>&1; echo $?`
        before = text
        match = _CD.match(text)
        if match and _same_dir(next(group for group in match.groups() if group), cwd):
            text = text[match.end() :]
        stripped = _cut(_ECHO_STATUS, text)
        hid, text = hid or stripped != text, stripped
        text = _cut(_TRAILING_REDIRECT, text).strip()
        if text == before:
            break
    return Normalized(text, hid) if text else Normalized(command.strip(), False)


def _cut(wrapper: re.Pattern[str], text: str) -> str:
    """``text`` without the trailing ``wrapper`` and the whitespace before it."""
    match = wrapper.search(text)
    return text[: match.start()].rstrip() if match else text


def _same_dir(target: str, cwd: str) -> bool:
    import os

    try:
        target = os.path.expanduser(target)  # `~user` looks the user up: NUL raises there
    except ValueError:
        return False
    return os.path.normpath(os.path.join(cwd, target)) == os.path.normpath(cwd)


def normalize_command(command: str, cwd: str) -> str:
    """:func:`normalize`'s text."""
    return normalize(command, cwd).text


_LAST_NUMBER = re.compile(r"(-?\d{1,3})\s*$")


def status_from_output(tail: str) -> int | None:
    """The exit status a stripped ``echo $?`` printed: the number ending the output."""
    match = _LAST_NUMBER.search(tail)
    return int(match.group(1)) if match else None
