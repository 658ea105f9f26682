"""The project's own errors.

The core raises these; each adapter (CLI, MCP) translates them once. Every message is one line
that says what went wrong and what to do next.

The core does not know how its caller names things, so where the way out is the caller's own
(another repository path, the command that sets memory up, a flag or a tool parameter) the
message leaves it out or names the argument in the core's words, and each adapter words it:
``cli.py`` says ``-C <path>`` and ``nexusmem init``, the MCP server ``project_root`` and
``sync_project``. Where such a way out sits inside a message or a report's lines, the core writes
a marker (``SYNC``, ``CONFIRM``, ...) and each adapter words them all with its ``WaysOut``.
"""

from __future__ import annotations

__all__ = [
    "CONFIRM",
    "EXPORT",
    "NEUTRAL",
    "SEARCH",
    "SYNC",
    "ConfigError",
    "FileAccessError",
    "GitError",
    "GitNotFoundError",
    "NexusMemError",
    "NotAGitRepositoryError",
    "NotInitialisedError",
    "StoreError",
    "UntrustedWorkspaceError",
    "UsageError",
    "WaysOut",
]


class NexusMemError(Exception):
    """Base of every expected failure; ``str(err)`` is the one-line message for the user."""


class UsageError(NexusMemError):
    """An argument the caller gave is not usable.

    ``argument`` names it as the core's functions do (``as_of``, ``budget``), when the message
    must say which: ``str(err)`` is then ``"as_of: <message>"``, and the CLI says ``--as-of``.
    """

    def __init__(self, message: str, *, argument: str | None = None) -> None:
        super().__init__(f"{argument}: {message}" if argument else message)
        self.message = message
        self.argument = argument


class ConfigError(NexusMemError):
    """A configuration file is unreadable or invalid. The file is never rewritten."""


class FileAccessError(NexusMemError):
    """A file NexusMem must read or replace cannot be: no permission, a read-only disk, a file
    where a directory should be. The message names the file, the OS error and the way out."""


class GitNotFoundError(NexusMemError):
    """The ``git`` executable could not be started."""


class NotAGitRepositoryError(NexusMemError):
    """The path is not inside a git work tree (or is not there, or is not a directory).

    The message names the path and what is wrong with it, not how to give another: each
    adapter adds that (``-C <path>``, ``project_root``).
    """


class GitError(NexusMemError):
    """git ran and failed for a reason other than the two above."""


class NotInitialisedError(NexusMemError):
    """The repository has no memory: no ``.nexusmem/`` workspace yet, or its database is gone.

    The message says which, not how to make one: each adapter adds that (``nexusmem init``,
    ``sync_project``).
    """


class UntrustedWorkspaceError(NexusMemError):
    """The repository's ``.nexusmem`` was not made by this user's NexusMem (a clone shipped
    it, a link points elsewhere, git tracks it): it is never read or written. The message says
    how to move it aside; each adapter adds how to set memory up anew."""


SYNC = "\x00sync\x00"  # where the way out is to sync (see WaysOut)
SEARCH = "\x00search\x00"  # ... where it says that searching can still read memory
CONFIRM = "\x00confirm\x00"  # ... where a dry run says how to do it for real
EXPORT = "\x00export\x00"  # ... where the deny list is carried to another checkout


class WaysOut:
    """How an adapter names the ways out the core marks in its text: the CLI's commands and
    flags (``nexusmem sync``, ``add --yes``), the MCP server's tools and arguments
    (``sync_project``, ``confirm: true``). ``NEUTRAL`` names none of them. (A plain class:
    hooks import this module, and ``dataclasses`` costs them milliseconds.)"""

    def __init__(
        self,
        *,
        sync: str = "run a sync",
        search: str = "a search",
        confirm: str = "confirm it",
        export: str = "export the deny list, then import it there",
    ) -> None:
        self.sync, self.search, self.confirm, self.export = sync, search, confirm, export

    def word(self, text: str) -> str:
        """``text`` with each marker in it replaced by this adapter's words."""
        for marker, words in (
            (SYNC, self.sync),
            (SEARCH, self.search),
            (CONFIRM, self.confirm),
            (EXPORT, self.export),
        ):
            text = text.replace(marker, words)
        return text


NEUTRAL = WaysOut()


class StoreError(NexusMemError):
    """The memory database cannot be opened or is not one of ours.

    Where the way out is the caller's own command, the message holds ``SYNC`` ("run a sync")
    or ``SEARCH`` ("a search"), and ``worded`` puts each adapter's words in their place: the
    CLI's ``nexusmem sync`` and ``nexusmem query``, the MCP server's ``sync_project`` and
    ``search_memory``. ``str(err)`` has neutral words.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def worded(self, sync: str, search: str) -> str:
        return WaysOut(sync=sync, search=search).word(self.message)

    def __str__(self) -> str:
        return NEUTRAL.word(self.message)
