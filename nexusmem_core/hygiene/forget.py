"""``nexusmem forget``: delete every node that holds a value, and deny the value from then on.

A dry run (the default) counts what would go, by source. Applied, one transaction finds the
matching nodes (under the write lock, so no sync slips one in), tombstones and removes them
with their vectors and index entries (:mod:`.remove`), deletes the notes the agents were told
that hold it (``agent_notes``: not nodes, so no tombstone), adds the deny-list entry and an
audit row. Sync reads the deny list before it writes anything (:mod:`.deny`), so the value does
not come back from a rebuild or from the append-only hook logs, which keep the text they
recorded.

The deny list belongs to one checkout's ``.nexusmem/`` and does not travel with the
repository; ``--export`` and ``--import`` carry it to another checkout. An export holds the
salts: a salted hash of a short value can be brute-forced, so the file is as sensitive as the
values themselves.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..engine import Engine
from ..errors import CONFIRM, EXPORT, UsageError
from ..files import read_text, replace_file
from ..store import audit
from ..store.db import Database
from .deny import (
    DenyEntry,
    DenyFilter,
    is_same_literal,
    literal_entry,
    load_entries,
    normalize,
    note_pieces,
    regex_entry,
    row_pieces,
)
from .remove import Doomed, by_source, leaving_no_trace, remove_nodes

__all__ = [
    "ExportReport",
    "ForgetReport",
    "ImportReport",
    "export_entries",
    "forget",
    "import_entries",
    "list_entries",
]

FORMAT = "nexusmem-deny-list"
REGEX_WARNING = "a regex is kept in the deny list as given, in clear text (a literal is hashed)"
EXPORT_WARNING = (
    "{path} is as sensitive as the values it protects (a salted hash of a short value can be "
    "brute-forced): move it only over a channel you control, never commit it, delete it after"
)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_PAGE = 1000


def _found(matched: int, by_source: dict[str, int], notes: int = 0) -> str:
    """ "3 node(s): git 2, diff 1", "... and 1 agent note(s)", or "" when none matched."""
    counts = ", ".join(f"{source} {n}" for source, n in by_source.items())
    found = [f"{matched} node(s): {counts}"] if matched else []
    found += [f"{notes} agent note(s)"] if notes else []
    return " and ".join(found)


@dataclass
class ForgetReport:
    applied: bool
    kind: str  # literal or regex
    ignore_case: bool
    matched: int = 0  # nodes holding the value
    by_source: dict[str, int] = field(default_factory=dict)
    removed: int = 0
    agent_notes: int = 0  # notes the agents were told that hold it (deleted, when applied)
    on_list: bool = False  # the deny list already had this entry
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        found = _found(self.matched, self.by_source, self.agent_notes)
        if self.applied:
            first = f"forgot {found}" if found else "no node held it"
            deny = "already had it" if self.on_list else f"added the {self.kind}"
            return [
                first,
                f"deny list: {deny}; sync will not ingest it again in this checkout "
                f"(for other checkouts: {EXPORT})",
                *self.notes,
            ]
        deny = "already has it" if self.on_list else f"would get the {self.kind}"
        return [
            f"would forget {found}" if found else "no node holds it",
            f"deny list: {deny}",
            f"dry run: nothing was changed; {CONFIRM} to forget it",
        ]


@dataclass
class ImportReport:
    applied: bool
    path: str
    entries: int  # in the file
    new: int  # not yet on this checkout's list
    matched: int = 0
    by_source: dict[str, int] = field(default_factory=dict)
    removed: int = 0
    agent_notes: int = 0  # notes the agents were told that hold one (deleted, when applied)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        found = _found(self.matched, self.by_source, self.agent_notes)
        have = f"{self.entries} entr(ies) in {self.path}, {self.new} new here"
        if self.applied:
            return [
                f"imported {have}",
                f"forgot {found}" if found else "no node held any of them",
                *self.notes,
            ]
        return [
            f"would import {have}",
            f"would forget {found}" if found else "no node holds any of them",
            f"dry run: nothing was changed; {CONFIRM} to import them and forget what they match",
        ]


@dataclass
class ExportReport:
    path: str
    entries: int
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ------------------------------------------------------------------------------------ forget


def _holds(deny: DenyFilter, pieces: list[str], needle: str | None, fold: bool) -> bool:
    """Whether ``deny`` matches ``pieces``. ``needle``, when the value is known, passes over
    text that cannot hold it before the matcher runs."""
    if needle is not None and not any(needle in (p.lower() if fold else p) for p in pieces):
        return False
    return deny.matches(pieces)


async def _matching(
    db: Database, pid: str, deny: DenyFilter, needle: str | None = None, fold: bool = False
) -> list[Doomed]:
    """The project's nodes that ``deny`` matches, read a page at a time."""
    found: list[Doomed] = []
    last = 0
    while rows := await db.fetchall(
        "select seq, id, source, title, body, paths, meta from nodes "
        "where project_id = ? and seq > ? order by seq limit ?",
        (pid, last, _PAGE),
    ):
        for seq, id_, source, title, body, paths, meta in rows:
            if _holds(deny, row_pieces(title, body, paths, meta), needle, fold):
                found.append(Doomed(id_, seq, source))
        last = rows[-1][0]
    return found


async def _matching_notes(
    db: Database, pid: str, deny: DenyFilter, needle: str | None = None, fold: bool = False
) -> list[str]:
    """The ids of the project's notes the agents were told that ``deny`` matches, read a page
    at a time (by rowid: the table's key is text)."""
    found: list[str] = []
    last = 0
    while rows := await db.fetchall(
        "select rowid, id, session, command, body from agent_notes "
        "where project_id = ? and rowid > ? order by rowid limit ?",
        (pid, last, _PAGE),
    ):
        for _, id_, session, command, body in rows:
            if _holds(deny, note_pieces(session, command, body), needle, fold):
                found.append(id_)
        last = rows[-1][0]
    return found


async def _delete_notes(db: Database, ids: list[str]) -> int:
    return await db.executemany("delete from agent_notes where id = ?", [(i,) for i in ids])


async def _on_list(db: Database, pid: str, entry: DenyEntry, needle: str | None) -> bool:
    """Whether the deny list has this entry already (a literal is recognised by rehashing the
    value with each same-length entry's salt)."""
    for old in await load_entries(db, pid):
        if old.kind != entry.kind or old.ignore_case != entry.ignore_case:
            continue
        if entry.kind == "regex" and old.value == entry.value:
            return True
        if needle is not None and is_same_literal(old, needle):
            return True
    return False


async def _forget_doc_files(db: Database, pid: str, deny: DenyFilter) -> None:
    """A doc file whose path holds the value: its bookkeeping row goes too (its sections went
    with the nodes; a later sync parses it again and the deny list drops what it finds). So do
    the import edges from or to such a file (the next graph build leaves them out)."""
    rows = await db.fetchall("select path from doc_files where project_id = ?", (pid,))
    for (path,) in rows:
        if deny.matches([path]):
            await db.execute("delete from doc_files where project_id = ? and path = ?", (pid, path))
    edges = await db.fetchall("select src, dst from import_edges where project_id = ?", (pid,))
    for src, dst in edges:
        if deny.matches([src, dst]):
            await db.execute(
                "delete from import_edges where project_id = ? and src = ? and dst = ?",
                (pid, src, dst),
            )
    # The graph's per-file cache is keyed by path: the next sync builds it afresh.
    await db.execute(
        "delete from cursors where project_id = ? and source in ('structure', 'structure:files')",
        (pid,),
    )


async def _insert(db: Database, pid: str, entries: list[DenyEntry]) -> int:
    now = int(time.time())
    return await db.executemany(
        "insert into deny_list (project_id, kind, value, salt, length, ignore_case, reason, "
        "created_at) values (?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing",
        [
            (pid, e.kind, e.value, e.salt, e.length, int(e.ignore_case), e.reason, now)
            for e in entries
        ],
    )


async def forget(
    engine: Engine,
    value: str,
    *,
    regex: bool = False,
    ignore_case: bool = False,
    reason: str | None = None,
    apply: bool = False,
) -> ForgetReport:
    """Forget every node of this project holding ``value`` (a literal, or a pattern with
    ``regex``) and deny it to every later sync; a dry run unless ``apply``."""
    if regex:
        entry, needle = regex_entry(value, ignore_case, reason), None
    else:
        entry, needle = literal_entry(value, ignore_case, reason), normalize(value, ignore_case)
    deny = DenyFilter([entry], strict=True)  # a pattern that backtracks changes nothing
    report = ForgetReport(applied=apply, kind=entry.kind, ignore_case=ignore_case)
    if regex:
        report.warnings.append(REGEX_WARNING)
    db, pid = engine.db, engine.project_id
    if not apply:
        nodes = await _matching(db, pid, deny, needle, ignore_case)
        told = await _matching_notes(db, pid, deny, needle, ignore_case)
        report.on_list = await _on_list(db, pid, entry, needle)
    else:
        async with leaving_no_trace(db) as notes:
            nodes = await _matching(db, pid, deny, needle, ignore_case)
            told = await _matching_notes(db, pid, deny, needle, ignore_case)
            report.on_list = await _on_list(db, pid, entry, needle)
            if not report.on_list:
                await _insert(db, pid, [entry])
            report.removed = await remove_nodes(db, nodes, "forget")
            await _delete_notes(db, told)
            await _forget_doc_files(db, pid, deny)
            await audit.record(
                db,
                pid,
                "forget",
                report.removed,
                kind=entry.kind,
                ignore_case=ignore_case,
                by_source=by_source(nodes),
                agent_notes=len(told),
                deny_entry="existing" if report.on_list else "added",
            )
        report.notes = notes
    report.matched, report.by_source = len(nodes), by_source(nodes)
    report.agent_notes = len(told)
    backups = engine.workspace / "backups"
    if (report.matched or told) and backups.is_dir() and any(backups.iterdir()):
        report.warnings.append(
            f"the database backups in {backups} (made by scrub-secrets) still hold it: "
            "delete them once you no longer need them"
        )
    return report


# ------------------------------------------------------------------------ list, export, import


def _date(ts: int | None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts)) if ts else "date unknown"


async def list_entries(engine: Engine, *, show_patterns: bool = True) -> list[dict[str, Any]]:
    """The deny list, oldest first. A literal shows only its length; a regex its pattern
    (or its length too, without ``show_patterns``)."""
    out = []
    for e in await load_entries(engine.db, engine.project_id):
        shown = e.kind == "regex" and show_patterns
        out.append(
            {
                "id": e.id,
                "kind": e.kind,
                "pattern": e.value if shown else None,
                "length": e.length if e.kind == "literal" else len(e.value),
                "ignore_case": e.ignore_case,
                "reason": e.reason,
                "date": _date(e.created_at),
            }
        )
    return out


def entry_line(entry: dict[str, Any]) -> str:
    """``#3  literal, 12 chars, ignore-case, leaked in CI, 2026-01-02``."""
    what = f"regex /{entry['pattern']}/" if entry["pattern"] is not None else entry["kind"]
    parts = [what, f"{entry['length']} chars"]
    parts.append("ignore-case" if entry["ignore_case"] else "case-sensitive")
    if entry["reason"]:
        parts.append(entry["reason"])
    parts.append(entry["date"])
    return f"#{entry['id']}  " + ", ".join(parts)


async def export_entries(engine: Engine, path: Path) -> ExportReport:
    """Write the deny list, salts and all, to ``path`` (JSON, mode 0600)."""
    entries = await load_entries(engine.db, engine.project_id)
    document = {
        "format": FORMAT,
        "version": 1,
        "project": engine.repo.name,
        "exported_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "entries": [
            {
                "kind": e.kind,
                "value": e.value,
                "salt": e.salt,
                "length": e.length,
                "ignore_case": e.ignore_case,
                "reason": e.reason,
            }
            for e in entries
        ],
    }
    replace_file(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n", mode=0o600)
    return ExportReport(str(path), len(entries), [EXPORT_WARNING.format(path=path)])


def _parse(path: Path) -> list[DenyEntry]:
    text = read_text(path)
    if text is None:
        raise UsageError(f"forget --import: {path} does not exist")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(f"forget --import: {path} is not JSON ({err})") from err
    except (ValueError, RecursionError) as err:  # a number of 4,300+ digits, deep nesting
        raise UsageError(
            f"forget --import: {path} is not JSON (a number too long or nesting too deep)"
        ) from err
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise UsageError(
            f"forget --import: {path} is not a deny list written by `nexusmem forget --export`"
        )
    raw = document.get("entries")
    if not isinstance(raw, list):
        raise UsageError(f"forget --import: {path} has no list of entries")
    return [_entry(path, i, item) for i, item in enumerate(raw, start=1)]


def _text(value: Any) -> bool:
    """Non-empty text that can be stored as UTF-8 (JSON allows lone surrogates; SQLite not)."""
    if not isinstance(value, str) or not value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _entry(path: Path, index: int, item: Any) -> DenyEntry:
    def bad(why: str) -> UsageError:
        return UsageError(f"forget --import: {path}, entry {index}: {why}; export it again")

    if not isinstance(item, dict) or item.get("kind") not in ("literal", "regex"):
        raise bad("kind must be literal or regex")
    ignore_case, reason = item.get("ignore_case"), item.get("reason")
    if not isinstance(ignore_case, bool) or not (reason is None or _text(reason)):
        raise bad("ignore_case must be true or false, and reason text or null")
    value = item.get("value")
    if item["kind"] == "regex":
        try:
            return regex_entry(value if isinstance(value, str) else "", ignore_case, reason)
        except UsageError as err:
            raise bad(str(err)) from err
    salt, length = item.get("salt"), item.get("length")
    if not (
        isinstance(value, str)
        and _HEX64.fullmatch(value)
        and _text(salt)
        and isinstance(length, int)
        and not isinstance(length, bool)
        and 0 < length <= 1_000_000
    ):
        raise bad("a literal needs a sha256 hex value, a salt and a length")
    return DenyEntry("literal", value, str(salt), length, ignore_case, reason)


async def import_entries(engine: Engine, path: Path, *, apply: bool = False) -> ImportReport:
    """Add the entries of an export to this checkout's deny list and forget the nodes they
    match here; a dry run unless ``apply``."""
    entries = _parse(path)
    db, pid = engine.db, engine.project_id

    async def new_ones() -> list[DenyEntry]:
        have = {(e.kind, e.value, e.ignore_case) for e in await load_entries(db, pid)}
        return [e for e in entries if (e.kind, e.value, e.ignore_case) not in have]

    deny = DenyFilter(entries, strict=True)
    report = ImportReport(applied=apply, path=str(path), entries=len(entries), new=0)
    if any(e.kind == "regex" for e in entries):
        report.warnings.append(REGEX_WARNING)
    if not apply:
        nodes, report.new = await _matching(db, pid, deny), len(await new_ones())
        told = await _matching_notes(db, pid, deny)
    else:
        async with leaving_no_trace(db) as notes:
            fresh = await new_ones()
            report.new = await _insert(db, pid, fresh)
            nodes = await _matching(db, pid, deny)
            told = await _matching_notes(db, pid, deny)
            report.removed = await remove_nodes(db, nodes, "forget")
            await _delete_notes(db, told)
            await audit.record(
                db,
                pid,
                "forget-import",
                report.removed,
                entries=len(entries),
                added=report.new,
                by_source=by_source(nodes),
                agent_notes=len(told),
            )
        report.notes = notes
    report.matched, report.by_source = len(nodes), by_source(nodes)
    report.agent_notes = len(told)
    return report
