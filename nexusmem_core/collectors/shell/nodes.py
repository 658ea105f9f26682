"""Shell commands as nodes: what a command is worth remembering, and how it reads."""

from __future__ import annotations

import os
import re
from typing import Any

from ...models import Node
from ...redact import redact_cut
from ..commands import is_predicate

__all__ = ["command_signal", "hook_node", "scraped_node"]

_NOISE = re.compile(
    r"^(ls|ll|la|l|cd|pwd|clear|cls|exit|logout|history|echo|cat|less|more|man|which|type|"
    r"whoami|date|true|false|fg|bg|jobs|z|j|tree|head|tail|open|code|vim?|nvim|nano|emacs|"
    r"git (status|st|log|diff|show|branch)|exa|eza|bat|reset|source|\.)(\s|$)"
)
_DESTRUCTIVE = re.compile(
    r"\b(rm\s+-[a-zA-Z]*[rf]|git\s+(reset\s+--hard|push\s+(-f|--force)|clean\s+-[a-z]*f|"
    r"checkout\s+--\s|branch\s+-D|rebase)|drop\s+(table|database)|truncate\s+table|"
    r"docker\s+(rm|rmi|system\s+prune)|kubectl\s+delete|terraform\s+(destroy|apply)|dd\s+if=|"
    r"mkfs|chmod\s+-R|chown\s+-R)",
    re.IGNORECASE,
)
_INSTALL = re.compile(
    r"\b((pip3?|pipx|uv\s+pip|npm|pnpm|yarn|bun|apt(-get)?|brew|dnf|yum|pacman|gem|go)\s+"
    r"(install|add|i|get)\b|(cargo|poetry|uv)\s+(add|install)\b|conda\s+install)"
)
_BUILD = re.compile(
    r"(^|[\s;&|])(make|cmake|ninja|pytest|tox|nox|mypy|ruff|flake8|pylint|jest|vitest|mocha|tsc|"
    r"eslint|gradle|gradlew|mvn|bazel|(npm|pnpm|yarn|bun)\s+(run\s+)?(test|build|lint|check)|"
    r"cargo\s+(test|build|check|clippy|run)|go\s+(test|build|vet|run)|dotnet\s+(build|test)|"
    r"docker\s+(build|compose)|python3?\s+-m\s+(pytest|unittest|build)|\./configure)\b"
)


def command_signal(command: str, exit_code: int | None) -> float:
    """How much a command is worth remembering before any query, in [0.02, 1].

    Navigation and viewing are near zero; destructive, install, build and test commands are
    high; a non-zero exit raises any command (interrupted with Ctrl-C only a little).
    """
    text = command.strip()
    first = text.split("\n", 1)[0]
    if _DESTRUCTIVE.search(text):
        signal = 0.8
    elif _INSTALL.search(text):
        signal = 0.7
    elif _BUILD.search(text):
        signal = 0.65
    elif _NOISE.match(first) and "|" not in first and "&&" not in first:
        signal = 0.05
    else:
        signal = 0.4
    if exit_code not in (None, 0):
        signal += 0.05 if exit_code in (130, 131) else 0.25
    return round(max(0.02, min(1.0, signal)), 3)


def _body(command: str, facts: dict[str, Any]) -> str:
    lines = [command, ""]
    lines += [f"{name}: {value}" for name, value in facts.items() if value not in (None, "")]
    return "\n".join(lines)


def _title(command: str) -> str:
    first = command.strip().split("\n", 1)[0]
    return first[:200] + (" ..." if len(first) > 200 or "\n" in command.strip() else "")


def _outcome(exit_code: int | None, answered: bool = False) -> str:
    """In words a question uses: a query about what failed must be able to match a failure."""
    if answered:
        return "answered no: nothing found or a difference (exit 1)"
    if exit_code is None:
        return "exit code unknown"
    if exit_code == 0:
        return "succeeded (exit 0)"
    if exit_code in (130, 131):
        return f"interrupted (exit {exit_code})"
    return f"failed with an error (exit {exit_code})"


def _relative(cwd: object, root: str | None) -> object:
    """The directory relative to the repository: an absolute path's words (the user's home,
    a `bench/out`) would otherwise match every command for unrelated queries."""
    if not isinstance(cwd, str) or not root:
        return cwd
    real = os.path.realpath(cwd)
    if real == root:
        return "."
    return os.path.relpath(real, root) if real.startswith(root + os.sep) else cwd


def hook_node(
    project_id: str, record: dict[str, Any], max_chars: int, root: str | None = None
) -> Node:
    """A command the shell hook recorded: exact cwd, exit code, start and duration.

    The recorder redacted it already; redacting again is free (idempotent) and covers logs
    written before a rule was added to the table.
    """
    command, _ = redact_cut(record["cmd"], max_chars)
    exit_code = record.get("exit") if isinstance(record.get("exit"), int) else None
    answered = exit_code == 1 and is_predicate(command)  # grep found nothing: not a failure
    start = record.get("start")
    duration = record.get("duration")
    facts = {
        "outcome": _outcome(exit_code, answered),
        "cwd": _relative(record.get("cwd"), root),
        "duration": f"{duration:.2f}s" if isinstance(duration, int | float) else None,
        "shell": record.get("shell"),
    }
    return Node(
        project_id=project_id,
        kind="shell_command",
        source="shell:hook",
        ref=record["id"],
        title=_title(command),
        body=_body(command, facts),
        ts=int(start) if isinstance(start, int | float) else None,
        signal=command_signal(command, 0 if answered else exit_code),
        provenance="observed",
        meta={
            **({"outcome": "false"} if answered else {}),
            "exit": exit_code,
            "cwd": record.get("cwd"),
            "duration": duration,
            "shell": record.get("shell"),
            "session": record.get("session"),
            "cmd_hash": record.get("cmd_hash"),
            "captured": "hook",
        },
    )


def scraped_node(
    project_id: str,
    shell: str,
    key: str,
    command: str,
    ts: int | None,
    duration: float | None,
    max_chars: int,
) -> Node:
    """A command read from a history file: no cwd, no exit code, a date only if the file had
    one. It is attributed to the repository being synced, and says so. History files hold
    whatever was typed, so the text is redacted here, before it can reach the database."""
    command, _ = redact_cut(command, max_chars)
    facts = {
        "outcome": _outcome(None),
        "cwd": "unknown (scraped from the shell's history file)",
        "shell": shell,
    }
    return Node(
        project_id=project_id,
        kind="shell_command",
        source=f"shell:{shell}",
        ref=key,
        title=_title(command),
        body=_body(command, facts),
        ts=ts,
        signal=command_signal(command, None),
        provenance="observed",
        meta={
            "exit": None,
            "cwd": None,
            "duration": duration,
            "shell": shell,
            "captured": "scraped",
        },
    )
