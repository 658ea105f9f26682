"""Claude Code transcripts: ``<claude_dir>/projects/<slug>/<session id>.jsonl``.

The directory is named after the session's working directory with every character outside
``[A-Za-z0-9]`` replaced by ``-``, runs not collapsed (``/home/me/my_app`` is
``-home-me-my-app``), as Claude Code itself names it. A session started in a subdirectory or a
linked worktree has its own directory; those are found by the slug's prefix and then kept only
when the ``cwd`` their records carry is inside the repository, since ``/home/me/my-app-old``
shares the prefix.

Each line is a record: ``user`` and ``assistant`` records hold a ``message`` whose ``content``
is a string or a list of blocks (``text``, ``tool_use``, ``tool_result``, ``thinking``,
``image``), with ``timestamp``, ``sessionId``, ``cwd``, ``gitBranch``, ``uuid`` and
``parentUuid``; ``summary``, ``system`` and a few bookkeeping records sit beside them. A user
record holding tool results is the harness handing a tool's output back, not a question;
``isSidechain`` records are a subagent talking to the main agent; ``isMeta`` and
``isCompactSummary`` ones were written by Claude Code, not typed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .transcript import (
    Exchange,
    Transcript,
    human_text,
    parse_ts,
    read_records,
    storable,
    text_blocks,
    text_of,
)

__all__ = ["claude_files", "claude_slug", "parse_claude"]

# Records that are not part of the conversation and are passed over without being counted.
_OTHER = frozenset({"summary", "system", "file-history-snapshot", "queue-operation", "progress"})


def claude_slug(path: str) -> str:
    """The name Claude Code gives the transcript directory of sessions started in ``path``."""
    return re.sub(r"[^A-Za-z0-9]", "-", path.rstrip("/") or "/")


def claude_files(claude_dir: Path, roots: Iterable[str]) -> list[Path]:
    """The transcripts in every project directory named after one of ``roots`` or a path
    beneath it. Subagents' transcripts (a ``subagents/`` folder) are not conversations with a
    person and are left out; a missing or unreadable directory gives nothing."""
    slugs = {claude_slug(root) for root in roots}
    found: list[Path] = []
    try:
        entries = list(os.scandir(claude_dir / "projects"))
    except OSError:
        return []
    for entry in entries:
        if not any(entry.name == s or entry.name.startswith(s + "-") for s in slugs):
            continue
        try:
            if entry.is_dir():
                found += [Path(f.path) for f in os.scandir(entry.path) if _transcript(f)]
        except OSError:
            continue
    return found


def _transcript(entry: os.DirEntry[str]) -> bool:
    return entry.name.endswith(".jsonl") and entry.is_file()


def parse_claude(path: str, ours: Callable[[str], bool]) -> Transcript:
    """The exchanges of one Claude Code transcript. Reading stops at the first record whose
    ``cwd`` is outside the repository (``ours`` says): the file belongs to another one."""
    transcript = Transcript("claude", path, session=Path(path).stem)
    seen: set[str] = set()
    for record in read_records(path):
        if record is None:
            transcript.skipped += 1
            continue
        kind = record.get("type")
        if kind not in ("user", "assistant"):
            if not isinstance(kind, str) or kind not in _OTHER:
                transcript.skipped += 1
            continue
        cwd = text_of(record.get("cwd"))
        if transcript.cwd is None and cwd is not None:
            transcript.cwd, transcript.ours = cwd, ours(cwd)
            if not transcript.ours:
                return transcript
        if record.get("isSidechain") or record.get("isMeta") or record.get("isCompactSummary"):
            continue
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:  # the same record written twice (a resumed session)
                continue
            seen.add(uuid)
        message = record.get("message")
        if not isinstance(message, dict):
            transcript.skipped += 1
            continue
        content = message.get("content")
        texts = text_blocks(content, "text")
        if not all(map(storable, texts)):
            transcript.skipped += 1
            continue
        ts = parse_ts(record.get("timestamp"))
        if kind == "assistant":
            for text in texts:
                transcript.reply(text, ts)
        elif not _tool_results(content) and (text := human_text("\n\n".join(texts))):
            transcript.exchanges.append(Exchange(text, ts))
            branch = text_of(record.get("gitBranch"))
            if transcript.git_branch is None and branch:
                transcript.git_branch = branch
    return transcript


def _tool_results(content: Any) -> bool:
    """A user record holding tool results is a tool's output handed back, not a question (an
    interruption note may ride along with it)."""
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )
