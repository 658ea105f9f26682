"""Files NexusMem edits that other people also own: rc files, git hooks, Claude Code settings,
the project registry. Each is read as text and replaced in one step, never left half-written.

A symlink (a dotfiles checkout, a shared hook) is written through: the link stays and its
target gets the new text.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["read_text", "replace_file"]


def read_text(path: Path) -> str | None:
    """The file's text (bytes that are not UTF-8 kept as they are), or None if it is missing."""
    try:
        return path.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return None


def replace_file(path: Path, text: str, mode: int | None = None) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``: a reader
    sees the old file or the new one, never a mix. The file keeps its mode unless ``mode`` is
    given; a new one gets ``mode`` or the umask's default. A symlink is followed, so the link
    stays a link and its target is replaced."""
    path = Path(os.path.realpath(path))
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
