"""Why the memory database could not be used, as one line that says what to do.

SQLite names a full disk SQLITE_FULL, but just as often a "disk I/O error" (the WAL's
shared-memory file could not grow); a read-only mount or directory shows up as SQLITE_READONLY
or as "unable to open database file" (WAL mode must create ``-wal`` and ``-shm`` beside the
database). Each cause has its own remedy, and only a damaged file is cured by moving it aside:
saying so for a full disk would send the user off to throw their memory away.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import SEARCH, SYNC
from ..files import obstacle

__all__ = ["describe", "unwritable"]

_DAMAGED = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
_NO_WRITE = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_IOERR", "SQLITE_FULL")


def _name(err: BaseException) -> str:
    return str(getattr(err, "sqlite_errorname", "") or "")


def unwritable(path: Path, err: BaseException) -> bool:
    """True when ``err`` came from the file system refusing writes (full, read-only, no
    permission): a read-only open can still read the file as it is."""
    return _name(err).startswith(_NO_WRITE) and obstacle(path) is not None


def describe(path: Path, err: BaseException) -> str:
    """The one-line message for a database error at ``path`` (a StoreError's: the adapter
    words its way out, see ``errors.StoreError``)."""
    name = _name(err)
    if name in _DAMAGED:
        return f"{path}: {err}; move the file aside and {SYNC} to build memory anew"
    blocked = obstacle(path)
    if blocked is not None and name.startswith(_NO_WRITE):
        return (
            f"cannot write {path}: {blocked.text}, then run the command again "
            f"(memory is unchanged; {SEARCH} can still read it)"
        )
    if name == "SQLITE_FULL":
        return (
            f"cannot write {path}: the database or disk is full; free some space, then run the "
            "command again (memory is unchanged)"
        )
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return f"{path} is busy: another process held it for too long; run the command again"
    if name.startswith(("SQLITE_CANTOPEN", "SQLITE_IOERR", "SQLITE_READONLY")):
        return (
            f"cannot use {path}: {err}; check the disk and the file's permissions, then run "
            "the command again"
        )
    return f"{path}: {err}; move the file aside and {SYNC} to build memory anew"
