"""``nexusmem agent install|remove|status``: NexusMem's hooks in each coding agent's own format.

One module per format (``nested`` for Claude Code, Codex CLI and Gemini CLI, ``flat`` for
Cursor, ``plugin`` for opencode's plugin file), ``flags`` for the settings that switch an
agent's hooks on as a whole, ``registry`` for where each agent keeps them. Here the three
actions for one agent at a time; the CLI picks the agents. A project file holds this machine's
absolute paths, so install also makes git ignore it. Standard library only: this runs from the
CLI without an event loop.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ....errors import ConfigError, NexusMemError
from . import flat, nested, plugin
from .common import HOOK, FileStatus, hook_command, ignore_in_git, missing_paths, reinstall
from .common import repository_root as repository_root
from .flags import Flag, codex_flag, codex_version, gemini_flag, set_codex_flag, set_gemini_flag
from .health import last_events, read_drops
from .registry import SPECS, Spec, context_of, discover, label_of

__all__ = [
    "SPECS",
    "AgentReport",
    "Installed",
    "Removed",
    "Status",
    "discover",
    "enable_flag",
    "install",
    "install_all",
    "remove",
    "remove_all",
    "status",
    "target",
]


def target(agent: str, project: bool, cwd: Path, env: Mapping[str, str] | None = None) -> Path:
    """The file the agent's hooks go to: the user's, or the repository's (``cwd``'s root)."""
    spec = SPECS[agent]
    if project:
        return repository_root(cwd) / spec.project
    return spec.user_file(os.environ if env is None else env)


CODEX_TRUST = (
    "Codex runs a new or changed hook only once it is trusted: open /hooks in Codex to trust "
    "NexusMem's (after each install that changed them)"
)


def _flags(agent: str, project: bool) -> str:
    return f" --agent {agent}" + (" --project" if project else "")


@dataclass
class Installed:
    agent: str
    label: str
    path: str
    changed: bool
    command: str
    events: list[str]
    warnings: list[str]
    restart: str
    project: str  # the project file, from the repository root
    git_excluded: str | None = None  # the exclude file the project file was just added to
    flag: Flag | None = None  # a setting the agent's hooks need that is not on


def _write(spec: Spec, path: Path, command: str, home: Path) -> Any:
    if isinstance(spec.format, nested.Nested):
        return nested.install(spec.format, path, command, home)
    if isinstance(spec.format, flat.Flat):
        return flat.install(spec.format, path, command, home)
    return plugin.install(path, command, home)


def install(
    agent: str,
    home: Path,
    cwd: Path,
    *,
    project: bool = False,
    python: str = sys.executable,
    hook: Path = HOOK,
    env: Mapping[str, str] | None = None,
) -> Installed:
    """Put the agent's hooks in place (replacing older ones of ours); idempotent."""
    spec, env = SPECS[agent], os.environ if env is None else env
    root = repository_root(cwd) if project else None
    path = root / spec.project if root else spec.user_file(env)
    command = hook_command(python, hook, spec.argument())
    done = _write(spec, path, command, home)
    warnings = missing_paths(command, reinstall(_flags(agent, project)))
    result = Installed(
        agent, label_of(agent), done.path, done.changed, command, done.events, warnings,
        spec.restart, spec.project,
    )  # fmt: skip
    if root:
        result.git_excluded = ignore_in_git(path, root, result.warnings)
        if agent == "codex":
            result.warnings.append(
                "Codex loads a project's .codex/hooks.json only once the project is trusted"
            )
    flag = agent_flag(agent, path, env)
    result.flag = flag if flag is not None and flag.needed else None
    return result


def agent_flag(agent: str, path: Path | None, env: Mapping[str, str]) -> Flag | None:
    """The setting that switches the agent's hooks on as a whole, if it has one."""
    if agent == "codex":
        config = SPECS["codex"].user_file(env).with_name("config.toml")
        flag = codex_flag(config)
        return codex_flag(config, codex_version()) if flag.state == "default" else flag
    if agent == "gemini":
        flags = [gemini_flag(p) for p in (SPECS["gemini"].user_file(env), path) if p]
        return next((f for f in flags if f.state == "off"), flags[0])
    return None


def enable_flag(flag: Flag) -> None:
    """Set ``flag`` on, in its own file, with the least change (the user said yes)."""
    if flag.path.endswith(".toml"):
        set_codex_flag(Path(flag.path))
    else:
        set_gemini_flag(Path(flag.path))


@dataclass
class Removed:
    agent: str
    label: str
    path: str
    removed: bool
    deleted: bool  # the file install had created, left with nothing, is gone
    restart: str


def remove(
    agent: str,
    home: Path,
    cwd: Path,
    *,
    project: bool = False,
    env: Mapping[str, str] | None = None,
) -> Removed:
    """Take only our hooks out of the agent's file (or delete our plugin file)."""
    spec = SPECS[agent]
    path = target(agent, project, cwd, env)
    if isinstance(spec.format, nested.Nested):
        found = nested.remove(spec.format, path, home)
    elif isinstance(spec.format, flat.Flat):
        found = flat.remove(spec.format, path, home)
    else:
        found = plugin.remove(path, home)
    deleted = found and not path.exists()
    label = label_of(agent)
    return Removed(agent, label, str(path), found, deleted, f"restart {label} to unload them")


def _check(names: list[str], home: Path, cwd: Path, project: bool) -> None:
    """Refuse, before any file is written, when one of the agents' files cannot be read as
    that agent's: the first such file, in one line, and nothing changed."""
    for name in names:
        path = target(name, project, cwd)
        state = file_status(name, "project" if project else "user", path, "")
        if state.state == "unreadable":
            raise ConfigError(state.warnings[0])


def install_all(
    names: list[str], home: Path, cwd: Path, *, project: bool = False
) -> list[Installed]:
    """Install each agent's hooks, once every file has been found readable."""
    _check(names, home, cwd, project)
    return [install(name, home, cwd, project=project) for name in names]


def remove_all(names: list[str], home: Path, cwd: Path, *, project: bool = False) -> list[Removed]:
    """Remove each agent's hooks, once every file has been found readable."""
    _check(names, home, cwd, project)
    return [remove(name, home, cwd, project=project) for name in names]


# ----------------------------------------------------------------------------------- status


def file_status(agent: str, scope: str, path: Path, command: str) -> FileStatus:
    """Which of our hooks the agent's ``path`` holds, in its own format."""
    spec, flags = SPECS[agent], _flags(agent, scope == "project")
    if isinstance(spec.format, nested.Nested):
        return nested.file_status(spec.format, scope, path, command, flags)
    if isinstance(spec.format, flat.Flat):
        return flat.file_status(spec.format, scope, path, command, flags)
    return plugin.file_status(scope, path, command, flags)


@dataclass
class AgentReport:
    agent: str
    label: str
    files: list[FileStatus]  # the user file, then the project file
    flag: Flag | None
    context: str | None  # None when notes reach the agent, else why they cannot
    last_event: float | None
    notice: str | None = None  # what the agent itself asks before our hooks run


@dataclass
class Status:
    agents: list[AgentReport]
    last_event: float | None
    drops: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["files"] = [{"agent": a["agent"], **f} for a in data["agents"] for f in a["files"]]
        return data


def status(
    agents: list[str],
    home: Path,
    cwd: Path,
    python: str = sys.executable,
    hook: Path = HOOK,
    env: Mapping[str, str] | None = None,
) -> Status:
    """Each agent's files, the setting its hooks need, and the capture health in ``home``."""
    env = os.environ if env is None else env
    try:
        root: Path | None = repository_root(cwd)
    except NexusMemError:  # not in a repository, or no git: there is no project file to check
        root = None
    seen = last_events(home)
    reports = []
    for agent in agents:
        spec = SPECS[agent]
        command = hook_command(python, hook, spec.argument())
        project = root / spec.project if root else None
        files = [file_status(agent, "user", spec.user_file(env), command)]
        files.append(
            file_status(agent, "project", project, command)
            if project
            else FileStatus("project", None, "no repository")
        )
        flag = agent_flag(agent, project if project and project.exists() else None, env)
        report = AgentReport(
            agent, label_of(agent), files, flag, context_of(agent), seen.get(agent)
        )
        if agent == "codex" and any(f.state != "not installed" for f in files if f.path):
            report.notice = CODEX_TRUST
        reports.append(report)
    return Status(reports, max(seen.values(), default=None), read_drops(home))
