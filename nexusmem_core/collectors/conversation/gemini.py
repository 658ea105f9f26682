"""Gemini CLI sessions: ``<gemini_dir>/tmp/<project>/chats/session-<time>-<id>.jsonl``.

Where (google-gemini/gemini-cli, ``packages/core/src/config/storage.ts`` and
``projectRegistry.ts``; docs/cli/chat-recording.md): ``<project>`` is a short name Gemini CLI
gives the directory it was started in, recorded in ``<gemini_dir>/projects.json``
(``{"projects": {"/abs/path": "name"}}``) and in a ``.project_root`` file inside the folder;
versions before that named it the SHA-256 of the path, hex (the folders are moved to the short
name when a newer version first runs there). ``<gemini_dir>`` is ``~/.gemini``, or
``$GEMINI_CLI_HOME/.gemini``. A session started in a subdirectory has a folder of its own; a
subagent's file sits in a folder under ``chats/`` and is not a conversation with a person.

What (``packages/core/src/services/chatRecordingService.ts``, ``chatRecordingTypes.ts``): one
JSON record a line. The first carries ``sessionId`` and ``projectHash``; each message record
has ``id``, ``timestamp``, ``type`` (``user``, ``gemini``, or ``info``/``error``/``warning``
the terminal showed) and ``content`` (a string or ``[{"text": ...}]`` parts); a ``gemini``
message's ``toolCalls`` hold ``name``, ``args``, ``status`` (``success``, ``error``,
``cancelled``), ``result`` (the function response parts) and ``timestamp``. A message is
written again whole when it changes (last one wins); ``{"$rewindTo": id}`` drops that message
and everything after it; ``{"$set": {...}}`` updates the metadata, and with ``messages``
replaces them all. Older versions wrote one pretty-printed ``session-*.json`` object holding
``messages``: read whole when it is at most ``MAX_JSON_FILE``.

Shell commands are the ``run_shell_command`` calls (``packages/core/src/tools/shell.ts``):
``args.command``, ``args.dir_path``; the result's text says ``Exit Code: N`` when the command
exited non-zero, ``Error: ...`` when it could not run, and that it was cancelled or moved to
the background.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from .transcript import (
    Command,
    Exchange,
    Transcript,
    human_text,
    parse_ts,
    read_records,
    storable,
    text_of,
)

__all__ = ["MAX_JSON_FILE", "gemini_files", "parse_gemini"]

MAX_JSON_FILE = 32 * 1024 * 1024  # an older whole-object session file; larger is skipped
MAX_PROJECTS = 10_000  # folders under tmp/ looked at
MAX_REGISTRY = 4 * 1024 * 1024
MAX_RESULT_CHARS = 256 * 1024  # of a tool result's text, its end: shell.ts keeps 50 KB of output
SHELL_TOOL = "run_shell_command"
_MARKER = ".project_root"
_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.MULTILINE)
_UNTRUSTED = re.compile(r"</?untrusted_context>")
_BOOKKEEPING = re.compile(
    r"^(?:Exit Code: -?\d+|Signal: \S+|Background PIDs: [\d, ]*|Process Group PGID: \d+)$\n?",
    re.MULTILINE,
)


def _hash(path: str) -> str:
    return hashlib.sha256(path.encode("utf-8", "surrogatepass")).hexdigest()


def _registry(gemini_dir: Path) -> dict[str, str]:
    """projects.json as {folder name: project path}; empty when absent or unreadable."""
    try:
        with open(gemini_dir / "projects.json", "rb") as handle:
            raw = handle.read(MAX_REGISTRY + 1)
        data = json.loads(raw) if len(raw) <= MAX_REGISTRY else None
    except (OSError, ValueError, RecursionError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {name: path for path, name in projects.items() if isinstance(name, str)}


def _marker(folder: str) -> str | None:
    """The project path a folder's ``.project_root`` names."""
    try:
        with open(os.path.join(folder, _MARKER), "rb") as handle:
            text = handle.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return None
    return text or None


def gemini_files(gemini_dir: Path, roots: Iterable[str]) -> list[tuple[Path, str]]:
    """Each session file of a project folder whose directory is one of ``roots`` or beneath
    it, with that directory. A missing or unreadable folder gives nothing."""
    roots = list(roots)
    owners = _registry(gemini_dir)
    for path in [*roots, *owners.values()]:
        owners.setdefault(_hash(path), path)
    try:
        entries = list(os.scandir(gemini_dir / "tmp"))[:MAX_PROJECTS]
    except OSError:
        return []
    found: list[tuple[Path, str]] = []
    for entry in entries:
        owner = _marker(entry.path) or owners.get(entry.name)
        if owner is None or not _beneath(owner, roots):
            continue
        try:
            chats = list(os.scandir(Path(entry.path, "chats")))
        except OSError:
            continue
        found += [(Path(f.path), owner) for f in chats if _session_file(f)]
    return found


def _beneath(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _session_file(entry: os.DirEntry[str]) -> bool:
    """A main session's file (a subagent's is in a folder of its own, left out)."""
    name = entry.name
    try:
        return (
            name.startswith("session-") and name.endswith((".json", ".jsonl")) and entry.is_file()
        )
    except OSError:
        return False


def parse_gemini(path: str, cwd: str, ours: Callable[[str], bool]) -> Transcript:
    """The exchanges and shell commands of one session file of the project at ``cwd``."""
    transcript = Transcript("gemini", path, session=Path(path).stem, cwd=cwd, ours=ours(cwd))
    if not transcript.ours:
        return transcript
    messages = _Messages()
    for record in _records(path):
        if record is None or not messages.take(record, transcript):
            transcript.skipped += 1
    for message in messages.ordered():
        _message(transcript, message)
    return transcript


def _records(path: str) -> Iterator[dict[str, Any] | None]:
    """A ``.jsonl`` file's records line by line; an older ``.json`` file's one object, read
    whole when small enough (None for one too large or not JSON: one skip)."""
    if path.endswith(".jsonl"):
        yield from read_records(path)
        return
    with open(path, "rb") as handle:
        data = handle.read(MAX_JSON_FILE + 1)
    if len(data) > MAX_JSON_FILE:
        yield None  # too large to read whole: one file passed over
        return
    try:
        record = json.loads(data)
    except (ValueError, RecursionError):
        yield None
        return
    yield record if isinstance(record, dict) else None


class _Messages:
    """The session's messages as the last records leave them: a message written again replaces
    itself in place, a rewind drops a message and all after it. Each message is added and
    dropped at most once per record that carries it, so the cost stays linear."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.at: dict[str, int] = {}
        self.records: dict[str, dict[str, Any]] = {}

    def take(self, record: dict[str, Any], transcript: Transcript) -> bool:
        """Apply one record; False for one of no known shape."""
        if isinstance(record.get("$rewindTo"), str):
            self._rewind(record["$rewindTo"])
        elif isinstance(record.get("$set"), dict):
            update = record["$set"]
            if isinstance(update.get("messages"), list):
                self.order, self.at, self.records = [], {}, {}
                self._add_all(update["messages"])
        elif isinstance(record.get("id"), str):
            self._add(record)
        elif isinstance(record.get("sessionId"), str):
            if session := text_of(record["sessionId"]):
                transcript.session = session
            if isinstance(record.get("messages"), list):  # an older whole-object file
                self._add_all(record["messages"])
        else:
            return False
        return True

    def _add_all(self, messages: list[Any]) -> None:
        for message in messages:
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                self._add(message)

    def _add(self, message: dict[str, Any]) -> None:
        key = message["id"]
        if key not in self.at:
            self.at[key] = len(self.order)
            self.order.append(key)
        self.records[key] = message

    def _rewind(self, key: str) -> None:
        cut = self.at.get(key, 0)  # an unknown id: Gemini CLI clears them all
        for dropped in self.order[cut:]:
            del self.at[dropped], self.records[dropped]
        del self.order[cut:]

    def ordered(self) -> Iterator[dict[str, Any]]:
        return (self.records[key] for key in self.order)


def _message(transcript: Transcript, message: dict[str, Any]) -> None:
    kind, ts = message.get("type"), parse_ts(message.get("timestamp"))
    if kind == "user":
        shown = message.get("displayContent")  # what was typed, before @file expansion
        texts = _texts(shown if shown is not None else message.get("content"))
        if not all(map(storable, texts)):
            transcript.skipped += 1
        elif text := human_text("\n\n".join(texts)):
            transcript.exchanges.append(Exchange(text, ts))
    elif kind == "gemini":
        texts = _texts(message.get("content"))
        if not all(map(storable, texts)):
            transcript.skipped += 1
        else:
            for text in texts:
                transcript.reply(text, ts)
        calls = message.get("toolCalls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict) and call.get("name") == SHELL_TOOL:
                _shell(transcript, call, ts)
    elif kind not in ("info", "error", "warning"):
        transcript.skipped += 1


def _texts(content: object) -> list[str]:
    """A ``PartListUnion``'s texts: a string, a part, or a list of either."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return []
    return [
        part if isinstance(part, str) else part["text"]
        for part in content
        if isinstance(part, str) or (isinstance(part, dict) and isinstance(part.get("text"), str))
    ]


def _shell(transcript: Transcript, call: dict[str, Any], ts: int | None) -> None:
    args = call.get("args")
    command = text_of(args.get("command")) if isinstance(args, dict) else None
    if not command or not command.strip():
        transcript.skipped += 1
        return
    directory = text_of(args.get("dir_path")) if isinstance(args, dict) else None
    cwd = os.path.normpath(os.path.join(transcript.cwd or "", directory or ""))
    status, result = call.get("status"), _result_text(call.get("result"))
    ran = Command(
        call=text_of(call.get("id")) or str(len(transcript.commands)),
        command=command,
        cwd=cwd,
        ts=parse_ts(call.get("timestamp")) or ts,
        error=_printed(result) or None,
    )
    if status == "cancelled" or "cancelled by user" in result:
        ran.outcome = "interrupted"
    elif "moved to background" in result or "running in background" in result:
        ran.outcome = "background"
    elif status == "error":
        ran.outcome = "failed"
        ran.exit = _exit_code(result)
    elif status == "success":
        ran.exit = _exit_code(result) or 0
        ran.error = ran.error if ran.exit else None
    else:
        return  # still running or waiting for approval when the file was last written
    transcript.commands.append(ran)


def _exit_code(text: str) -> int | None:
    """The status shell.ts appends after the output (the last such line: the output may print
    one of its own)."""
    found = _EXIT.findall(text)
    return int(found[-1]) if found else None


def _printed(result: str) -> str:
    """What the command printed and the error, without shell.ts's own labels and numbers."""
    if result.startswith("Output: "):
        result = result[len("Output: ") :]
    return _BOOKKEEPING.sub("", result).strip()


def _result_text(result: object) -> str:
    """The text of a tool call's function response: ``output``, then ``error``."""
    found: list[str] = []
    for part in result if isinstance(result, list) else [result]:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        answer = response.get("response") if isinstance(response, dict) else None
        if isinstance(answer, dict):
            found += [answer[k] for k in ("output", "error") if isinstance(answer.get(k), str)]
    text = "\n".join(found)
    if len(text) > MAX_RESULT_CHARS:
        # The end says why it failed; the cut lands on a line end, so no secret is halved.
        text = text[-MAX_RESULT_CHARS:]
        text = text[text.find("\n") + 1 :]
    return _UNTRUSTED.sub("", text).strip() if storable(text) else ""
