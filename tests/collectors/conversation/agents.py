"""Gemini CLI and opencode session fixtures, installed where those agents keep them, with
their working directory moved to a test's repository.

``fixtures/gemini-session-*.jsonl`` follows Gemini CLI's chat recording
(google-gemini/gemini-cli ``packages/core/src/services/chatRecordingService.ts`` and
``chatRecordingTypes.ts``; the shell tool's result text from ``src/tools/shell.ts``): a
metadata line, messages written again when they change, a rewind, a ``$set``, a broken line
and a record of a kind this reader does not know. ``fixtures/opencode-rows.json`` holds the
rows of opencode's ``session``, ``message`` and ``part`` tables (anomalyco/opencode
``packages/opencode/src/session/session.sql.ts``, ``message-v2.ts``, ``src/tool/bash.ts``),
written into a database of that schema by :func:`install_opencode`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from .transcripts import RECORDED_CWD

FIXTURES = Path(__file__).resolve().parent / "fixtures"
GEMINI_FIXTURE = FIXTURES / "gemini-session-2026-02-03T10-15-8c1e2f4a.jsonl"
GEMINI_SESSION = "8c1e2f4a-3b5d-4e6f-9a7b-1c2d3e4f5a6b"
OPENCODE_FIXTURE = FIXTURES / "opencode-rows.json"
OPENCODE_SESSION = "ses_3f2a9c1d5ffeQ8Rk2mVb7NcX1a"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def gemini_dir(home: Path) -> Path:
    return home / ".gemini"


def install_gemini(
    home: Path, cwd: Path, *, slug: str = "project", text: str | None = None, legacy: bool = False
) -> Path:
    """A Gemini CLI session started in ``cwd``: in the short-named project folder with its
    ``.project_root`` marker and registry entry, or (``legacy``) in the folder named by the
    SHA-256 of the path as older versions wrote it, as one JSON object."""
    body = (GEMINI_FIXTURE.read_text() if text is None else text).replace(RECORDED_CWD, str(cwd))
    base = gemini_dir(home)
    if legacy:
        folder = base / "tmp" / hashlib.sha256(str(cwd).encode()).hexdigest()
        target = folder / "chats" / "session-2025-11-20T09-00-1a2b3c4d.json"
    else:
        folder = base / "tmp" / slug
        target = folder / "chats" / GEMINI_FIXTURE.name.removeprefix("gemini-")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ".project_root").write_text(str(cwd))
        registry = base / "projects.json"
        projects = json.loads(registry.read_text())["projects"] if registry.exists() else {}
        registry.write_text(json.dumps({"projects": {**projects, str(cwd): slug}}, indent=2))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body)
    return target


def legacy_gemini_text() -> str:
    """The fixture's messages as the single pretty-printed object older versions wrote."""
    records = [json.loads(line) for line in GEMINI_FIXTURE.read_text().splitlines()[:5]]
    meta = records[0]
    messages = [r for r in records[1:] if isinstance(r, dict) and "id" in r]
    return json.dumps({**meta, "messages": messages}, indent=2)


_SCHEMA = """
create table session (id text primary key, project_id text not null, workspace_id text,
  parent_id text, slug text not null, directory text not null, path text, title text not null,
  version text not null, time_created integer not null, time_updated integer not null);
create table message (id text primary key, session_id text not null,
  time_created integer not null, time_updated integer not null, data text not null);
create table part (id text primary key, message_id text not null, session_id text not null,
  time_created integer not null, time_updated integer not null, data text not null);
create index part_session_idx on part (session_id);
"""


def opencode_rows(cwd: Path) -> dict[str, list[dict[str, object]]]:
    return json.loads(OPENCODE_FIXTURE.read_text().replace(RECORDED_CWD, str(cwd)))


def install_opencode(
    data_home: Path, cwd: Path, rows: dict[str, list[dict[str, object]]] | None = None
) -> Path:
    """opencode's database holding the fixture's sessions, one of them run in ``cwd``."""
    db = data_home / "opencode" / "opencode.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as con:
        con.executescript(_SCHEMA)
        for table, records in (rows or opencode_rows(cwd)).items():
            for record in records:
                values = {k: json.dumps(v) if k == "data" else v for k, v in record.items()}
                names = ", ".join(values)
                marks = ", ".join("?" * len(values))
                con.execute(
                    f"insert into {table} ({names}) values ({marks})", list(values.values())
                )
    con.close()
    return db
