"""Which recorded commands belong to a repository: those whose working directory is inside it
or inside one of its worktrees, compared as resolved paths (symlinks and ``..`` handled)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from ..git import git

__all__ = ["inside", "repository_roots"]


async def repository_roots(root: Path) -> list[str]:
    """The resolved paths of every worktree of the repository at ``root``."""
    out = await git(root, "worktree", "list", "--porcelain", check=False)
    paths = {os.path.realpath(root)}
    for line in out.splitlines():
        if line.startswith("worktree "):
            paths.add(os.path.realpath(line[len("worktree ") :]))
    return sorted(paths)


@lru_cache(maxsize=4096)
def _resolved(cwd: str) -> str:
    # A log holds few distinct directories and many commands: resolving each once took a
    # 100k-line first sync from 3.9 s of lstat calls to a fraction of that.
    return os.path.realpath(cwd)


def inside(cwd: object, roots: list[str]) -> bool:
    """True when ``cwd`` (as a shell reported it) lies in one of ``roots``."""
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        return False
    try:
        path = _resolved(cwd)
    except ValueError:  # a NUL byte or a lone surrogate: no directory has such a name
        return False
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)
