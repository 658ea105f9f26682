"""``nexusmem scrub-secrets``: re-apply the current redaction table to what is already stored.

Older NexusMem versions, and every rule added to :mod:`nexusmem_core.redact` since a command
was recorded, leave secrets behind in the memory databases and the hook logs. A dry run (the
default) says how many nodes and log lines hold one, by source, and which rules fired (names
and counts, never a value). With ``apply``, per database:

1. A backup first: ``VACUUM INTO .nexusmem/backups/memory-<time>.db``, created 0600. It keeps
   the old text: it is the one place the secrets remain, for the user to delete.
2. One transaction: the changed nodes' title, body, paths and meta string values; their
   content hash, recomputed as :class:`~nexusmem_core.models.Node` computes it, so a later
   sync that builds the same node from its redacted source finds it unchanged and writes
   nothing; their vectors, dropped so the next sync re-embeds the redacted text; the notes the
   agents were told (``agent_notes``: session, command and text); the log cursors (see
   :mod:`.scrub_logs`); an audit row (counts and rule names only).
3. Then the FTS index is rebuilt (FTS5 keeps the terms of replaced rows in its segments until
   they are merged), the file VACUUMed (free pages keep deleted text) and the WAL truncated
   (old frames keep it too). The transaction marks these steps as due: killed before they are
   done, the next open of the memory does them.

Every node in the database file is scrubbed, whatever project id it carries: the file's bytes
are what must come clean. The logs in ``$NEXUSMEM_HOME`` are shared by every repository and are
scrubbed once per run.

A resync does not undo the scrub: shell and agent commands are redacted by their collectors as
they are read (and their logs are scrubbed too). Commits, diffs and docs are stored as the
repository has them; a sync only re-reads them when they change (or on ``sync --rebuild``), and
then a secret still in the repository comes back with them: that value belongs in
``nexusmem forget``, and out of the repository.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from ..engine import Engine, open_engine
from ..errors import NexusMemError
from ..models import Node
from ..redact import TABLE_VERSION, redact_tally
from ..registry import load_registry
from ..retrieval.names import name_parts
from ..store import audit
from ..store.db import Database, open_database
from ..store.maintenance import Compaction, backup, compact, mark_due
from ..store.nodes import decode_meta, get_cursor, set_cursor

if TYPE_CHECKING:
    from ..config import Settings
    from .scrub_logs import LogRemap, LogScrub

__all__ = ["TABLE_CURSOR", "DatabaseScrub", "ScrubReport", "note_table_change", "scrub"]

# The cursor that names the redaction table this memory was last written or scrubbed with.
TABLE_CURSOR = "redaction_table"

BACKUP_DIR = "backups"
BATCH = 500
T = TypeVar("T")
_COLUMNS = "seq, id, project_id, kind, source, ref, grp, title, body, paths, ts, signal, provenance"


@dataclass
class DatabaseScrub:
    """One repository's database: nodes with a secret, by source, and the rules that fired."""

    name: str
    root: str
    database: str
    nodes: int = 0
    by_source: dict[str, int] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)  # the nodes' and the notes'
    notes: int = 0  # notes the agents were told (``agent_notes`` rows) that held one
    origin: bool = False  # the stored origin URL held a credential
    paths: int = 0  # file paths in the sync's bookkeeping tables that held one
    backup: str | None = None
    compacted: str = ""  # what became of the file after the update


@dataclass
class ScrubReport:
    applied: bool
    projects: list[DatabaseScrub] = field(default_factory=list)
    logs: list[LogScrub] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # databases that could not be opened
    notes: list[str] = field(default_factory=list)

    @property
    def found(self) -> int:
        """Nodes, agent notes, origins, bookkeeping paths and log lines that held a secret."""
        stored = sum(p.nodes + p.notes + p.origin + p.paths for p in self.projects)
        return stored + sum(g.lines for g in self.logs)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "found": self.found}

    def lines(self) -> list[str]:
        """The report for people: counts and rule names, never a value."""
        verb = "scrubbed" if self.applied else "would change"
        out: list[str] = []
        for p in self.projects:
            out.append(f"project  {p.name}  {p.root}")
            if p.nodes:
                out.append(f"  nodes   {p.nodes} {verb}: {_counts(p.by_source)}")
            if p.notes:
                out.append(f"  notes   {p.notes} agent note(s) {verb}")
            if p.nodes or p.notes:
                out.append(f"  rules   {_counts(p.rules)}")
            if p.origin:
                out.append(
                    f"  origin  the stored remote URL holds a credential: {verb}; each sync "
                    "stores it again from `git config remote.origin.url`: take the credential "
                    "out of the remote URL (a credential helper keeps it)"
                )
            if p.paths:
                out.append(f"  paths   {p.paths} file paths in sync bookkeeping {verb}")
            if not p.nodes and not p.notes and not p.origin and not p.paths:
                out.append("  nodes   no secret found")
            if p.backup:
                out.append(
                    f"  backup  {p.backup} (0600) still holds the old text: delete it once "
                    "you are satisfied"
                )
            if p.compacted:
                out.append(f"  file    {p.compacted}")
        for log in self.logs:
            out.append(f"log      {log.file}")
            if log.lines:
                out.append(f"  lines   {log.lines} {verb}")
                out.append(f"  rules   {_counts(log.rules)}")
            else:
                out.append("  lines   no secret found")
        out += [f"skipped  {s}" for s in self.skipped]
        out += [f"note     {n}" for n in self.notes]
        if not self.applied:
            out.append(
                "dry run: nothing was changed; `--yes` scrubs (each database is backed up first)"
                if self.found
                else "dry run: nothing to scrub"
            )
        return out


def _counts(counts: dict[str, int]) -> str:
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name} {n}" for name, n in ordered)


async def scrub(
    settings: Settings, root: Path, *, all_projects: bool = False, apply: bool = False
) -> ScrubReport:
    """Find (dry run) or redact (``apply``) the secrets stored for the repository at ``root``,
    or (``all_projects``) for every registered one, and in the hook logs."""
    report = ScrubReport(applied=apply)
    if not all_projects:
        # Opened first: a repository without memory is an error before any log is touched.
        async with open_engine(settings, root, read_only=not apply) as engine:
            remaps = await _scrub_logs(settings, report)
            report.projects.append(await scrub_database(engine, remaps, report))
        if remaps:
            await _remap_elsewhere(settings, {str(engine.db.path)}, remaps, report)
        return report
    remaps = await _scrub_logs(settings, report)
    for entry in load_registry(settings.home):
        try:
            async with open_engine(settings, Path(entry.root), read_only=not apply) as engine:
                report.projects.append(await scrub_database(engine, remaps, report))
        except NexusMemError as err:
            report.skipped.append(f"{entry.root}: {err}")
    return report


async def _scrub_logs(settings: Settings, report: ScrubReport) -> dict[str, LogRemap]:
    """Scrub each hook log; return how to move the cursors of the ones rewritten."""
    from .scrub_logs import LOGS, scrub_log

    remaps = {}
    for log in LOGS:
        path = settings.home / log.file
        result, remap = await anyio.to_thread.run_sync(scrub_log, path, report.applied, log.fields)
        report.logs.append(result)
        if remap is not None:
            remaps[log.cursor] = remap
    return remaps


# ------------------------------------------------------------------------------- one database


@dataclass
class _Change:
    """A node with its secrets redacted, and the rules that did it."""

    seq: int
    node_id: str  # as stored: derived from the ref as collected, so not node.id
    node: Node
    ref: str  # redacted; the Node keeps the stored ref, whose id it would otherwise change
    rules: Counter[str]
    paths_changed: bool


def _scrubbed(value: Any, tally: Counter[str]) -> Any:
    """``value`` with every string in it redacted, keys included (meta is JSON: strings,
    lists, objects)."""
    if isinstance(value, str):
        text, found = redact_tally(value)
        tally.update(found)
        return text
    if isinstance(value, list):
        return [_scrubbed(item, tally) for item in value]
    if isinstance(value, dict):
        return {_scrubbed(str(key), tally): _scrubbed(item, tally) for key, item in value.items()}
    return value


def _change(row: Sequence[Any]) -> _Change | None:
    """The node of one ``_COLUMNS`` row (plus meta) with its secrets redacted; None if none."""
    seq, nid, pid, kind, source, ref, grp, title, body, paths, ts, signal, provenance, meta = row
    tally: Counter[str] = Counter()
    files = paths.split("\n") if paths else []
    node = Node(
        project_id=pid,
        kind=kind,
        source=source,
        ref=ref,
        title=_scrubbed(title, tally),
        body=_scrubbed(body, tally),
        ts=ts,
        signal=signal,
        provenance=provenance,
        grp=_scrubbed(grp, tally) if grp is not None else None,
        files=_scrubbed(files, tally),
        meta=_scrubbed(decode_meta(meta), tally),
    )
    clean_ref = _scrubbed(ref, tally)
    return _Change(seq, nid, node, clean_ref, tally, node.files != files) if tally else None


def _changes(rows: list[tuple[Any, ...]]) -> list[_Change]:
    return [c for c in map(_change, rows) if c is not None]


_NODES = (f"select {_COLUMNS}, meta from nodes", "seq")


async def _plan(db: Database) -> list[_Change]:
    """Every node of the database that holds a secret (redaction runs in a worker thread: an
    MCP server shares this event loop)."""
    return await _planned(db, _NODES, _changes)


async def _reload(db: Database, seqs: list[int]) -> list[_Change]:
    """The planned nodes as they are now (inside the write transaction: a sync may have
    rewritten one since the plan), redacted again."""
    return await _reread(db, _NODES, seqs, _changes)


async def _planned(
    db: Database, table: tuple[str, str], convert: Callable[[list[tuple[Any, ...]]], list[T]]
) -> list[T]:
    """What ``convert`` makes of every row of ``table`` (a select and its integer key, by
    which the rows are read ``BATCH`` at a time), in a worker thread."""
    select, key = table
    found: list[T] = []
    last = 0
    while rows := await db.fetchall(
        f"{select} where {key} > ? order by {key} limit ?", (last, BATCH)
    ):
        last = rows[-1][0]
        found += await anyio.to_thread.run_sync(convert, rows)
    return found


async def _reread(
    db: Database,
    table: tuple[str, str],
    keys: list[int],
    convert: Callable[[list[tuple[Any, ...]]], list[T]],
) -> list[T]:
    """What ``convert`` makes of the rows of ``table`` whose key is in ``keys``, as they are
    now."""
    select, key = table
    found: list[T] = []
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        marks = ",".join("?" * len(batch))
        found += convert(await db.fetchall(f"{select} where {key} in ({marks})", batch))
    return found


@dataclass
class _NoteChange:
    """A note the agents were told (an ``agent_notes`` row) with its secrets redacted."""

    rowid: int
    session: str
    command: str | None
    body: str
    rules: Counter[str]


_NOTE_COLUMNS = "rowid, session, command, body"  # the key is text: rows are paged by rowid


def _note_changes(rows: list[tuple[Any, ...]]) -> list[_NoteChange]:
    changes = []
    for rowid, session, command, body in rows:
        tally: Counter[str] = Counter()
        change = _NoteChange(
            rowid,
            _scrubbed(session, tally),
            _scrubbed(command, tally),
            _scrubbed(body, tally),
            tally,
        )
        if tally:
            changes.append(change)
    return changes


_NOTES = (f"select {_NOTE_COLUMNS} from agent_notes", "rowid")


async def _plan_notes(db: Database) -> list[_NoteChange]:
    """Every note of the database that holds a secret, read as the nodes are."""
    return await _planned(db, _NOTES, _note_changes)


async def _reload_notes(db: Database, rowids: list[int]) -> list[_NoteChange]:
    """The planned notes as they are now, inside the write transaction, redacted again."""
    return await _reread(db, _NOTES, rowids, _note_changes)


async def _write_notes(db: Database, notes: list[_NoteChange]) -> None:
    await db.executemany(
        "update agent_notes set session = ?, command = ?, body = ? where rowid = ?",
        [(n.session, n.command, n.body, n.rowid) for n in notes],
    )


# Bookkeeping tables keyed by a file's path (a file may be named after a token): a sync's
# caches of what it read. A redacted key is only a cache miss: the file is read again.
_PATH_COLUMNS = (("doc_files", "path"), ("source_files", "path"), ("import_edges", "src"),
                 ("import_edges", "dst"))  # fmt: skip


async def _paths(db: Database) -> list[tuple[str, str, str, str]]:
    """Paths in the bookkeeping tables that hold a secret: (table, column, path, redacted)."""
    found = []
    for table, column in _PATH_COLUMNS:
        for (path,) in await db.fetchall(f"select distinct {column} from {table}"):
            clean, hits = redact_tally(path)
            if hits:
                found.append((table, column, path, clean))
    return found


async def _write_paths(db: Database, paths: list[tuple[str, str, str, str]]) -> None:
    for table, column, path, clean in paths:
        # A row whose redacted key already exists is a duplicate: the second goes.
        await db.execute(
            f"update or ignore {table} set {column} = ? where {column} = ?", (clean, path)
        )
        await db.execute(f"delete from {table} where {column} = ?", (path,))


async def _origins(db: Database) -> list[tuple[str, str]]:
    """Projects whose stored origin URL holds a credential: (id, redacted URL)."""
    found = []
    for pid, origin in await db.fetchall(
        "select id, origin from projects where origin is not null"
    ):
        text, hits = redact_tally(origin)
        if hits:
            found.append((pid, text))
    return found


async def scrub_database(
    engine: Engine, remaps: dict[str, LogRemap], report: ScrubReport
) -> DatabaseScrub:
    """Find (dry run) or redact (``report.applied``) the secrets of one memory database;
    ``remaps`` moves its cursors of the logs already rewritten."""
    from ..store import vectors

    db, apply = engine.db, report.applied
    result = DatabaseScrub(engine.repo.name, str(engine.repo.root), str(db.path))
    changes, origins, paths = await _plan(db), await _origins(db), await _paths(db)
    notes = await _plan_notes(db)
    _count(result, changes, bool(origins), notes)
    result.paths = len(paths)
    if not apply:
        return result
    seqs = [c.seq for c in changes]
    await vectors.delete(db, seqs, check_only=True)  # refuse before anything is written
    if changes or origins or paths or notes:
        result.backup = str(await backup(db, engine.workspace / BACKUP_DIR))
    async with db.transaction():
        changes = await _reload(db, seqs)
        notes = await _reload_notes(db, [n.rowid for n in notes])
        _count(result, changes, bool(origins), notes)
        if (
            changes or origins or paths or notes
        ):  # killed before the compaction, the next open does it
            await mark_due(db, rebuild_fts=bool(changes))
        await _write(db, changes)
        await _write_notes(db, notes)
        await _write_paths(db, await _paths(db))
        await db.executemany(
            "update projects set origin = ? where id = ?", [(o, p) for p, o in origins]
        )
        await vectors.delete(db, [c.seq for c in changes])  # re-embedded, redacted, later
        remapped = await remap_cursors(db, remaps)
        await set_cursor(db, engine.project_id, TABLE_CURSOR, TABLE_VERSION)
        log_lines = sum(log.lines for log in report.logs)
        if changes or notes or origins or remapped or log_lines:
            await audit.record(
                db,
                engine.project_id,
                "scrub-secrets",
                result.nodes,
                by_source=result.by_source,
                agent_notes=result.notes,
                rules=result.rules,
                origin=result.origin,
                log_lines=log_lines,
                log_cursors=remapped,
                backup=result.backup,
            )
    vacuum = bool(changes or notes or origins or paths)
    done = await compact(db, rebuild_fts=bool(changes), vacuum=vacuum)
    result.compacted = _compaction_text(done)
    return result


def _count(
    result: DatabaseScrub, changes: list[_Change], origin: bool, notes: list[_NoteChange]
) -> None:
    by_source: Counter[str] = Counter(c.node.source for c in changes)
    rules: Counter[str] = Counter()
    for tally in [c.rules for c in changes] + [n.rules for n in notes]:
        rules.update(tally)
    result.nodes, result.notes, result.origin = len(changes), len(notes), origin
    result.by_source, result.rules = dict(sorted(by_source.items())), dict(sorted(rules.items()))


async def _write(db: Database, changes: list[_Change]) -> None:
    # The FTS index follows through the nodes_au trigger; the rebuild after this transaction
    # then drops the old terms from its segments.
    await db.executemany(
        "update nodes set ref = ?, grp = ?, title = ?, body = ?, paths = ?, meta = ?, "
        "content_hash = ?, names = ? where seq = ?",
        [
            (
                c.ref,
                c.node.grp,
                c.node.title,
                c.node.body,
                "\n".join(c.node.files),
                c.node.meta_json,
                c.node.content_hash,
                name_parts(c.node.kind, c.node.title, c.node.body),  # split from the new text
                c.seq,
            )
            for c in changes
        ],
    )
    for c in changes:
        if c.paths_changed:
            await db.execute("delete from node_files where node_seq = ?", (c.seq,))
            await db.executemany(
                "insert into node_files (node_seq, path) values (?, ?) on conflict do nothing",
                [(c.seq, path) for path in c.node.files],
            )


async def remap_cursors(db: Database, remaps: dict[str, LogRemap]) -> int:
    """Move this database's cursors of rewritten logs to the same lines in the new files
    (inside the caller's transaction); return how many moved."""
    moved = 0
    for source, remap in remaps.items():
        rows = await db.fetchall(
            "select project_id, value from cursors where source = ?", (source,)
        )
        for pid, value in rows:
            new = remap.cursor(value)
            if new != value:
                await set_cursor(db, pid, source, new)
                moved += 1
    return moved


async def _remap_elsewhere(
    settings: Settings, done: set[str], remaps: dict[str, LogRemap], report: ScrubReport
) -> None:
    """The logs are every repository's: move the cursors of the other registered databases
    too. One that cannot be opened keeps its cursors, which then read from the start of the
    log at its next sync (see :mod:`.scrub_logs`): slower, never wrong."""
    for entry in load_registry(settings.home):
        path = Path(entry.database)
        if str(path) in done or not path.is_file():
            continue
        try:
            async with open_database(path, vectors=False) as db, db.transaction():
                await remap_cursors(db, remaps)
        except NexusMemError as err:  # open_database turns SQLite errors into StoreError
            report.notes.append(
                f"{entry.root}: log cursors not moved ({err}); its next sync reads the logs "
                "from the start"
            )


def _compaction_text(done: Compaction) -> str:
    said = [
        text
        for flag, text in (
            (done.fts_rebuilt, "FTS index rebuilt"),
            (done.vacuumed, "vacuumed"),
            (done.wal_truncated, "WAL truncated"),
        )
        if flag
    ]
    if done.error:
        said.append(
            f"not compacted ({done.error}): old text may remain in free pages; run "
            "`nexusmem scrub-secrets --yes` again when no sync is running"
        )
    elif not done.wal_truncated:
        said.append(
            "WAL not truncated: another process was reading the database; old text may remain "
            "in memory.db-wal until every process using the database has closed it"
        )
    return ", ".join(said)


async def note_table_change(engine: Engine, fresh: bool) -> str | None:
    """After a sync: if this memory was written with another redaction table than this
    version's, say once, in one line, how many stored nodes the current one would change.

    ``fresh`` is a memory this sync wrote from nothing (a first sync, a rebuild): it is
    redacted with the current table already. Either way the table is then recorded, so the
    line is said once per change of table, not on every sync.
    """
    db, pid = engine.db, engine.project_id
    if await get_cursor(db, pid, TABLE_CURSOR) == TABLE_VERSION:
        return None
    note = None
    if not fresh:
        changes, paths, notes = await _plan(db), await _paths(db), await _plan_notes(db)
        if changes or paths or notes:
            held = f"{len(changes)} stored nodes" + (f" and {len(paths)} paths" if paths else "")
            held += f" and {len(notes)} agent notes" if notes else ""
            note = (
                f"the redaction table changed since this memory was written: {held} hold text "
                "it now redacts; run `nexusmem scrub-secrets --yes` to redact them"
            )
    async with db.transaction():
        await set_cursor(db, pid, TABLE_CURSOR, TABLE_VERSION)
    return note
