"""What went wrong, in the words an MCP client reads: one line naming the tool's parameters.

The core leaves the way out of a path that is not a repository, and of a repository with no
memory, to each adapter (see ``nexusmem_core.errors``); here it is ``project_root`` and
``sync_project``.
"""

from __future__ import annotations

from nexusmem_core.errors import NexusMemError, NotAGitRepositoryError, NotInitialisedError

__all__ = ["said"]


def said(err: NexusMemError) -> str:
    """``err`` as the client reads it. A UsageError names its argument as the core's functions
    do, and the tools' parameters have those names."""
    if isinstance(err, NotAGitRepositoryError):
        return f"{err}: pass project_root, the path of a git repository"
    if isinstance(err, NotInitialisedError):
        return f"{err}: call sync_project to build it from the repository"
    return str(err)
