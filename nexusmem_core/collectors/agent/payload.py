"""Coding-agent hook payloads, read into one small shape.

Each agent hands its hook a JSON object on stdin in its own format; ``adapters/<agent>.py``
reads it into an :class:`AgentEvent` whose ``event`` is one of four canonical names
(``EVENTS``): before a shell command, after one that passed (or an edit), after one that
failed, and at session start. The agent's own name for the event stays in ``native``, for
the answer. Nothing is ever invented: a failure whose exit code the agent did not give is
"failed, code unknown".

Standard library only: this runs on every tool call the agent makes.
"""

from __future__ import annotations

import json
import re
from collections import namedtuple

from . import AGENTS

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~3 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "EVENTS",
    "MAX_ERROR",
    "MAX_PAYLOAD",
    "AgentEvent",
    "Dropped",
    "Normalized",
    "adapter",
    "begin",
    "clean",
    "error_excerpt",
    "event_for",
    "normalize",
    "normalize_command",
    "parse",
    "status_from_output",
    "text_of",
]

MAX_PAYLOAD = 1024 * 1024  # a tool input larger than this is not a command worth keeping
EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure", "SessionStart")
MAX_ERROR = 300  # characters of a failure's message kept (after redaction)


class AgentEvent:
    """One hook call. A plain class: ``dataclasses`` alone would cost each call 17 ms."""

    def __init__(self, event: str, session: str, cwd: str, agent: str = "claude") -> None:
        self.event, self.session, self.cwd, self.agent = event, session, cwd, agent
        self.native = event  # the agent's own name for this event, for its answer
        self.tool: str | None = None
        self.tool_use_id: str | None = None
        self.command: str | None = None  # shell commands only, as the agent wrote it
        self.paths: list[str] = []  # edit tools only
        self.outcome: str | None = None  # ok | failed | interrupted | background | denied | unknown
        self.exit: int | None = None
        self.error: str | None = None
        self.source: str | None = None  # SessionStart: startup | resume | clear | compact
        self.stdout_tail = ""  # the end of a command's output (read, never stored)

    def __repr__(self) -> str:
        return f"AgentEvent({self.__dict__!r})"


class Dropped(namedtuple("Dropped", "reason")):
    """A payload the hook will not use, and why (counted, never printed)."""

    __slots__ = ()
    reason: str


def adapter(agent: str) -> Any:
    """The module that reads ``agent``'s payloads: only that one is imported."""
    if agent not in AGENTS:
        raise ValueError(f"unknown coding agent {agent!r}: one of {', '.join(AGENTS)}")
    # __import__, not importlib: the hook pays for every module it loads.
    return __import__(f"{__package__}.adapters.{agent}", fromlist=["parse"])


def parse(data: bytes, agent: str = "claude") -> AgentEvent | Dropped | None:
    """The event in ``data`` as ``agent`` sent it; ``Dropped`` for a payload that is broken;
    None for one that is fine but not ours (another tool, an event we do not use)."""
    if len(data) > MAX_PAYLOAD:
        return Dropped("oversize")
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):  # RecursionError: nested a thousand deep
        return Dropped("malformed")
    if not isinstance(payload, dict):
        return Dropped("malformed")
    event: AgentEvent | Dropped | None = adapter(agent).parse(payload)
    return event


def event_for(
    agent: str, event: str, native: str, session: object, cwd: object
) -> AgentEvent | Dropped:
    """A new event, or ``Dropped`` when the payload names no usable working directory."""
    if not isinstance(cwd, str) or not cwd or "\x00" in cwd:
        return Dropped("malformed")
    out = AgentEvent(event, clean(session) if isinstance(session, str) else "", clean(cwd), agent)
    out.native = native
    return out


def begin(
    agent: str,
    payload: dict[str, Any],
    events: dict[str, str],
    session: object = None,
    cwd: object = None,
) -> AgentEvent | Dropped | None:
    """The event ``payload`` names, begun (:func:`event_for`): ``events`` maps the agent's own
    event names onto the canonical ones. None for an event that is not ours; ``Dropped`` for a
    payload that names no event, or no usable working directory. ``session`` and ``cwd``, when
    the agent keeps them elsewhere, else its ``session_id`` and ``cwd``."""
    name = payload.get("hook_event_name")
    if not isinstance(name, str):
        return Dropped("malformed")
    canonical = events.get(name, "")
    session = payload.get("session_id") if session is None else session
    out = event_for(agent, canonical, name, session, payload.get("cwd") if cwd is None else cwd)
    if isinstance(out, Dropped) or not canonical:
        return out if isinstance(out, Dropped) else None
    return out


def text_of(value: object) -> str | None:
    """A non-empty string field, cleaned; None for anything else."""
    return clean(value) if isinstance(value, str) and value else None


def error_excerpt(text: str, limit: int = MAX_ERROR) -> str:
    """What a failure's (redacted) message keeps: its first line (``Exit code N``) and its
    end, where a failing command says why (the assertion, the compiler's error, the last line
    of a traceback). The head alone kept a test runner's banner and progress dots."""
    if len(text) <= limit:
        return text
    first, _, rest = text.partition("\n")
    if not rest.strip():  # one long line: its start and its end
        return f"{text[: limit // 2 - 1]}…{text[-(limit // 2) :]}"
    first = first[: limit // 4]
    return f"{first}\n…\n{rest[-(limit - len(first) - 3) :].lstrip()}"


def clean(text: str) -> str:
    """``text`` as UTF-8 can hold it. JSON may carry a lone surrogate (an agent's strings may
    be UTF-16: one cut inside an emoji), which no log line or database can store."""
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
