"""NexusMem's hooks in Claude Code's settings, as the other agents' are kept in theirs.

The entries go into ``~/.claude/settings.json`` or, with ``--project``, the repository's
``.claude/settings.local.json``. The file format is the nested one Codex CLI and Gemini CLI share
(``install/nested.py``): everything else in the file is kept, our entries are found by the hook
script's path, and a file in Claude Code's layout comes back byte for byte after install then
remove (a ``"hooks"`` object left empty is dropped). A file that install created is deleted by
remove when it held nothing but our entries. A file that is not valid JSON, or whose ``hooks``
are not shaped as Claude Code expects, is refused and never rewritten. The project file holds
this machine's absolute paths, so install also makes git ignore it. Standard library only.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...errors import NexusMemError
from ...paths import home_dir
from . import AGENT_LOG
from .install import nested
from .install.common import (
    CREATED_FILE,
    HOOK,
    MARK,
    FileStatus,
    InstallResult,
    ignore_in_git,
    missing_paths,
    reinstall,
    repository_root,
)
from .install.common import hook_command as _command
from .install.health import last_events, read_drops
from .install.registry import CLAUDE, CLAUDE_TOOLS, SPECS
from .state import DROPS

__all__ = [
    "CREATED_FILE",
    "DROPS_FILE",
    "EVENTS",
    "EVENTS_FILE",
    "HOOK",
    "MARK",
    "TOOLS",
    "AgentStatus",
    "FileStatus",
    "InstallResult",
    "file_status",
    "hook_command",
    "install",
    "last_event",
    "project_file",
    "read_drops",
    "remove",
    "status",
    "user_file",
]

TOOLS = CLAUDE_TOOLS
EVENTS = CLAUDE.events  # (event, matcher or None for every source, timeout in seconds)
EVENTS_FILE = AGENT_LOG
DROPS_FILE = DROPS


def user_file(environ: dict[str, str] | None = None) -> Path:
    """``~/.claude/settings.json``."""
    return SPECS["claude"].user_file(os.environ if environ is None else environ)


def project_file(path: Path) -> Path:
    """``.claude/settings.local.json`` at the root of the repository containing ``path``."""
    return repository_root(path) / SPECS["claude"].project


def hook_command(python: str = sys.executable, hook: Path = HOOK) -> str:
    """The command Claude Code runs: absolute paths, so no virtual environment is needed."""
    return _command(python, hook)


def install(
    path: Path,
    python: str = sys.executable,
    hook: Path = HOOK,
    *,
    project: bool = False,
    home: Path | None = None,
) -> InstallResult:
    """Put our entries into ``path`` (replacing any older ones); idempotent. ``project``:
    ``path`` is a repository's ``.claude/settings.local.json``, which git is made to ignore."""
    command = hook_command(python, hook)
    result = nested.install(CLAUDE, path, command, Path(home or home_dir()))
    result.warnings = missing_paths(command, reinstall(" --project" if project else ""))
    if project:
        result.git_excluded = ignore_in_git(path, path.parent.parent, result.warnings)
    return result


def remove(path: Path, *, home: Path | None = None) -> bool:
    """Take only our entries out of ``path``; return whether there were any."""
    return nested.remove(CLAUDE, path, Path(home or home_dir()))


def file_status(
    scope: str, path: Path | None, python: str = sys.executable, hook: Path = HOOK
) -> FileStatus:
    """Which of our events ``path`` has, and whether their commands can still run."""
    if path is None:
        return FileStatus(scope, None, "no repository")
    flags = " --project" if scope == "project" else ""
    return nested.file_status(CLAUDE, scope, path, hook_command(python, hook), flags)


def last_event(home: Path) -> float | None:
    """The ``ts`` of the last readable record in the hook's event log, or None."""
    return max(last_events(home).values(), default=None)


@dataclass
class AgentStatus:
    files: list[FileStatus]  # the user file, then the project file
    last_event: float | None
    drops: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def status(home: Path, cwd: Path, python: str = sys.executable, hook: Path = HOOK) -> AgentStatus:
    """Both settings files, and the capture health the hook leaves in ``home``."""
    try:
        project: Path | None = project_file(cwd)
    except NexusMemError:  # not in a repository, or no git: there is no project file to check
        project = None
    files = [
        file_status("user", user_file(), python, hook),
        file_status("project", project, python, hook),
    ]
    return AgentStatus(files, last_event(home), read_drops(home))
