"""What both transcript formats are parsed into, and the defensive line reader they share.

A transcript is another program's file, often still being written while it is read: a line may
be torn, huge (a pasted screenshot, a whole file a tool read), or of a kind a newer version
added. None of that may stop a sync, so the reader yields what parses and the parsers count what
they pass over.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..shell.hooklog import storable

__all__ = [
    "MAX_LINE",
    "Command",
    "Exchange",
    "Transcript",
    "human_text",
    "parse_ts",
    "read_records",
    "storable",
    "text_blocks",
    "text_of",
]

# A longer line is skipped and counted: it is a base64 image or a tool's whole output, never
# the words of a question, and reading it whole would let one line hold the sync's memory.
MAX_LINE = 4 * 1024 * 1024


@dataclass
class Exchange:
    """A person's question and the assistant's text reply to it (tool calls left out)."""

    question: str
    asked: int | None = None
    parts: list[str] = field(default_factory=list)  # the reply's text blocks, in order
    answered: int | None = None  # when the reply's last text block was written

    @property
    def answer(self) -> str:
        return "\n\n".join(p.strip() for p in self.parts if p.strip())


@dataclass
class Command:
    """A shell command the agent ran and how it ended, as its session file tells it (raw: it
    is redacted when it becomes a node). ``outcome`` is ``failed``, ``interrupted``,
    ``denied`` or ``background``; None when ``exit`` says it all."""

    call: str  # the tool call's id, unique within the session
    command: str
    cwd: str | None
    ts: int | None
    exit: int | None = None
    outcome: str | None = None
    error: str | None = None  # what it printed or the error the agent got, raw


@dataclass
class Transcript:
    """One transcript file, parsed. ``ours`` says whether its working directory lies in the
    repository; a file that is not ours is read only as far as it takes to tell."""

    agent: str  # "claude", "codex", "gemini" or "opencode"
    path: str
    session: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)  # read where the format keeps them
    skipped: int = 0  # broken lines and unknown records passed over
    ours: bool = False

    def reply(self, text: str, ts: int | None) -> None:
        """Add an assistant text block to the open exchange (text before any question, as after
        a context compaction, answers nothing that was asked here)."""
        if self.exchanges and text.strip():
            last = self.exchanges[-1]
            last.parts.append(text)
            last.answered = ts if ts is not None else last.answered


def read_records(path: str) -> Iterator[dict[str, Any] | None]:
    """Each complete line's JSON object, or None for a line that is not one (broken, oversize,
    not an object). A torn last line (no newline and no JSON yet) is still being written: it is
    left for the next sync, not counted. An unreadable file raises OSError."""
    with open(path, "rb") as handle:
        while line := handle.readline(MAX_LINE + 1):
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # skip to the end of the oversize line
                    line = handle.readline(MAX_LINE)
                yield None
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):  # RecursionError: nested a thousand deep
                if line.endswith(b"\n"):
                    yield None
                continue
            yield record if isinstance(record, dict) else None


def parse_ts(value: object) -> int | None:
    """An ISO 8601 timestamp as unix seconds; None for anything else."""
    if not isinstance(value, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    seconds = moment.timestamp()
    return int(seconds) if 0 <= seconds < 2**33 else None


# Messages in the person's role that the harness wrote: context blocks (Codex's
# <environment_context>, Claude Code's <command-name> and <local-command-stdout>), reminders,
# instructions files and interruption notices. None of them is a question. Each block is an
# atomic group: without it, a text of many blocks that fails to match at its end backtracks
# through every way of grouping them, twice as long for each block more.
_WRAPPED = re.compile(r"\s*(?>(?:<([A-Za-z][\w-]*)(?:\s[^>]*)?>.*?</\1>\s*))+", re.DOTALL)
_REMINDER = ("<system-reminder>", "</system-reminder>")
_HARNESS = (
    "# AGENTS.md instructions",
    "[Request interrupted by user",
    "Caveat: The messages below were generated by the user",
)


def human_text(text: str) -> str:
    """The part of a user-role message a person typed; empty when the harness wrote it all."""
    text = _without_reminders(text).strip()
    if not text or text.startswith(_HARNESS):
        return ""
    if text.startswith("<") and text.endswith(">") and _WRAPPED.fullmatch(text):
        return ""
    return text


def text_of(value: object) -> str | None:
    """``value`` when it is text that can be stored, else None."""
    return value if isinstance(value, str) and storable(value) else None


def _without_reminders(text: str) -> str:
    """``text`` less its ``<system-reminder>`` blocks (found with ``find``: a regex would scan
    to the end once for every opening tag that is never closed)."""
    opening, closing = _REMINDER
    kept: list[str] = []
    at = 0
    while (start := text.find(opening, at)) != -1:
        end = text.find(closing, start)
        if end == -1:
            break
        kept.append(text[at:start])
        at = end + len(closing)
    return "".join(kept) + text[at:] if kept else text


def text_blocks(content: object, kind: str) -> list[str]:
    """The texts of a message's content: a string, or a list of ``{"type": kind, "text": ...}``
    blocks among others (tool calls, results, images, thinking), which are left out."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == kind
        and isinstance(block.get("text"), str)
    ]
