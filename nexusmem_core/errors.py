"""The project's own errors.

The core raises these; each adapter (CLI, MCP) translates them once. Every message is one line
that says what went wrong and what to do next.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "FileAccessError",
    "GitError",
    "GitNotFoundError",
    "NexusMemError",
    "NotAGitRepositoryError",
    "NotInitialisedError",
    "StoreError",
    "UsageError",
]


class NexusMemError(Exception):
    """Base of every expected failure; ``str(err)`` is the one-line message for the user."""


class UsageError(NexusMemError):
    """An argument the caller gave is not usable."""


class ConfigError(NexusMemError):
    """A configuration file is unreadable or invalid. The file is never rewritten."""


class FileAccessError(NexusMemError):
    """A file NexusMem must read or replace cannot be: no permission, a read-only disk, a file
    where a directory should be. The message names the file, the OS error and the way out."""


class GitNotFoundError(NexusMemError):
    """The ``git`` executable could not be started."""


class NotAGitRepositoryError(NexusMemError):
    """The path is not inside a git work tree."""


class GitError(NexusMemError):
    """git ran and failed for a reason other than the two above."""


class NotInitialisedError(NexusMemError):
    """The repository has no ``.nexusmem/`` workspace yet."""


class StoreError(NexusMemError):
    """The memory database cannot be opened or is not one of ours."""
