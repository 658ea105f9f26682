"""Where NexusMem keeps things on disk. Standard library only: hooks import this."""

from __future__ import annotations

import os

from .errors import UsageError

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~3 ms
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "CONFIG_FILE",
    "DB_FILE",
    "WORKSPACE_DIR",
    "check_path",
    "default_home",
    "home_dir",
    "workspace_dir",
]

WORKSPACE_DIR = ".nexusmem"
CONFIG_FILE = "config.json"
DB_FILE = "memory.db"


def home_dir() -> str:
    """The user-scoped directory: ``$NEXUSMEM_HOME``, else ``~/.nexusmem``.

    A string, for the hooks: importing ``pathlib`` costs one 20 ms, on every command.
    """
    env = os.environ.get("NEXUSMEM_HOME")
    return os.path.expanduser(env) if env else os.path.join(os.path.expanduser("~"), ".nexusmem")


def default_home() -> Path:
    """:func:`home_dir` as a ``Path``."""
    from pathlib import Path

    return Path(home_dir())


def workspace_dir(repo_root: Path) -> Path:
    """The per-repository workspace, ``<repo>/.nexusmem``."""
    return repo_root / WORKSPACE_DIR


def check_path(path: str | os.PathLike[str], name: str) -> None:
    """Raise UsageError, naming ``name``, if no file system call can take ``path``.

    A NUL byte or a lone surrogate (one the file system encoding cannot write) makes the first
    ``os`` call raise a bare ValueError, far from where the path came in; caught here, the
    message says which argument it was.
    """
    text = os.fspath(path)
    if "\x00" in text:
        why = "contains a NUL byte (\\x00), which no path can hold"
    else:
        try:
            os.fsencode(text)
            return
        except UnicodeEncodeError as err:
            why = f"contains {text[err.start]!r}, which the file system cannot encode"
    raise UsageError(f"{name} {text!r} {why}: pass the repository's real path")


# Variables that pin git to one repository. git exports GIT_DIR to the hooks it runs in a
# linked worktree; inherited, it would make every command here read that worktree, even one
# run in the main checkout. Each command names its repository by its cwd instead.
# (GIT_INDEX_FILE stays: precheck must see the index the commit is being made from.)
_PINNED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")
_GIT_ENV = {"LC_ALL": "C", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}


def git_env() -> dict[str, str]:
    """The environment every git NexusMem runs gets: ours, unpinned, in the C locale."""
    env = {k: v for k, v in os.environ.items() if k not in _PINNED}
    return {**env, **_GIT_ENV}
