"""Codex CLI sessions: ``<codex_dir>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``.

Each line is ``{"timestamp", "type", "payload"}``. The first, ``session_meta``, carries the
session's ``id``, ``cwd`` and ``git`` facts; ``response_item`` lines carry what the model saw and
said: ``message`` items with role ``user`` (``input_text`` blocks) or ``assistant``
(``output_text``), and tool calls, their outputs and reasoning, which are left out.
``event_msg`` repeats the messages for the terminal UI, ``turn_context`` holds a turn's
settings and ``compacted`` a summary: all passed over. Codex writes its own context (the
environment, AGENTS.md) as user messages too; those are not questions.

Shell commands: a ``function_call`` named ``shell`` whose ``arguments`` (a JSON string) hold
``command`` (an argv; ``["bash", "-lc", script]`` is the script) and ``workdir``, answered by
the ``function_call_output`` of the same ``call_id``, whose ``output`` is a JSON string of
``output`` and ``metadata.exit_code`` (as Codex CLI 0.46 writes them: openai/codex
``codex-rs/core/src/tools``; tests/fixtures/transcripts). A call with no output read is left
out: it was still running, or the session stopped.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
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
    text_blocks,
    text_of,
)

__all__ = ["codex_files", "parse_codex"]

_OTHER = frozenset({"event_msg", "turn_context", "compacted"})
MAX_CALLS = 100_000  # shell calls awaiting their output, at most
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def codex_files(codex_dir: Path) -> list[Path]:
    """Every rollout file under ``sessions/`` (whichever repository it belongs to)."""
    try:
        return [p for p in (codex_dir / "sessions").rglob("rollout-*.jsonl") if p.is_file()]
    except OSError:
        return []


def parse_codex(path: str, ours: Callable[[str], bool]) -> Transcript:
    """The exchanges of one rollout. Reading stops once ``session_meta`` places the session
    outside the repository (``ours`` says); a rollout with no cwd is not ours either."""
    found = _ID.search(Path(path).stem)
    transcript = Transcript("codex", path, session=found.group(0) if found else Path(path).stem)
    calls: dict[str, Command] = {}
    for record in read_records(path):
        if record is None:
            transcript.skipped += 1
            continue
        kind, payload = record.get("type"), record.get("payload")
        if kind not in ("session_meta", "response_item"):
            if not isinstance(kind, str) or kind not in _OTHER:
                transcript.skipped += 1
            continue
        if not isinstance(payload, dict):
            transcript.skipped += 1
            continue
        if kind == "session_meta":
            if _meta(transcript, payload, ours) and not transcript.ours:
                return transcript
            continue
        ts = parse_ts(record.get("timestamp"))
        if payload.get("type") == "function_call" and len(calls) < MAX_CALLS:
            if (ran := _shell_call(payload, transcript.cwd, ts)) is not None:
                calls[ran.call] = ran
        elif payload.get("type") == "function_call_output" and (
            ran := calls.pop(str(payload.get("call_id")), None)
        ):
            _ended(ran, payload.get("output"), ts)
            transcript.commands.append(ran)
        if payload.get("type") != "message":
            continue  # a tool call, its output, reasoning
        role, content = payload.get("role"), payload.get("content")
        texts = text_blocks(content, "input_text" if role == "user" else "output_text")
        if not all(map(storable, texts)):
            transcript.skipped += 1
        elif role == "user" and (text := human_text("\n\n".join(texts))):
            transcript.exchanges.append(Exchange(text, ts))
        elif role == "assistant":
            for text in texts:
                transcript.reply(text, ts)
    return transcript


def _shell_call(payload: dict[str, Any], cwd: str | None, ts: int | None) -> Command | None:
    call = text_of(payload.get("call_id"))
    if payload.get("name") != "shell" or not call:
        return None
    try:
        args = json.loads(payload.get("arguments") or "")
    except (TypeError, ValueError, RecursionError):
        return None
    argv = args.get("command") if isinstance(args, dict) else None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return None
    script = len(argv) == 3 and argv[0] in ("bash", "sh", "zsh") and argv[1] in ("-lc", "-c")
    command = argv[2] if script else shlex.join(argv)
    workdir = text_of(args.get("workdir"))
    if not storable(command) or not command.strip():
        return None
    return Command(call=call, command=command, cwd=workdir or cwd, ts=ts)


def _ended(ran: Command, output: object, ts: int | None) -> None:
    """How a shell call ended, from its output: the exit code and what it printed."""
    ran.ts = ts if ts is not None else ran.ts
    try:
        result = json.loads(output) if isinstance(output, str) else None
    except (ValueError, RecursionError):
        result = None
    if not isinstance(result, dict):
        ran.error = text_of(output) or None
        return  # no exit code given: how it ended is not known
    metadata = result.get("metadata")
    code = metadata.get("exit_code") if isinstance(metadata, dict) else None
    ran.exit = code if isinstance(code, int) and not isinstance(code, bool) else None
    printed = text_of(result.get("output"))
    ran.error = printed if ran.exit != 0 and printed else None


def _meta(transcript: Transcript, payload: dict[str, Any], ours: Callable[[str], bool]) -> bool:
    """Take the session's facts from the first ``session_meta``; True when it placed it."""
    if transcript.cwd is not None:
        return False  # a later one (a forked session's parent) changes nothing
    session, cwd, git = text_of(payload.get("id")), text_of(payload.get("cwd")), payload.get("git")
    if session:
        transcript.session = session
    if isinstance(git, dict) and (branch := text_of(git.get("branch"))):
        transcript.git_branch = branch
    if cwd is None:
        return False
    transcript.cwd, transcript.ours = cwd, ours(cwd)
    return True
