"""Whole-file maintenance: a private backup copy, and compaction after text was removed.

Replacing or deleting a row does not take its old text out of the file. SQLite leaves it in
free pages and free space inside pages (every connection has ``secure_delete`` on, which zeroes
most of it as it is freed, not all), FTS5 keeps the terms of replaced rows in its segments
until they are merged, and the WAL keeps every frame written since the last checkpoint. So an
operation that must leave no trace (scrub-secrets, forget, prune-source) ends with
:func:`compact`.

A process killed between that operation's commit and the end of its compaction would leave the
text behind for good: no sync compacts. So the operation marks the steps it leaves to do
(:func:`mark_due`) in its own transaction, :func:`compact` clears each once it is done, and
the next open of the memory finishes what is still marked (:func:`finish_due`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import FileAccessError, StoreError
from .db import DB_ERRORS, Database
from .fts import rebuild_cjk

__all__ = ["Compaction", "backup", "compact", "due", "finish_due", "mark_due"]


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


async def mark_due(db: Database, *, rebuild_fts: bool = False) -> None:
    """Inside the transaction that removes text: mark the compaction it leaves to do (a VACUUM
    and a truncated WAL; with ``rebuild_fts``, the FTS rebuild first)."""
    steps = ["vacuum", "wal", *(["fts"] if rebuild_fts else [])]
    await db.executemany(
        "insert into compaction_due (step) values (?) on conflict do nothing",
        [(step,) for step in steps],
    )


async def due(db: Database) -> set[str]:
    """The compaction steps still marked: some removed text may still be in the file."""
    return {step for (step,) in await db.fetchall("select step from compaction_due")}


async def finish_due(db: Database) -> Compaction | None:
    """Run the compaction steps an interrupted operation left marked; None if there were none.
    Must run outside a transaction, on a writable connection."""
    return await compact(db, rebuild_fts=False, vacuum=False) if await due(db) else None


async def compact(db: Database, *, rebuild_fts: bool, vacuum: bool) -> Compaction:
    """Rebuild the FTS index (``rebuild_fts``), VACUUM (``vacuum``, or whenever there are free
    pages, which an earlier failed VACUUM may have left), then truncate the WAL; and whatever of
    this :func:`mark_due` marked. Each marked step is cleared once done.

    Must run outside a transaction. The WAL cannot be truncated while another connection is
    in the middle of a read; SQLite removes it when the last connection closes.
    """
    marked = await due(db)
    done = Compaction()
    try:
        if rebuild_fts or "fts" in marked:
            async with db.transaction():
                await db.execute("insert into nodes_fts(nodes_fts) values ('rebuild')")
                await rebuild_cjk(db)
                await _clear(db, "fts")
            done.fts_rebuilt = True
        (free,) = await db.fetchone("pragma freelist_count") or (0,)
        if vacuum or free or "vacuum" in marked:
            await db.execute("vacuum")
            done.vacuumed = True
            if "vacuum" in marked:
                async with db.transaction():
                    await _clear(db, "vacuum")
    except DB_ERRORS as err:
        done.error = str(err)
        return done
    except StoreError as err:  # the disk filled up, or was remounted read-only, meanwhile
        done.error = str(err)
        return done
    done.wal_truncated = await _truncate_wal(db)
    if done.wal_truncated and "wal" in marked:
        # Cleared only now: until the truncation, the WAL's older frames held the text. This
        # commit writes one small page to the fresh WAL, which the second truncation takes.
        with contextlib.suppress(*DB_ERRORS, StoreError):  # still marked: the next open does it
            async with db.transaction():
                await _clear(db, "wal")
            await _truncate_wal(db)
    return done


async def _clear(db: Database, step: str) -> None:
    await db.execute("delete from compaction_due where step = ?", (step,))


async def _truncate_wal(db: Database) -> bool:
    """Checkpoint the WAL into the file and truncate it to nothing; False if a reader kept it."""
    busy, _, _ = await db.fetchone("pragma wal_checkpoint(TRUNCATE)") or (1, 0, 0)
    return not busy
