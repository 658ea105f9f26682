"""Nobody else reads it: the modes of what NexusMem keeps on disk, whatever the umask.

Memory holds commit messages, diffs, shell commands and what they printed. So the workspace
``<repo>/.nexusmem/`` is 0700 and every file in it 0600 (the database, its ``-wal`` and
``-shm``, ``config.json``, the backups), and so are the hook logs and key in
``$NEXUSMEM_HOME``. A mode given to ``open`` or ``mkdir`` is an upper bound (the umask only
takes bits away), so what NexusMem creates itself is private under any umask. SQLite creates
the database's ``-wal`` and ``-shm`` with the database file's own mode (its unix VFS copies it),
which is why the database is made, empty and 0600, before SQLite first opens it.

A workspace or log made by an older NexusMem, by a copy, or loosened by hand is tightened the
next time memory is opened (:func:`tighten`); the caller says in one line what changed.
Standard library only.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "create_private",
    "home_paths",
    "tighten",
    "workspace_paths",
]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
BACKUP_DIR = "backups"
# NexusMem's own files in the workspace; anything else put there is left as it is.
WORKSPACE_FILES = (
    "memory.db",
    "memory.db-wal",
    "memory.db-shm",
    "memory.db-journal",
    "config.json",
    "config.checked.json",
    "index.checked",
    ".gitignore",
    "owner",
    "sync.lock",
    BACKUP_DIR,
)
# What the hooks and the registry keep in $NEXUSMEM_HOME (hooks/ holds the shell scripts the
# rc files source: the owner's shell reads them, and nobody else needs to).
HOME_FILES = (
    "shell-history.jsonl",
    "agent-events.jsonl",
    "agent-notes.jsonl",
    "agent-drops.json",
    "hook.key",
    "projects.json",
    "settings.checked.json",
    "configs.checked.json",
    "agent",
    "agent-created.json",
    "config.json",
    "hooks",
)


def create_private(path: Path) -> bool:
    """Create ``path`` empty with mode 0600 unless it exists; True if it was created."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
    except FileExistsError:
        return False
    return True


def workspace_paths(workspace: Path) -> list[Path]:
    """The workspace, NexusMem's files in it, and the backups in its ``backups/``."""
    return [
        workspace,
        *(workspace / name for name in WORKSPACE_FILES),
        *_entries(workspace / BACKUP_DIR),
    ]


def home_paths(home: Path) -> list[Path]:
    """The home directory, the logs, key and registry in it, and the hook scripts."""
    return [home, *(home / name for name in HOME_FILES), *_entries(home / "hooks")]


def tighten(paths: Iterable[Path]) -> list[str]:
    """Take the group and other bits off each of ``paths`` that has any; return what changed,
    as ``"<path> 0644 -> 0600"``. Missing paths, symbolic links (their target may be anyone's)
    and files of another owner are left alone, as is a file the OS will not change (a
    read-only mount): there is nothing to do about it here."""
    changed = []
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISLNK(info.st_mode) or not mode & 0o077 or not _mine(info):
            continue
        try:
            os.chmod(path, mode & 0o700)
        except OSError:
            continue
        changed.append(f"{path} {mode:04o} -> {mode & 0o700:04o}")
    return changed


def _entries(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as found:
            return [Path(entry.path) for entry in found]
    except OSError:  # missing, or not a directory
        return []


def _mine(info: os.stat_result) -> bool:
    return not hasattr(os, "geteuid") or info.st_uid == os.geteuid()
