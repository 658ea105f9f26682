"""Whole-file maintenance: a private backup copy, and compaction after text was removed.

Replacing or deleting a row does not take its old text out of the file. SQLite leaves it in
free pages and free space inside pages, FTS5 keeps the terms of replaced rows in its segments
until they are merged, and the WAL keeps every frame written since the last checkpoint. So an
operation that must leave no trace (scrub-secrets, forget) ends with :func:`compact`.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import FileAccessError, StoreError
from .db import DB_ERRORS, Database
from .fts import rebuild_cjk

__all__ = ["Compaction", "backup", "compact"]


async def backup(db: Database, folder: Path, stem: str = "memory") -> Path:
    """Copy the database as it is now (compact, consistent) to a new ``folder/stem-<time>.db``
    of mode 0600; return its path. Must run outside a transaction."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for n in itertools.count():
            path = folder / f"{stem}-{stamp}{f'-{n}' if n else ''}.db"
            try:
                # Made empty and private first: VACUUM INTO fills an empty file and keeps its
                # mode, where a file it creates itself would get the umask's (often 0644).
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                break
            except FileExistsError:
                continue
        os.chmod(path, 0o600)
    except OSError as err:
        raise FileAccessError(
            f"cannot create a backup in {folder}: {err.strerror or err}; free some space or "
            "fix the permissions, then run the command again"
        ) from err
    try:
        await db.execute("vacuum into ?", (str(path),))
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


@dataclass
class Compaction:
    """What :func:`compact` did, and what it could not."""

    fts_rebuilt: bool = False
    vacuumed: bool = False
    wal_truncated: bool = False
    error: str | None = None  # why the rebuild or the VACUUM failed


async def compact(db: Database, *, rebuild_fts: bool, vacuum: bool) -> Compaction:
    """Rebuild the FTS index (``rebuild_fts``), VACUUM (``vacuum``, or whenever there are free
    pages, which an earlier failed VACUUM may have left), then truncate the WAL.

    Must run outside a transaction. The WAL cannot be truncated while another connection is
    in the middle of a read; SQLite removes it when the last connection closes.
    """
    done = Compaction()
    try:
        if rebuild_fts:
            async with db.transaction():
                await db.execute("insert into nodes_fts(nodes_fts) values ('rebuild')")
                await rebuild_cjk(db)
            done.fts_rebuilt = True
        (free,) = await db.fetchone("pragma freelist_count") or (0,)
        if vacuum or free:
            await db.execute("vacuum")
            done.vacuumed = True
    except DB_ERRORS as err:
        done.error = str(err)
        return done
    except StoreError as err:  # the disk filled up, or was remounted read-only, meanwhile
        done.error = str(err)
        return done
    busy, _, _ = await db.fetchone("pragma wal_checkpoint(TRUNCATE)") or (1, 0, 0)
    done.wal_truncated = not busy
    return done
