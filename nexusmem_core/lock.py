"""``.nexusmem/sync.lock``: one automatic sync at a time in a repository.

git's post-commit hook starts ``nexusmem sync --auto`` after every commit, so a rebase or a
script committing in a loop would start a pile of syncs that each wait for SQLite's write lock
and then find nothing left to do. The second one sees this lock and goes away instead.

The lock is that optimisation and nothing more: SQLite's own transaction keeps two syncs that
do overlap correct. So a lock whose owner is gone is simply taken over, and the one remaining
race (two processes taking over the same stale lock at the same instant) costs at most one
redundant sync. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
import time
from pathlib import Path
from types import TracebackType

__all__ = ["SYNC_LOCK", "Lock", "LockBusy", "acquire", "pid_alive"]

SYNC_LOCK = "sync.lock"
STALE_AFTER = 3600  # seconds: older than this, a live pid is more likely reused than syncing
GRACE = 10  # seconds a lock file without a readable owner may still be being written


class LockBusy(Exception):
    """Another live process holds the lock. An expected outcome, not an error."""

    def __init__(self, path: Path, pid: int | None) -> None:
        super().__init__(f"{path} is held by pid {pid}")
        self.path = path
        self.pid = pid


class Lock:
    """A held lock; leaving the ``with`` block (normally or by an exception) releases it."""

    def __init__(self, path: Path, token: str) -> None:
        self.path = path
        self.token = token

    def release(self) -> None:
        """Delete the file, unless someone took it over after deciding this owner was gone."""
        if _read(self.path) == self.token:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def __enter__(self) -> Lock:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def acquire(path: Path, now: float | None = None) -> Lock:
    """Take the lock at ``path`` or raise LockBusy naming the live owner.

    The file holds ``<pid> <start time> <random token>``. A lock whose pid is dead, that is
    older than an hour, or that is unreadable after a few seconds is stale and taken over.
    """
    now = time.time() if now is None else now
    token = f"{os.getpid()} {now:.0f} {secrets.token_hex(8)}"
    for _ in range(3):  # the owner may release it between our two looks
        if _create(path, token):
            return Lock(path, token)
        held = _read(path)
        if held is None:
            continue  # released meanwhile: try to create it again
        if not _stale(path, held, now):
            raise LockBusy(path, _pid(held))
        return _take_over(path, token)
    raise LockBusy(path, None)


def _create(path: Path, token: str) -> bool:
    """Create the lock already holding ``token``, or return False if it exists.

    The token is written to a private file first, then hard-linked into place, which fails
    like O_EXCL when the lock exists. So a sync killed at any instant leaves no lock or a
    whole one, never the empty file that made every automatic sync for ``GRACE`` seconds
    stand down. Where the filesystem has no hard links, O_EXCL and then the write.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    try:
        _write_private(tmp, token)
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        except OSError:  # no hard links here (FAT, some network filesystems)
            pass
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    try:
        _write_private(path, token)
    except FileExistsError:
        return False
    return True


def _write_private(path: Path, token: str) -> None:
    """A new file holding ``token``, 0600 like everything in the workspace."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(token)


def _take_over(path: Path, token: str) -> Lock:
    """Replace a stale lock in one step, then look again: of two processes doing this at
    once, the one whose token is not in the file stands down."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    _write_private(tmp, token)
    os.replace(tmp, path)
    held = _read(path)
    if held != token:
        raise LockBusy(path, _pid(held or ""))
    return Lock(path, token)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return None


def _pid(text: str) -> int | None:
    first = text.split(" ", 1)[0]
    return int(first) if first.isdigit() else None


def _stale(path: Path, text: str, now: float) -> bool:
    """Whether the owner written in ``text`` is gone (or too old to trust its pid)."""
    parts = text.split()
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
        # Unreadable: a lock created a moment ago may not have its content yet.
        try:
            return now - path.stat().st_mtime >= GRACE
        except FileNotFoundError:
            return True
    pid, started = int(parts[0]), int(parts[1])
    return now - started >= STALE_AFTER or not pid_alive(pid)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (it may belong to another user)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return _windows_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists; it is just not ours to signal
    return True


def _windows_alive(pid: int) -> bool:
    # os.kill(pid, 0) on Windows sends CTRL_C_EVENT (0): ask the kernel instead.
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
    handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
    if not handle:
        return bool(kernel32.GetLastError() == 5)  # ERROR_ACCESS_DENIED: it exists
    try:
        code = ctypes.c_ulong()
        kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        return code.value == 259  # STILL_ACTIVE
    finally:
        kernel32.CloseHandle(handle)
