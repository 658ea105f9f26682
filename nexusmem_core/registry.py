"""``$NEXUSMEM_HOME/projects.json``: which repositories have a memory, for cross-project recall.

An index, not a source of truth: an entry may point at a database that moved or sits on an
unmounted drive, so entries are only removed on request (``projects --prune``). Writes are
atomic (temp file + rename) under an advisory lock; a corrupt file reads as empty with a warning
and is kept aside as ``projects.json.corrupt`` before it is replaced.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from .files import file_error, make_dir, replace_file
from .logging import get_logger

__all__ = [
    "EntryCheck",
    "ProjectEntry",
    "check_entry",
    "distinct_names",
    "forget_entry",
    "load_registry",
    "one_per_project",
    "register_project",
    "remove_projects",
]

REGISTRY_FILE = "projects.json"
SQLITE_HEADER = b"SQLite format 3\x00"
log = get_logger("registry")


@dataclass
class ProjectEntry:
    project_id: str
    name: str
    root: str
    database: str
    last_sync: str | None = None


def distinct_names(named: dict[str, tuple[str, str]]) -> dict[str, str]:
    """Names to show, one per key, told apart: ``named`` maps a key to (name, root). A name two
    projects share (two folders both called ``repo``, with no origin to name them) gets its
    root after it, home as ``~``."""
    count: dict[str, int] = {}
    for name, _ in named.values():
        count[name] = count.get(name, 0) + 1
    home = str(Path.home())
    out = {}
    for key, (name, root) in named.items():
        if count[name] > 1:
            shown = "~" + root[len(home) :] if root.startswith(home + os.sep) else root
            name = f"{name} ({shown})"
        out[key] = name
    return out


def one_per_project(
    entries: list[ProjectEntry],
) -> tuple[list[ProjectEntry], list[tuple[ProjectEntry, ProjectEntry]]]:
    """One entry per project id, and each one left out with the one kept for it. Clones of one
    origin share a project id and hold the same history: searched each, every hit would come
    back once per clone. The clone synced last is kept (its memory is the freshest); on a tie,
    the first by root, so the choice does not change from one run to the next."""
    best: dict[str, ProjectEntry] = {}
    for entry in sorted(entries, key=lambda e: e.root):
        kept = best.get(entry.project_id)
        if kept is None or (entry.last_sync or "") > (kept.last_sync or ""):
            best[entry.project_id] = entry
    chosen = set(map(id, best.values()))
    left = [(e, best[e.project_id]) for e in entries if id(e) not in chosen]
    return [e for e in entries if id(e) in chosen], left


def _path(home: Path) -> Path:
    return home / REGISTRY_FILE


def load_registry(home: Path) -> list[ProjectEntry]:
    """Every registered project; a missing or corrupt file gives an empty list."""
    path = _path(home)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = [ProjectEntry(**item) for item in data["projects"]]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as err:
        log.warning(
            "registry_unreadable",
            file=str(path),
            error=str(err),
            hint="read as empty; it is rebuilt by the next sync of each repository",
        )
        return []
    return entries


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    make_dir(home, 0o700)
    lock = home / ".projects.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)  # private, as all of the home is
    except OSError as err:
        raise file_error("write", lock, err) from err
    with open(fd, "r+b") as handle:
        try:
            import fcntl
        except ImportError:  # Windows: last writer wins, the file is still never torn
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write(home: Path, entries: list[ProjectEntry]) -> None:
    path = _path(home)
    if path.exists():
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            os.replace(path, path.with_suffix(".json.corrupt"))
    payload = {"version": 1, "projects": [asdict(e) for e in entries]}
    # Private (0600), as it always was: it lists every repository on this machine and where.
    replace_file(path, json.dumps(payload, indent=2) + "\n", mode=0o600)


def register_project(home: Path, entry: ProjectEntry, synced: bool = False) -> None:
    """Add or refresh one project's entry (keyed by its root)."""
    with _locked(home):
        entries = [e for e in load_registry(home) if e.root != entry.root]
        if synced:
            entry.last_sync = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        entries.append(entry)
        entries.sort(key=lambda e: e.root)
        _write(home, entries)


def forget_entry(home: Path, root: str, database: str) -> None:
    """Remove the entry at ``root`` if it is this ``database``'s (a checkout that moved), or
    its database is gone; an entry another checkout now owns at that root stays."""
    with _locked(home):
        entries = load_registry(home)
        kept = [
            e
            for e in entries
            if e.root != root or (e.database != database and Path(e.database).is_file())
        ]
        if len(kept) != len(entries):
            _write(home, kept)


def remove_projects(home: Path, roots: set[str]) -> None:
    with _locked(home):
        _write(home, [e for e in load_registry(home) if e.root not in roots])


@dataclass(frozen=True)
class EntryCheck:
    """What is at a registered project's paths right now; ``reason`` says it (after the
    root) when it is not ``ok``.

    ``state`` is ``ok``; ``gone`` (the repository was deleted or moved: its directory is not
    there, but the one around it is) or ``no-memory`` (the repository is there, its database
    is not), which ``projects --prune`` removes; or, kept because it may come back,
    ``unreachable`` (neither the repository nor its parent directory is there, or it is an
    empty directory: an unmounted disk looks like that), ``not-a-database``, ``damaged`` (a
    SQLite file shorter than its header says: truncated) or ``unreadable``.
    """

    state: str
    reason: str = ""

    @property
    def prunable(self) -> bool:
        return self.state in ("gone", "no-memory")


def check_entry(entry: ProjectEntry) -> EntryCheck:
    """Look (reading, never writing) at what ``entry`` points to."""
    root = Path(entry.root)
    try:
        if root.is_dir():
            if _empty(root):
                return EntryCheck("unreachable", "an empty directory: an unmounted disk?")
            return _check_database(Path(entry.database))
        if root.exists():
            return EntryCheck("gone", "a file now, not a repository")
        if root.parent.is_dir() and not _empty(root.parent):
            return EntryCheck("gone", "not there any more: deleted or moved")
        return EntryCheck(
            "unreachable",
            f"not there, and {_first_missing(root)} is missing or empty: an unmounted disk?",
        )
    except OSError as err:
        return EntryCheck("unreadable", f"cannot be read: {err.strerror or err}")


def _check_database(database: Path) -> EntryCheck:
    try:
        with open(database, "rb") as handle:
            header = handle.read(100)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        return EntryCheck("no-memory", f"database missing: {database} was deleted")
    except OSError as err:
        return EntryCheck("unreadable", f"cannot read {database}: {err.strerror or err}")
    if not header:
        return EntryCheck(
            "not-a-database",
            f"{database} is empty (0 bytes): run `nexusmem sync` in the repository to build it",
        )
    if not header.startswith(SQLITE_HEADER):
        return EntryCheck("not-a-database", f"{database} is not a SQLite database")
    damage = _damage(header, size, _wal_has_frames(database))
    if damage:
        return EntryCheck(
            "damaged",
            f"{database} {damage}: move it aside and run `nexusmem sync` to build memory anew",
        )
    return EntryCheck("ok")


def _damage(header: bytes, size: int, live: bool) -> str:
    """What the 100-byte SQLite header says is wrong with a file of ``size`` bytes, or "".

    A file is whole pages, and when the header's page count is valid (its version-valid-for
    number matches the change counter) it is at least that many. A checkpoint that grows the
    file writes page 1 before the pages after it, so while a WAL has frames (``live``) the
    count may be ahead of the file for a moment: then only the header itself is checked.
    """
    if len(header) < 100:
        return f"is cut short inside its header ({size} bytes)"
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        return "has a damaged header (no valid page size)"
    if live:
        return ""
    pages = int.from_bytes(header[28:32], "big")
    counted = header[24:28] == header[92:96] and pages > 0
    if size % page or (counted and size < pages * page):
        expected = f" of the {pages * page:,} its header gives" if counted else ""
        return f"is cut short: {size:,} bytes{expected} (truncated or damaged)"
    return ""


def _wal_has_frames(database: Path) -> bool:
    try:
        return os.path.getsize(f"{database}-wal") > 32  # past the WAL header: frames
    except OSError:
        return False


def _empty(folder: Path) -> bool:
    with os.scandir(folder) as entries:
        return next(entries, None) is None


def _first_missing(path: Path) -> Path:
    """The outermost directory above ``path`` that is missing or empty: a mount point, maybe."""
    for parent in reversed(path.parents):
        if not parent.is_dir() or _empty(parent):
            return parent
    return path.parent
