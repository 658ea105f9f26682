"""Which repository a tool works on: its ``project_root``, or the client's roots, or the server's
working directory.

A client that offers roots says which folders the server may work in. Without a project_root,
the first root in a git repository is the repository (a root below a repository's top stands
for that repository); with one, it must lie inside a root or inside the repository a root is
in, so an agent cannot make the server set memory up in any directory it names. A search of
every project reads only the projects inside the roots, by the same rule. A client that offers
no roots (or an empty list) leaves all of it to the caller, as before.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListRootsResult

from nexusmem_core.collectors.git import toplevel
from nexusmem_core.errors import NotAGitRepositoryError
from nexusmem_core.paths import check_path

__all__ = ["inside_roots", "project_path"]


async def project_path(project_root: str | None, roots: ListRootsResult) -> Path:
    """The path of the repository a tool call names (see the module's docstring)."""
    folders = _folders(roots)
    if project_root:
        check_path(project_root, "project_root")
        path = Path(project_root)
        if folders and not await _allowed(path, folders):
            raise ToolError(
                f"project_root {project_root} is outside the client's roots "
                f"({_listed(folders)}): pass a path inside one of them, or omit project_root"
            )
        return path
    for folder in folders:
        found = await _repository(folder)
        if found is not None:
            return found
    if folders:
        raise ToolError(
            f"none of the client's roots is in a git repository ({_listed(folders)}): "
            "pass project_root, the path of a git repository inside one of them"
        )
    return Path.cwd()


def inside_roots(roots: ListRootsResult) -> Callable[[Path], Awaitable[bool]] | None:
    """For a search of every project: whether a project's root may be read, by the same rule
    as ``project_root``; None when the client offers no roots (every project may)."""
    folders = _folders(roots)
    if not folders:
        return None

    async def allowed(path: Path) -> bool:
        return await _allowed(path, folders)

    return allowed


def _folders(roots: ListRootsResult) -> list[Path]:
    """The client's ``file://`` roots as paths, in its order."""
    folders = []
    for root in roots.roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file":
            path = unquote(uri.path)
            check_path(path, "project_root (the client's root)")
            folders.append(Path(path))
    return folders


async def _repository(folder: Path) -> Path | None:
    """The top of the git work tree ``folder`` is in, or None."""
    try:
        return await toplevel(folder)
    except NotAGitRepositoryError:
        return None


async def _allowed(path: Path, folders: list[Path]) -> bool:
    """Whether ``path``, symbolic links and ``..`` resolved, lies inside a root or inside the
    repository a root is in."""
    real = _real(path)
    if any(real.is_relative_to(_real(folder)) for folder in folders):
        return True
    for folder in folders:
        top = await _repository(folder)
        if top is not None and real.is_relative_to(_real(top)):
            return True
    return False


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


def _listed(folders: list[Path]) -> str:
    return ", ".join(str(folder) for folder in folders)
