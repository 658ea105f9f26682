"""Where each coding agent keeps its hooks, in which format, for which events, and how to tell
that it is on this machine.

Timeouts are in each agent's own unit: seconds for Claude Code, Codex CLI and Cursor,
milliseconds for Gemini CLI (its ``timeout`` field), and opencode's plugin keeps its own.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .flat import Flat
from .nested import Nested

__all__ = ["SPECS", "Spec", "context_of", "discover", "label_of"]

CLAUDE_TOOLS = "Bash|Edit|Write|MultiEdit|NotebookEdit"
CLAUDE = Nested(
    (
        ("PreToolUse", "Bash", 5),
        ("PostToolUse", CLAUDE_TOOLS, 5),
        ("PostToolUseFailure", CLAUDE_TOOLS, 5),
        ("SessionStart", None, 10),
    )
)
# Codex's shell tool is "Bash"; its edits are "apply_patch", whose PostToolUse names the files.
CODEX = Nested(
    (
        ("SessionStart", None, 10),
        ("PreToolUse", "Bash", 5),
        ("PostToolUse", "Bash|apply_patch", 5),
    )
)
GEMINI_EDITS = "write_file|replace"
GEMINI = Nested(
    (
        ("SessionStart", None, 10000),
        ("BeforeTool", "run_shell_command", 5000),
        ("AfterTool", f"run_shell_command|{GEMINI_EDITS}", 5000),
    ),
    extra={"name": "nexusmem"},  # how `/hooks disable` and hooksConfig.disabled name it
    loose=frozenset({"enabled", "disabled"}),  # settings an older Gemini CLI kept in "hooks"
)
# Cursor's afterShellExecution brings no exit code; postToolUse and postToolUseFailure of its
# Shell tool tell a failure from a success, so they record the command instead.
CURSOR = Flat(
    (
        ("sessionStart", None, 10),
        ("beforeShellExecution", None, 5),
        ("postToolUse", "Shell", 5),
        ("postToolUseFailure", "Shell", 5),
        ("afterFileEdit", None, 5),
    )
)


@dataclass(frozen=True)
class Spec:
    agent: str  # a key of ``AGENTS``
    label: str  # its name, unless its adapter says otherwise
    format: Nested | Flat | None  # None: opencode's plugin file
    project: str  # the project file, from the repository root
    executables: tuple[str, ...]  # on PATH, they show the agent is on this machine
    restart: str  # what to do for the hooks to load
    context: str | None  # why notes cannot reach it, unless its adapter says otherwise

    def user_file(self, env: Mapping[str, str]) -> Path:
        """Its user-level hooks file (or opencode's plugin file)."""
        return (
            _base(self.agent, env)
            / {
                "claude": "settings.json",
                "codex": "hooks.json",
                "gemini": "settings.json",
                "cursor": "hooks.json",
                "opencode": "plugins/nexusmem.js",
            }[self.agent]
        )

    def argument(self) -> str | None:
        """The agent's name on the hook's command line; Claude Code's has none (older
        installs had none, and the hook reads a payload without it as Claude Code's)."""
        return None if self.agent == "claude" else self.agent


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def _base(agent: str, env: Mapping[str, str]) -> Path:
    """The agent's own configuration directory."""
    home = _home(env)
    if agent == "codex":
        return Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    if agent == "gemini":
        return Path(env.get("GEMINI_CLI_HOME") or home) / ".gemini"
    if agent == "opencode":
        config = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
        return config / "opencode"
    return home / f".{agent}"


SPECS: dict[str, Spec] = {
    "claude": Spec(
        "claude", "Claude Code", CLAUDE, ".claude/settings.local.json", ("claude",),
        "restart Claude Code to load the hooks", None,
    ),
    "codex": Spec(
        "codex", "Codex CLI", CODEX, ".codex/hooks.json", ("codex",),
        "restart Codex, then trust the new hooks in its /hooks (it skips hooks not trusted)",
        None,
    ),
    "gemini": Spec(
        "gemini", "Gemini CLI", GEMINI, ".gemini/settings.json", ("gemini",),
        "restart Gemini CLI to load the hooks", None,
    ),
    "cursor": Spec(
        "cursor", "Cursor", CURSOR, ".cursor/hooks.json", ("cursor", "cursor-agent"),
        "restart Cursor to load the hooks", None,
    ),
    "opencode": Spec(
        "opencode", "opencode", None, ".opencode/plugins/nexusmem.js", ("opencode",),
        "restart opencode to load the plugin", None,
    ),
}  # fmt: skip


def discover(env: Mapping[str, str] | None = None) -> list[str]:
    """The agents on this machine: their configuration directory exists or their executable
    is on PATH. Claude Code is always one, as before there were others."""
    env = os.environ if env is None else env
    found = []
    for name, spec in SPECS.items():
        here = name == "claude" or _base(name, env).is_dir()
        path = env.get("PATH", "")
        here = here or any(shutil.which(exe, path=path) for exe in spec.executables)
        if here:
            found.append(name)
    return found


def _adapter(agent: str) -> object | None:
    try:
        return importlib.import_module(f"..adapters.{agent}", __package__)
    except ImportError:
        return None


def label_of(agent: str) -> str:
    label = getattr(_adapter(agent), "LABEL", None)
    return label if isinstance(label, str) else SPECS[agent].label


def context_of(agent: str) -> str | None:
    """None when notes reach the agent, else a one-line reason they cannot: its adapter's
    ``CONTEXT``, or this table's when there is no adapter."""
    adapter = _adapter(agent)
    if adapter is not None and hasattr(adapter, "CONTEXT"):
        context = adapter.CONTEXT
        return context if isinstance(context, str) else None
    return SPECS[agent].context
