"""opencode sessions: the ``session``, ``message`` and ``part`` tables of
``<data dir>/opencode/opencode.db`` (``$XDG_DATA_HOME``, else ``~/.local/share``).

Since v1.2.0 (February 2026) opencode keeps its sessions in that one SQLite database, and moved
the JSON files it wrote before (``storage/{session,message,part}/...``) into it on upgrade
(anomalyco/opencode, ``packages/opencode/src/session/session.sql.ts`` and
``src/storage/json-migration.ts``; release notes of v1.2.0). Those older files are not read.

``session`` has ``id``, ``directory`` (where opencode ran), ``time_updated`` (epoch
milliseconds); ``message`` has ``id``, ``session_id``, ``time_created`` and ``data``, a JSON
object whose ``role`` is ``user`` or ``assistant``; ``part`` has ``message_id``,
``session_id`` and ``data`` (``src/session/message-v2.ts``): ``{"type": "text", "text",
"synthetic"?, "ignored"?}`` or ``{"type": "tool", "tool", "callID", "state"}``, reasoning,
files, steps and patches beside them. The ``bash`` tool's state (``src/tool/bash.ts``) is
``completed`` with ``input.command``, ``output`` and ``metadata.exit`` (null when it was
killed), or ``error`` with the ``error`` text (a refused permission among them).

The database is opened read-only, and each session is read by itself: a sync lists the
sessions run inside the repository and reads those whose parts changed. A subagent's session
(``parent_id`` set) gives its commands, not its turns: the main agent wrote its prompts.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .transcript import Command, Exchange, Transcript, human_text, storable, text_of

__all__ = ["MAX_DATA", "Listed", "opencode_db", "opencode_sessions", "parse_opencode"]

MAX_DATA = 4 * 1024 * 1024  # a row's JSON; a longer one is skipped and counted
MAX_SESSIONS = 100_000  # listed, most recently updated first
MAX_ROWS = 200_000  # messages, and parts, read of one session
BASH_TOOL = "bash"
_SEPARATOR = "#"  # between the database and the session, in the path a session is known by


@dataclass(frozen=True)
class Listed:
    """A session of the repository, as the database has it now."""

    key: str  # ``<database>#<session id>``
    session: str
    directory: str
    parts: int
    updated_ms: int


def opencode_db(data_dir: Path) -> Path:
    return data_dir / "opencode" / "opencode.db"


def _connect(db: Path) -> sqlite3.Connection:
    # Read-only, never created: opencode owns the file, and may be writing it (WAL).
    return sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5)


def opencode_sessions(db: Path, ours: Callable[[str], bool]) -> list[Listed]:
    """The sessions whose directory lies in the repository, each with its count of parts and
    its last change. No database gives nothing; one that cannot be read raises
    ``sqlite3.Error``."""
    if not db.is_file():
        return []
    with closing(_connect(db)) as con:
        rows = con.execute(
            "select id, directory, time_updated from session order by time_updated desc limit ?",
            (MAX_SESSIONS,),
        ).fetchall()
        found = []
        for session, directory, updated in rows:
            if not (isinstance(session, str) and isinstance(directory, str)):
                continue
            if not (storable(session) and storable(directory) and ours(directory)):
                continue
            parts, changed = con.execute(
                "select count(*), max(time_updated) from part where session_id = ?", (session,)
            ).fetchone()
            last = max(_ms(updated), _ms(changed))
            found.append(Listed(f"{db}{_SEPARATOR}{session}", session, directory, parts, last))
    return found


def _ms(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def parse_opencode(key: str, directory: str, ours: Callable[[str], bool]) -> Transcript:
    """The exchanges and shell commands of the session ``key`` names (``<db>#<session>``)."""
    db, _, session = key.rpartition(_SEPARATOR)
    transcript = Transcript("opencode", key, session=session, cwd=directory, ours=ours(directory))
    if not transcript.ours:
        return transcript
    try:
        child, messages, parts = _rows(Path(db), session)
    except sqlite3.Error as err:
        raise OSError(f"opencode database: {err}") from None
    for message_id, created, data in messages:
        info = _json(data)
        if info is None:
            transcript.skipped += 1
            continue
        role, ts = info.get("role"), _seconds(created)
        kept = [p for p in (_json(d) for d in parts.get(message_id, [])) if p is not None]
        transcript.skipped += len(parts.get(message_id, [])) - len(kept)
        if role == "user":
            _question(transcript, kept, ts)
        elif role == "assistant":
            _answer(transcript, kept, ts)
        else:
            transcript.skipped += 1
    if child:  # a subagent's session: its prompts came from the main agent, not a person
        transcript.exchanges = []
    return transcript


def _rows(db: Path, session: str) -> tuple[bool, list[tuple[Any, ...]], dict[str, list[Any]]]:
    """Whether the session is a subagent's, its messages in order, and its parts by message;
    an oversize row's data comes back as None."""
    with closing(_connect(db)) as con:
        parent = con.execute("select parent_id from session where id = ?", (session,)).fetchone()
        messages = con.execute(
            "select id, time_created, case when length(data) > ? then null else data end "
            "from message where session_id = ? order by time_created, id limit ?",
            (MAX_DATA, session, MAX_ROWS),
        ).fetchall()
        parts: dict[str, list[Any]] = {}
        for message_id, data in con.execute(
            "select message_id, case when length(data) > ? then null else data end "
            "from part where session_id = ? order by message_id, id limit ?",
            (MAX_DATA, session, MAX_ROWS),
        ):
            parts.setdefault(message_id, []).append(data)
    return bool(parent and parent[0]), messages, parts


def _json(data: object) -> dict[str, Any] | None:
    if not isinstance(data, str | bytes):
        return None
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _seconds(ms: object) -> int | None:
    return int(ms) // 1000 if isinstance(ms, int | float) and 0 <= ms < 2**43 else None


def _texts(parts: list[dict[str, Any]]) -> list[str]:
    """The text parts a person or the model wrote: opencode's own (``synthetic``: a file it
    attached, a reminder) and ``ignored`` ones left out."""
    return [
        p["text"]
        for p in parts
        if p.get("type") == "text"
        and isinstance(p.get("text"), str)
        and not p.get("synthetic")
        and not p.get("ignored")
    ]


def _question(transcript: Transcript, parts: list[dict[str, Any]], ts: int | None) -> None:
    texts = _texts(parts)
    if not all(map(storable, texts)):
        transcript.skipped += 1
    elif text := human_text("\n\n".join(texts)):
        transcript.exchanges.append(Exchange(text, ts))


def _answer(transcript: Transcript, parts: list[dict[str, Any]], ts: int | None) -> None:
    for part in parts:
        kind = part.get("type")
        if kind == "text" and not part.get("synthetic"):
            text = part.get("text")
            if isinstance(text, str) and storable(text):
                transcript.reply(text, ts)
            else:
                transcript.skipped += 1
        elif kind == "tool" and part.get("tool") == BASH_TOOL:
            _bash(transcript, part, ts)


def _bash(transcript: Transcript, part: dict[str, Any], ts: int | None) -> None:
    state = part.get("state")
    if not isinstance(state, dict) or state.get("status") not in ("completed", "error"):
        return  # pending or running when the session was last written
    given = _object(state.get("input"))
    command = text_of(given.get("command"))
    if not command or not command.strip():
        transcript.skipped += 1
        return
    times = _object(state.get("time"))
    ran = Command(
        call=text_of(part.get("callID")) or str(len(transcript.commands)),
        command=command,
        cwd=text_of(given.get("workdir")) or transcript.cwd,
        ts=_seconds(times.get("end")) or _seconds(times.get("start")) or ts,
    )
    if state["status"] == "error":
        error = text_of(state.get("error")) or ""
        ran.outcome = "denied" if "rejected permission" in error else "failed"
        ran.error = error or None
    else:
        metadata = _object(state.get("metadata"))
        output = text_of(state.get("output")) or text_of(metadata.get("output")) or ""
        code = metadata.get("exit")
        ran.exit = code if isinstance(code, int) and not isinstance(code, bool) else None
        if ran.exit is None:
            ran.outcome = "interrupted" if "(Command was aborted)" in output else "failed"
        ran.error = output if ran.exit != 0 and output else None
    transcript.commands.append(ran)
