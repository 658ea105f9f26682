"""What the coding-agent hook does with each event, whichever agent sent it.

``hook.py <agent>`` reads the payload with that agent's adapter (``adapters/<agent>.py``)
into one of four canonical events, and answers in that agent's own format:

* ``PostToolUse`` / ``PostToolUseFailure`` of a shell command: append the command (redacted), its
  outcome, and the files edited since the session's last command to the agent log; after a
  failure, recall what the memory knows about that command.
* ``PostToolUse`` of an edit tool: remember the path (never the content) for the next command.
* ``PreToolUse`` of a shell command: if this exact command failed here before, one short note.
* ``SessionStart``: start a background ``sync --auto`` and give a digest of recent failures.

Each note or digest that reaches the agent is also appended to ``AGENT_NOTES`` (redacted), which
sync reads into what the agents were told (``told.py``).

Notes are rationed (one per command and five per session) and silence is the default. The
hook never blocks a tool, never prints on capture, and exits 0: a broken NexusMem must
look exactly like no NexusMem. The one exception is a log it cannot write (a full disk, a
read-only home): every command would be lost unseen, so it says so in one line, exit 1 (the
agents show that to the user and carry on). Standard library plus our own light modules only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time

from ...paths import home_dir
from ..commands import is_predicate
from ..shell.hooklog import append, cannot_append, command_hash
from . import AGENT_NOTES, MAX_COMMAND, MAX_NOTE, recall
from .payload import (
    MAX_PAYLOAD,
    AgentEvent,
    Dropped,
    adapter,
    normalize,
    parse,
    status_from_output,
)
from .state import MAX_NOTES, count_drop, prune_sessions, session_state

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~3 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = ["handle", "main"]


def main(argv: list[str] | None = None) -> int:
    """Read one payload of the agent named in ``argv`` (Claude Code when none) from stdin,
    act on it, print at most one answer. Exit 0, but 1 with one line on stderr when the log
    cannot be written."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        data = sys.stdin.buffer.read(MAX_PAYLOAD + 1)
        answer = handle(data, home_dir(), time.time(), argv[0] if argv else "claude")
        if answer:
            sys.stdout.write(answer)
            sys.stdout.flush()
    except OSError as err:
        return cannot_append(err, os.path.join(home_dir(), recall.AGENT_LOG))
    except Exception:
        return 0
    return 0


def handle(data: bytes, home: str, now: float, agent: str = "claude") -> str | None:
    """The hook's whole behaviour for one payload of ``agent``: its stdout, or None for
    silence. An agent not in ``AGENTS`` raises ValueError (main() stays silent)."""
    event = parse(data, agent)
    if isinstance(event, Dropped):
        count_drop(home, event.reason)
        return None
    if event is None:
        return None
    found = recall.find_root(event.cwd, home)
    if found is None:
        return None  # NexusMem has not run in this repository: nothing to record or recall
    root, top = found
    if event.event == "SessionStart":
        return _session_start(event, root, top, home, now)
    if event.command is None:
        _remember_edit(event, top, home)  # paths as the repository names them
        return None
    # Whole: the payload is bounded already, and _capture redacts before it cuts.
    text, hid_status = normalize(event.command, event.cwd)
    digest = command_hash(home, text)
    if event.event != "PreToolUse":
        _settle_outcome(event, text, hid_status)
    notes = adapter(event.agent).NOTES  # where the agent cannot take a note, none is spent
    if event.event == "PreToolUse":
        if "PreToolUse" not in notes:
            return None
        note = _recall(event, (root, top), home, now, digest, exclude=None)
        told = {"root": root, "cmd_hash": digest, "raw": text}  # redacted only if told
        return _tell(event, note, home, now, told) if note else None
    record = _capture(event, home, now, text, digest)
    if record["outcome"] == "failed" and "PostToolUseFailure" in notes:
        note = _recall(event, (root, top), home, now, digest, exclude=record["id"])
        # Its command as the record keeps it: redacted and cut once.
        told = {"root": root, "cmd_hash": digest, "cmd": record["cmd"], "after": record["id"]}
        return _tell(event, note, home, now, told) if note else None
    return None


def _settle_outcome(event: AgentEvent, text: str, hid_status: bool) -> None:
    """What the run's outcome means once the wrappers are gone."""
    if hid_status and event.outcome == "ok":
        # `make; echo $?` exits 0 whatever make did: its status is the echoed number.
        code = status_from_output(event.stdout_tail)
        event.exit = code
        event.outcome = "unknown" if code is None else "ok" if code == 0 else "failed"
    if event.outcome == "failed" and event.exit == 1 and is_predicate(text):
        event.outcome = "false"  # grep found nothing, diff found a difference: an answer


def _relative(path: str, root: str, cwd: str) -> str | None:
    full = os.path.realpath(os.path.join(cwd, path))
    if full == root or not full.startswith(root.rstrip(os.sep) + os.sep):
        return None  # outside this repository: not part of its story
    return os.path.relpath(full, root).replace(os.sep, "/")


def _remember_edit(event: AgentEvent, root: str, home: str) -> None:
    paths = [p for p in (_relative(p, root, event.cwd) for p in event.paths) if p]
    if not paths:
        return
    with session_state(home, event.session) as state:
        state["edits"] = [p for p in state["edits"] if p not in paths] + paths


def _redacted(text: str, limit: int = MAX_COMMAND) -> tuple[str, int]:
    # Imported here: if the redaction table cannot load, nothing is written at all.
    from ...redact import redact_cut

    return redact_cut(text, limit)


def _capture(event: AgentEvent, home: str, now: float, text: str, digest: str) -> dict[str, Any]:
    with session_state(home, event.session) as state:
        edited, state["edits"] = state["edits"], []
    command, redactions = _redacted(text)
    error = sig = None
    if event.error:
        from .signature import failure_fields  # its patterns compile on a failure only

        error, sig = failure_fields(event.error, event.cwd, home)
    record = {
        "v": 1,
        "id": event.tool_use_id or os.urandom(12).hex(),
        "shell": event.agent,
        "agent": event.agent,
        "session": event.session[:64],
        "tool_use_id": event.tool_use_id,
        "cwd": os.path.realpath(event.cwd),  # as sync and recall compare it
        "cmd": command,
        "cmd_hash": digest,
        "outcome": event.outcome,
        "exit": event.exit,
        "error": error,
        "sig": sig,
        "edited": edited,
        "ts": round(now, 3),
        "redactions": redactions,
    }
    append(home, record, recall.AGENT_LOG)
    return record


def _answer(event: AgentEvent, context: str) -> str | None:
    """``context`` in the format of the agent that asked."""
    answer: str | None = adapter(event.agent).answer(event, context)
    return answer


def _tell(event: AgentEvent, note: str, home: str, now: float, told: dict[str, Any]) -> str | None:
    """``note`` as the agent's answer; once it is one, remembered in ``AGENT_NOTES``. What the
    agent is told never depends on that log: a failure to write it is swallowed."""
    answer = _answer(event, note)
    if answer:
        with contextlib.suppress(Exception):
            _remember_note(event, note, home, now, told)
    return answer


def _remember_note(
    event: AgentEvent, note: str, home: str, now: float, told: dict[str, Any]
) -> None:
    """One line for ``told.py``: who was told what, when, at which event, in which repository
    (``root``, as recall found it); a recall's command as ``_capture`` keeps it."""
    command = told.get("cmd")
    if command is None and told.get("raw") is not None:
        command = _redacted(told["raw"])[0]
    text, redactions = _redacted(note, MAX_NOTE)
    ts = round(now, 3)
    session = event.session[:64]
    fields = (told["root"], event.agent, session, event.event, repr(ts), told.get("cmd_hash"))
    key = "\0".join(field or "" for field in fields)
    record = {
        "v": 1,
        "id": hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32],
        "ts": ts,
        "agent": event.agent,
        "session": session,
        "event": event.event,
        "kind": "digest" if event.event == "SessionStart" else "recall",
        "root": told["root"],
        "cmd_hash": told.get("cmd_hash"),
        "cmd": command,
        "after": told.get("after"),
        "text": text,
        "redactions": redactions,
    }
    append(home, record, AGENT_NOTES)


def _recall(
    event: AgentEvent,
    where: tuple[str, str],
    home: str,
    now: float,
    digest: str,
    exclude: str | None,
) -> str | None:
    """The note on the command with this hash, once per command and within the session's
    ration, or None."""
    with session_state(home, event.session) as state:
        if state["notes"] >= MAX_NOTES or digest in state["noted"]:
            return None
        memory = recall.Memory(where[0], home, where[1])
        try:
            note = recall.note(memory, digest, event.cwd, now, exclude, state["noted"])
        finally:
            memory.close()
        if note is None:
            return None
        state["noted"][digest] = round(now)
        state["notes"] += 1
    return note


def _session_start(event: AgentEvent, root: str, top: str, home: str, now: float) -> str | None:
    prune_sessions(home, now)
    try:
        memory = recall.Memory(root, home, top)
        try:
            text = recall.digest(memory, now)
        finally:
            memory.close()
    finally:
        # Started last: its start-up (an interpreter and every import of a sync) would take
        # the core this hook's own reads run on, and the session waits for the hook.
        _background_sync(root)
    if not text:
        return None
    return _tell(event, text, home, now, {"root": root})


def _background_sync(root: str) -> None:
    """``nexusmem sync --auto --quiet`` in a process of its own: the session does not wait,
    and a sync already running (another session, a commit hook) makes this one a no-op."""
    top = os.path.realpath(__file__)
    for _ in range(4):
        top = os.path.dirname(top)
    cli = os.path.join(top, "cli.py")
    if not os.path.isfile(cli):
        return
    argv = [sys.executable, cli, "sync", "-C", root, "--auto", "--quiet"]
    if hasattr(os, "posix_spawn"):
        # posix_spawn, not subprocess: importing subprocess alone is 8 ms of this hook.
        devnull = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        os.posix_spawn(sys.executable, argv, os.environ, file_actions=devnull, setsid=True)
        return
    import subprocess

    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        creationflags=0x00000008 | 0x00000200,  # DETACHED_PROCESS, CREATE_NEW_PROCESS_GROUP
    )
