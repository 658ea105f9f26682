"""Connections: one factory, WAL, busy_timeout, and one writer transaction per operation.

Several MCP servers, hooks and a sync may open the same file at once. WAL lets readers run beside
the single writer; ``BEGIN IMMEDIATE`` takes the write lock up front so a transaction never fails
half-way on a lock upgrade; busy_timeout makes a second writer wait instead of failing, and a
writer keeps waiting for as long as another one's transaction lasts (see ``WRITE_WAIT``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar, cast

import aiosqlite
import anyio.to_thread

from ..errors import SYNC, StoreError
from ..logging import get_logger
from ..private import create_private
from . import failures
from .migrations import LATEST, migrate, schema_version

__all__ = [
    "DB_ERRORS",
    "MMAP_BYTES",
    "Database",
    "VectorSupport",
    "open_database",
    "share_work",
    "sqlite_module",
]

BUSY_TIMEOUT_MS = 15_000
# How long a write waits for another process's transaction, one busy_timeout after another.
# A first sync of a 30,000-commit history holds the write lock for 20 s and more: a sync, a
# review or a post-commit `sync --auto` started meanwhile waits its turn instead of failing.
WRITE_WAIT = 30 * 60
MMAP_BYTES = 1 << 30  # of the file the second, read-only connection maps (address space only)

log = get_logger("store")
T = TypeVar("T")


def sqlite_module() -> ModuleType:
    """The stdlib ``sqlite3`` if it can load extensions, else the drop-in ``sqlean`` build.

    pyenv's and macOS's system Pythons are built without ``enable_load_extension``; sqlean.py
    ships a SQLite that has it (and FTS5) on Linux, macOS and Windows.
    """
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        import sqlean  # type: ignore[import-untyped]
    except ImportError:
        return sqlite3
    return sqlean  # type: ignore[no-any-return]


DB_ERRORS: tuple[type[Exception], ...] = (
    sqlite3.DatabaseError,
    sqlite_module().DatabaseError,
)


@dataclass(frozen=True)
class VectorSupport:
    """Whether sqlite-vec loaded into this connection, and why not if it did not."""

    loaded: bool
    version: str | None = None
    reason: str | None = None


@functools.cache
def _vec_path() -> str:
    """The sqlite-vec extension the package ships, found without importing the package: its
    ``__init__`` imports numpy when numpy is installed (0.1 s of every process that opens
    memory, for helpers NexusMem never calls)."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the sqlite-vec package is not installed")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def _load_vec(conn: Any, wanted: bool) -> VectorSupport:
    if not wanted:
        return VectorSupport(False, reason="disabled by NEXUSMEM_VECTOR=off")
    if not hasattr(conn, "enable_load_extension"):
        return VectorSupport(
            False, reason="this Python's SQLite cannot load extensions; install sqlean.py"
        )
    try:
        conn.enable_load_extension(True)
        conn.load_extension(_vec_path())
        conn.enable_load_extension(False)
        (version,) = conn.execute("select vec_version()").fetchone()
    except Exception as err:  # any failure here means: run on BM25
        return VectorSupport(False, reason=f"sqlite-vec could not be loaded: {err}")
    return VectorSupport(True, version=str(version))


def _connector(
    path: Path, read_only: bool, want_vec: bool, out: list[VectorSupport], immutable: bool = False
) -> Any:
    module = sqlite_module()
    mode = "?mode=ro&immutable=1" if immutable else "?mode=ro" if read_only else ""

    def connect() -> Any:
        uri = f"file:{path.as_posix()}{mode}"
        conn = module.connect(
            uri, uri=True, isolation_level=None, check_same_thread=False, timeout=15
        )
        # Nothing here reads the file: a file that is not a database fails in the pragmas
        # run after connecting, where the connection can still be closed cleanly.
        out.append(_load_vec(conn, want_vec))
        return conn

    return connect


class Database:
    """An aiosqlite connection plus the writer discipline every operation follows."""

    def __init__(
        self,
        conn: aiosqlite.Connection,
        path: Path,
        vectors: VectorSupport,
        *,
        immutable: bool = False,
    ) -> None:
        self.conn = conn
        self.path = path
        self.vectors = vectors
        self.immutable = immutable
        self._sibling: Database | None = None
        self._sibling_failed = os.cpu_count() == 1  # nothing to run beside this one
        self._running = 0  # reads in flight
        self._opening = asyncio.Lock()  # two arms asking at once open one second connection

    async def fetch_each(
        self, statements: Sequence[tuple[str, Sequence[Any]]]
    ) -> list[list[tuple[Any, ...]]]:
        """The rows of each read statement, running two at a time: on this connection and on
        a second, read-only one opened on first use, each in its own thread (SQLite lets go
        of the GIL while it steps). For searches whose FTS5 scoring is CPU-bound; WAL lets
        both read at once. Inside a write transaction the second connection could not see
        this one's uncommitted rows, so then, when it cannot open, when it is busy with the
        other arm of a hybrid search, or on a one-core machine, the statements run one after
        another here."""
        sibling = await self.beside() if len(statements) > 1 else self
        if sibling._running:  # busy with another arm's search: wait here
            sibling = self
        results: list[list[tuple[Any, ...]]] = [[] for _ in statements]

        async def read(db: Database, item: tuple[int, tuple[str, Sequence[Any]]]) -> None:
            i, (sql, params) = item
            results[i] = await db.fetchall(sql, params)

        await share_work((self, sibling), enumerate(statements), read)
        return results

    async def beside(self) -> Database:
        """A second, read-only connection to run a read beside this one's, in another thread
        (opened on first use, with sqlite-vec when this one has it); this connection itself
        inside a write transaction, or when the second cannot open."""
        if self.conn.in_transaction:
            return self
        async with self._opening:
            if self._sibling is None and not self._sibling_failed:
                self._sibling = await self._open_sibling()
                self._sibling_failed = self._sibling is None
        return self._sibling or self

    @asynccontextmanager
    async def reader(self) -> AsyncIterator[Database]:
        """A read-only connection of its own for a long read beside this one's, closed after:
        unlike ``beside``'s, not memory-mapped, so what it reads does not stay in this
        process's resident memory (a sync's must not grow with the size of the memory). This
        connection itself inside a write transaction, or when that one cannot open."""
        if self.conn.in_transaction or os.cpu_count() == 1:
            yield self
            return
        try:
            other = await _connect(self.path, True, False, immutable=self.immutable)
        except StoreError as err:
            log.debug("second_reader_unavailable", database=str(self.path), error=str(err))
            yield self
            return
        try:
            await other.execute(f"pragma busy_timeout = {BUSY_TIMEOUT_MS}")
            yield other
        finally:
            await other.close()

    async def _open_sibling(self) -> Database | None:
        wanted = self.vectors.loaded
        try:
            sibling = await _connect(self.path, True, wanted, immutable=self.immutable)
        except StoreError as err:
            log.debug("second_reader_unavailable", database=str(self.path), error=str(err))
            return None
        if sibling.vectors.loaded != wanted:  # k-NN there would fail: read here instead
            await sibling.close()
            return None
        sibling._sibling_failed = True  # a second connection never opens a third
        await sibling.execute(f"pragma busy_timeout = {BUSY_TIMEOUT_MS}")
        # Memory-mapped reads: the approximate k-NN reads thousands of rows by seq from all
        # over the file, 2.5x faster mapped than through the 2 MB page cache (2,000 rows:
        # 10 -> 3.9 ms at 100k nodes). Read-only, so nothing is ever written through the map.
        await sibling.execute(f"pragma mmap_size = {MMAP_BYTES}")
        return sibling

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        self._running += 1
        try:
            return await self._call(_fetchall, sql, params)
        finally:
            self._running -= 1

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        self._running += 1
        try:
            return await self._call(_fetchone, sql, params)
        finally:
            self._running -= 1

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return the number of rows it changed."""
        return await self._call(_execute, sql, params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> int:
        """Run one statement per row; return the rows changed (triggers' changes excluded)."""
        return await self._call(_executemany, sql, rows)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(connection, *args)`` on the connection's own thread: its statements run
        one after another, with no other task's statement between them."""
        return await self._call(work, *args)

    async def _call(self, work: Callable[..., T], *args: Any) -> T:
        """``work(connection, *args)`` on the connection's own thread, in one trip through
        aiosqlite's queue. Its cursor API takes three (execute, fetch, close), 65 us each on
        this machine: a search runs ~20 statements, a no-op sync ~40. ``_execute`` is
        aiosqlite's own way to queue a call (what its ``execute_fetchall`` uses)."""
        return cast(T, await self.conn._execute(work, self.conn._conn, *args))

    @asynccontextmanager
    async def page_cache(self, kib: int) -> AsyncIterator[None]:
        """A page cache of up to ``kib`` KiB on this connection for the block, then the one
        it had. Pages are held only as they are read or written, so a small write keeps a
        small cache; a bulk one stops spilling its random index inserts to the WAL."""
        (before,) = await self.fetchone("pragma cache_size") or (-2000,)
        await self.execute(f"pragma cache_size = {-int(kib)}")
        try:
            yield
        finally:
            with contextlib.suppress(*DB_ERRORS):  # a closed connection has no cache to give back
                await self.execute(f"pragma cache_size = {int(before)}")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Database]:
        """One write transaction: all of it lands, or (on any exception) none of it."""
        await self._begin()
        try:
            yield self
            await self.conn.execute("commit")  # a full disk often fails here, at the WAL write
        except BaseException as err:
            # SQLite may already have rolled back by itself (a full disk, an I/O error): a
            # second rollback would fail and hide the error that matters.
            if self.conn.in_transaction:
                with contextlib.suppress(*DB_ERRORS):
                    await self.conn.execute("rollback")
            if isinstance(err, DB_ERRORS) and failures.unwritable(self.path, err):
                # A full disk or a read-only mount: one line with the remedy, in every adapter.
                raise StoreError(failures.describe(self.path, err)) from err
            raise

    @asynccontextmanager
    async def checkpoint_aside(self) -> AsyncIterator[Callable[[], None]]:
        """For a bulk write: its commit leaves the WAL as it is, and the function yielded
        copies it into the database on a connection of its own, in a thread, while the block
        goes on; leaving the block waits for that.

        A commit past ``wal_autocheckpoint`` pages checkpoints before it returns: 0.4 s after
        a first sync of 50k commits, spent beside the common words' lists this way. A
        checkpoint that fails or is cut short leaves the WAL to the next commit or close: the
        database is whole either way."""
        (before,) = await self.fetchone("pragma wal_autocheckpoint") or (1000,)
        await self.execute("pragma wal_autocheckpoint = 0")
        started: list[threading.Thread] = []

        def start() -> None:
            if not started:
                started.append(threading.Thread(target=_checkpoint, args=(self.path,)))
                started[0].start()

        try:
            yield start
        finally:
            with contextlib.suppress(*DB_ERRORS):  # a closed connection checkpoints as it closes
                await self.execute(f"pragma wal_autocheckpoint = {int(before)}")
            for thread in started:
                await anyio.to_thread.run_sync(thread.join)

    async def _begin(self) -> None:
        """``BEGIN IMMEDIATE``, waiting for another writer however long it writes (up to
        ``WRITE_WAIT``). SQLite gives up after one busy_timeout; the lock it waited for is
        held only by a live process that is still writing, so waiting on is the answer."""
        started = time.monotonic()
        while True:
            try:
                await self.conn.execute("begin immediate")
                return
            except DB_ERRORS as err:
                waited = time.monotonic() - started
                if not _busy(err) or waited >= WRITE_WAIT:
                    raise
                log.warning(
                    "waiting_for_writer",
                    database=str(self.path),
                    waited_s=round(waited),
                    hint="another NexusMem process is writing this memory (a long sync?)",
                )

    async def close(self) -> None:
        if self._sibling is not None:
            sibling, self._sibling = self._sibling, None
            await sibling.close()
        await self.conn.close()


def _checkpoint(path: Path) -> None:
    """Copy the WAL into the database without waiting on readers or writers (what is left,
    the next commit or the last close copies)."""
    try:
        conn = sqlite_module().connect(str(path), isolation_level=None, timeout=0)
    except DB_ERRORS:
        return
    try:
        conn.execute("pragma wal_checkpoint(passive)").fetchall()
    except DB_ERRORS as err:
        log.debug("checkpoint_failed", database=str(path), error=str(err))
    finally:
        conn.close()


# What runs on the connection's thread, one call a statement (see ``Database._call``).
def _fetchall(conn: Any, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with contextlib.closing(conn.execute(sql, params)) as cursor:
        return [tuple(row) for row in cursor.fetchall()]


def _fetchone(conn: Any, sql: str, params: Sequence[Any]) -> tuple[Any, ...] | None:
    with contextlib.closing(conn.execute(sql, params)) as cursor:
        row = cursor.fetchone()
    return None if row is None else tuple(row)


def _execute(conn: Any, sql: str, params: Sequence[Any]) -> int:
    with contextlib.closing(conn.execute(sql, params)) as cursor:
        return int(cursor.rowcount)


def _executemany(conn: Any, sql: str, rows: Iterable[Sequence[Any]]) -> int:
    with contextlib.closing(conn.executemany(sql, rows)) as cursor:
        return int(cursor.rowcount)


async def share_work(
    connections: tuple[Database, Database],
    items: Iterable[T],
    work: Callable[[Database, T], Awaitable[None]],
) -> None:
    """``work`` on every item, on both connections at once (one when they are the same): each
    takes the next item left, so a slow one does not hold the other up. The first error
    surfaces as itself (gather, not a task group, which would wrap it), after both stop."""
    queue = iter(items)

    async def drain(db: Database) -> None:
        for item in queue:
            await work(db, item)

    first, second = connections
    workers = [drain(first)] if second is first else [drain(first), drain(second)]
    outcomes = await asyncio.gather(*workers, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome


def _busy(err: BaseException) -> bool:
    name = str(getattr(err, "sqlite_errorname", "") or "")
    return name.startswith("SQLITE_BUSY") or "database is locked" in str(err)


async def _connect(
    path: Path, read_only: bool, vectors: bool, *, immutable: bool = False
) -> Database:
    support: list[VectorSupport] = []
    conn = aiosqlite.Connection(
        _connector(path, read_only, vectors, support, immutable), iter_chunk_size=256
    )
    try:
        await conn.__aenter__()
    except Exception as err:
        # aiosqlite stops its worker thread on a failed connect without waiting for it; let
        # it finish while this event loop is still alive to receive its last callback.
        await anyio.to_thread.run_sync(conn._thread.join, 5.0)
        raise StoreError(f"{path}: cannot open the memory database ({err})") from err
    return Database(conn, path, support[0], immutable=immutable)


async def _prepare(db: Database, read_only: bool) -> None:
    """Pragmas, the schema check and (when writable) the migrations."""
    path = db.path
    await db.execute(f"pragma busy_timeout = {BUSY_TIMEOUT_MS}")
    await db.execute("pragma foreign_keys = on")
    # What is deleted is overwritten with zeros as it is freed, rather than left in free pages
    # and in the free space of pages until a VACUUM (which a killed forget never reached).
    await db.execute("pragma secure_delete = on")
    version = await schema_version(db)
    if version == 0:
        await _check_not_foreign(db)
    if version > LATEST:
        raise StoreError(
            f"{path} was written by a newer NexusMem (schema v{version}, this one knows "
            f"v{LATEST}): upgrade NexusMem"
        )
    if not read_only:
        await db.execute("pragma journal_mode = wal")
        await db.execute("pragma synchronous = normal")
        await migrate(db)
    elif version == 0:
        # No migration at all: not a database an older NexusMem wrote, but an empty file (an
        # init or a copy cut short). A writable open builds the schema in it.
        raise StoreError(
            f"{path} is empty: it holds no memory yet; {SYNC} for that repository to build it"
        )
    elif version < LATEST:
        raise StoreError(
            f"{path} is from an older NexusMem (schema v{version}): {SYNC} to upgrade it"
        )


async def _check_not_foreign(db: Database) -> None:
    """Refuse a SQLite database that holds tables but none of NexusMem's: migrating would add
    NexusMem's tables to someone else's data. (NexusMem makes ``schema_migrations`` before
    any other table, so a memory cut short before its first migration is not taken for one.)"""
    names = {name for (name,) in await db.fetchall("select name from sqlite_master")}
    if names and "schema_migrations" not in names:
        raise StoreError(
            f"{db.path} is not a NexusMem database (it holds other tables): move it aside, then "
            f"{SYNC} to build memory there"
        )


@asynccontextmanager
async def open_database(
    path: Path, *, read_only: bool = False, vectors: bool = True
) -> AsyncIterator[Database]:
    """Open (and, when writable, migrate) the memory database at ``path``.

    A read-only open still reads a database nothing can write: on a read-only mount, in a
    directory without write permission, on a full disk. WAL mode cannot create its
    shared-memory file there, so the file is read as it stands (``immutable``: no locks, and
    the last checkpoint's content; nothing can write it meanwhile, for the same reason).

    A new database is made empty and 0600 first: SQLite would create it with the umask's mode,
    and gives its ``-wal`` and ``-shm`` the mode of the database file.
    """
    if not read_only:
        with contextlib.suppress(OSError):  # SQLite's own open then says what is wrong
            create_private(path)
    db = await _connect(path, read_only, vectors)
    try:
        try:
            await _prepare(db, read_only)
        except DB_ERRORS as err:
            if not (read_only and failures.unwritable(path, err)):
                raise
            await db.close()
            db = await _connect(path, read_only, vectors, immutable=True)
            await _prepare(db, read_only)
        yield db
    except DB_ERRORS as err:
        raise StoreError(failures.describe(path, err)) from err
    finally:
        await db.close()
