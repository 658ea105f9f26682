"""Files NexusMem edits that other people also own: rc files, git hooks, Claude Code settings,
the project registry. Each is read as text and replaced in one step, never left half-written.

A symlink (a dotfiles checkout, a shared hook) is written through: the link stays and its
target gets the new text. An error from the OS becomes one :class:`FileAccessError` line that
names the file, the error and what to do, never a traceback. :func:`obstacle` says, before or
after a failed write, what stands in the way: a full disk, a read-only mount, a permission.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import FileAccessError

__all__ = [
    "LOW_SPACE",
    "Obstacle",
    "file_error",
    "make_dir",
    "obstacle",
    "read_bytes",
    "read_text",
    "remove_file",
    "replace_file",
]

LOW_SPACE = 1 << 20  # less free space than this, and a failed write is the disk being full

_FIX = {
    errno.EACCES: "check the permissions of the file and of its directory",
    errno.EPERM: "check the permissions of the file and of its directory",
    errno.EROFS: "the file system is mounted read-only: make it writable",
    errno.ENOSPC: "free some disk space",
    errno.EISDIR: "a directory is in the way: move it aside",
}


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None if it is missing."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise FileAccessError(_message("read", path, err)) from err


def read_text(path: Path) -> str | None:
    """The file's text (bytes that are not UTF-8 kept as they are), or None if it is missing."""
    raw = read_bytes(path)
    return None if raw is None else raw.decode("utf-8", "surrogateescape")


def replace_file(path: Path, text: str, mode: int | None = None) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``: a reader
    sees the old file or the new one, never a mix. The file keeps its mode unless ``mode`` is
    given; a new one gets ``mode`` or the umask's default. A symlink is followed, so the link
    stays a link and its target is replaced."""
    try:
        _replace(Path(os.path.realpath(path)), text, mode)
    except OSError as err:
        raise FileAccessError(_message("write", path, err)) from err


def make_dir(path: Path, mode: int = 0o777) -> None:
    """Create the directory ``path`` (with ``mode``, less the umask) and its parents; one that
    exists is fine, and keeps its mode."""
    try:
        path.mkdir(mode=mode, parents=True, exist_ok=True)
    except OSError as err:
        raise FileAccessError(_message("create", path, err)) from err


def remove_file(path: Path) -> None:
    """Delete ``path``; one that is already gone is fine."""
    try:
        path.unlink(missing_ok=True)
    except OSError as err:
        raise FileAccessError(_message("remove", path, err)) from err


def _replace(path: Path, text: str, mode: int | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode is None and path.exists():
        mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".nexusmem-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8", "surrogateescape"))
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def file_error(verb: str, path: Path, err: OSError) -> FileAccessError:
    """The one-line error for an OS error while doing ``verb`` ("write", "append to") to
    ``path``, for callers that open files themselves."""
    return FileAccessError(_message(verb, path, err))


def _message(verb: str, path: Path, err: OSError) -> str:
    target = os.path.realpath(path)
    where = str(path) if target == os.path.abspath(path) else f"{path} (a link to {target})"
    if err.errno in (errno.ENOTDIR, errno.EEXIST) and (blocker := _file_in_the_way(target)):
        return (
            f"cannot {verb} {where}: {blocker} is a file, not a directory; "
            "move it aside and run the command again"
        )
    fix = _FIX.get(err.errno or 0, "fix that")
    return f"cannot {verb} {where}: {err.strerror or err}; {fix}, then run the command again"


def _file_in_the_way(target: str) -> str | None:
    """The nearest existing ancestor of ``target`` when it is not a directory."""
    for parent in Path(target).parents:
        if parent.exists():
            return None if parent.is_dir() else str(parent)
    return None


@dataclass(frozen=True)
class Obstacle:
    """What stops a file from being written: ``kind`` is ``full``, ``read-only`` or
    ``permission``; ``text`` is the cause and the remedy, for the end of a sentence."""

    kind: str
    text: str


def obstacle(path: Path) -> Obstacle | None:
    """Why nothing can be written at ``path`` (a file, or a directory to write into) right
    now, or None when nothing visible stands in the way. Asks the file system, writes nothing.
    """
    folder = path if path.is_dir() else path.parent
    try:
        stats = os.statvfs(folder)
    except (OSError, AttributeError):  # gone, or Windows (no statvfs)
        return None
    if stats.f_flag & os.ST_RDONLY:
        return Obstacle(
            "read-only", f"{folder} is on a file system mounted read-only: make it writable"
        )
    free = stats.f_bavail * stats.f_frsize
    if free < LOW_SPACE:
        return Obstacle(
            "full", f"the disk holding {folder} is full ({_size(free)} free): free some space"
        )
    if not _may_write(path if path.exists() else folder):
        return Obstacle(
            "permission", f"no permission to write {path}: make it and {folder} writable"
        )
    return None


def _may_write(path: Path) -> bool:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return True  # root writes whatever the permission bits say
    return os.access(path, os.W_OK)


def _size(count: int) -> str:
    return f"{count // 1024} KiB" if count < LOW_SPACE * 1024 else f"{count >> 20} MiB"
