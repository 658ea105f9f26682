"""Which repository a tool works on: its ``project_root``, or the client's roots, or the server's
working directory.

A client that offers roots says which folders the server may work in. Without a project_root,
the first root in a git repository is the repository (a root below a repository's top stands
for that repository); with one, it must lie inside a root or inside the repository a root is
in, so an agent cannot make the server set memory up in any directory it names. A search of
every project reads only the projects inside the roots, by the same rule. A client that offers
no roots (or an empty list) leaves all of it to the caller, as before.

Roots are asked once per connection (``ClientRoots``) and asked again after the client's
``notifications/roots/list_changed``. A client that does not answer ``roots/list`` within a few
seconds, or answers it with an error (some answer -32601), is treated as one that offers no
roots, as the reference filesystem server does; stderr says so once per connection. On the
2026-07-28 protocol there is no such request (the roots come with the call's retry) and
nothing to cache across calls: the SDK asks as part of each call.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from weakref import WeakKeyDictionary

from mcp.server.mcpserver import Context, ListRoots
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import ListRootsRequest, ListRootsResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from nexusmem_core.collectors.git import toplevel
from nexusmem_core.errors import NotAGitRepositoryError
from nexusmem_core.logging import get_logger
from nexusmem_core.paths import check_path

__all__ = [
    "ROOTS_TIMEOUT",
    "ClientRoots",
    "connection_of",
    "inside_roots",
    "project_path",
    "resource_path",
]

log = get_logger("mcp_roots")

ROOTS_TIMEOUT = 3.0  # seconds a client has to answer roots/list before it counts as offering none
_NONE = ListRootsResult(roots=[])


class ClientRoots:
    """The roots each connected client offers, asked once per connection (see the module's
    docstring). Connections are held weakly: a closed one takes its roots with it."""

    def __init__(self, timeout: float = ROOTS_TIMEOUT) -> None:
        self.timeout = timeout
        self._known: WeakKeyDictionary[Any, ListRootsResult] = WeakKeyDictionary()
        self._warned: WeakKeyDictionary[Any, bool] = WeakKeyDictionary()

    async def of(self, ctx: Context) -> ListRoots | ListRootsResult:
        """The roots of the client making this request; ``ListRoots`` on the 2026-07-28
        protocol, where the SDK asks for them as part of the call."""
        caps = ctx.client_capabilities
        if caps is None or caps.roots is None:
            return _NONE
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return ListRoots()
        if not ctx.session.can_send_request:
            return _NONE
        connection = connection_of(ctx.session)
        known = self._known.get(connection)
        if known is None:
            known = self._known[connection] = await self._ask(ctx, connection)
        return known

    def changed(self, session: Any) -> None:
        """The client said its roots changed: the next call asks again."""
        self._known.pop(connection_of(session), None)

    async def _ask(self, ctx: Context, connection: Any) -> ListRootsResult:
        try:
            return await ctx.session.send_request(
                ListRootsRequest(),
                ListRootsResult,
                request_read_timeout_seconds=self.timeout,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            )
        except (MCPError, ValidationError) as err:
            if not self._warned.get(connection):
                self._warned[connection] = True
                log.warning(
                    "mcp_roots_unavailable",
                    error=str(err) if isinstance(err, MCPError) else "not a roots/list result",
                    using="project_root, else the working directory, as if no roots were offered",
                )
            return _NONE


def connection_of(session: Any) -> Any:
    # The SDK's per-request session proxy names its connection only privately; without one
    # (a direct call) the session itself stands for it.
    return getattr(session, "_connection", session)


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
    return await _default(
        folders, "pass project_root, the path of a git repository inside one of them"
    )


async def resource_path(roots: ListRootsResult) -> Path:
    """The path of the repository a resource reads: a tool's without project_root, which
    resources do not take."""
    return await _default(
        _folders(roots), "add the repository to them, or read it with a tool's project_root"
    )


async def _default(folders: list[Path], way_out: str) -> Path:
    """The first root in a git repository; the working directory when there are no roots."""
    for folder in folders:
        found = await _repository(folder)
        if found is not None:
            return found
    if folders:
        raise ToolError(
            f"none of the client's roots is in a git repository ({_listed(folders)}): {way_out}"
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
