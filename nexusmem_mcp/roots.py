"""Which repository a tool works on: its ``project_root``, or the client's roots, or the server's
working directory.

A client that offers roots says which folders the server may work in. Without a project_root,
the first root in a git repository is the repository (a root below a repository's top stands
for that repository).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListRootsResult

from nexusmem_core.collectors.git import toplevel
from nexusmem_core.errors import NotAGitRepositoryError
from nexusmem_core.paths import check_path

__all__ = ["project_path"]


async def project_path(project_root: str | None, roots: ListRootsResult) -> Path:
    """The path of the repository a tool call names (see the module's docstring)."""
    folders = _folders(roots)
    if project_root:
        check_path(project_root, "project_root")
        return Path(project_root)
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


def _listed(folders: list[Path]) -> str:
    return ", ".join(str(folder) for folder in folders)
