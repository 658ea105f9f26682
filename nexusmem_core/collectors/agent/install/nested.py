"""Hooks in the nested shape Claude Code, Codex CLI and Gemini CLI share: ``{"hooks": {event:
[{"matcher": ..., "hooks": [{"type": "command", "command": ..., "timeout": ...}]}]}}``.

Everything else in the file stays: other keys, other events, other tools' matcher groups and
hooks, even one sharing a group with ours. Our hooks are found by the hook script's path inside
their command, not by the exact string, so a copy installed from a moved or upgraded NexusMem is
still replaced or removed. A ``"hooks"`` object that remove leaves empty is dropped. Each agent
reads its timeouts in its own unit (seconds for Claude Code and Codex, milliseconds for Gemini
CLI): the events table carries the number as the agent reads it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ....errors import ConfigError, FileAccessError
from .common import (
    FileStatus,
    InstallResult,
    created_by_install,
    forget_created,
    load_json,
    missing_paths,
    note_created,
    ours,
    reinstall,
    remove_created,
    settle,
    shape,
    write_json,
)

__all__ = ["Nested", "file_status", "install", "remove"]


@dataclass(frozen=True)
class Nested:
    """One agent's hooks in the nested shape."""

    # (event, matcher or None for every source, timeout in the agent's unit)
    events: tuple[tuple[str, str | None, int], ...]
    extra: dict[str, Any] = field(default_factory=dict)  # more fields of each hook (a name)
    loose: frozenset[str] = frozenset()  # keys of "hooks" that are settings, not event lists

    def group(self, matcher: str | None, command: str, timeout: int) -> dict[str, Any]:
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        hook = {"type": "command", "command": command, "timeout": timeout, **self.extra}
        group["hooks"] = [hook]
        return group


def hooks_of(spec: Nested, data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``data["hooks"]`` (a new object if absent), checked to be the agent's shape."""
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(shape(path, '"hooks"', hooks, "an object"))
    for event, groups in hooks.items():
        if event not in spec.loose and not isinstance(groups, list):
            raise ConfigError(shape(path, f'"hooks.{event}"', groups, "a list"))
    return hooks


def strip(spec: Nested, hooks: dict[str, Any]) -> bool:
    """Take our hooks out of every event, dropping groups and events that only we filled."""
    found = False
    for event in [e for e in hooks if e not in spec.loose]:
        kept, here = [], False
        for group in hooks[event]:
            inner = group.get("hooks") if isinstance(group, dict) else None
            rest = [h for h in inner if not ours(h)] if isinstance(inner, list) else None
            if rest is None or len(rest) == len(inner or ()):
                kept.append(group)
                continue
            here = True
            if rest:  # another tool's hook shares the group: it stays
                kept.append({**group, "hooks": rest})
        if here and not kept:
            del hooks[event]
        elif here:
            hooks[event] = kept
        found |= here
    return found


def install(spec: Nested, path: Path, command: str, home: Path) -> InstallResult:
    """Put our entries into ``path`` (replacing any older ones); idempotent. ``home`` keeps
    the note that this call created the file."""
    path = path.resolve()  # a symlinked settings file (dotfiles) stays a symlink
    loaded = load_json(path)
    data = loaded or {}
    before = json.dumps(data)
    hooks = hooks_of(spec, data, path)
    strip(spec, hooks)
    for event, matcher, timeout in spec.events:
        hooks.setdefault(event, []).append(spec.group(matcher, command, timeout))
    data["hooks"] = hooks
    changed = json.dumps(data) != before
    if loaded is None:  # before writing it: the note must exist whenever the file does
        note_created(home, path)
    if changed:
        write_json(path, data)
    events = [e for e, _, _ in spec.events]
    return InstallResult(str(path), changed, command, events, [])


def remove(spec: Nested, path: Path, home: Path) -> bool:
    """Take only our entries out of ``path``; return whether there were any. A file that
    install created and that held nothing else is deleted, with the directories install made
    for it when they are left empty."""
    path = path.resolve()
    data = load_json(path)
    if data is None:
        forget_created(home, path)  # deleted by hand: the note is stale
        return False
    hooks = hooks_of(spec, data, path)
    if not strip(spec, hooks):
        return False
    if hooks:
        data["hooks"] = hooks
    else:  # documented: an empty "hooks" object is dropped, whoever created it
        data.pop("hooks", None)
    if data or not created_by_install(home, path):
        write_json(path, data)
    else:
        remove_created(home, path)
    # After the file is done with: had that failed, the note would still say it is ours.
    forget_created(home, path)
    return True


def file_status(spec: Nested, scope: str, path: Path, command: str, flags: str) -> FileStatus:
    """Which of our events ``path`` has, and whether their commands can still run."""
    try:
        data = load_json(path.resolve()) or {}
        hooks = hooks_of(spec, data, path)
    except (ConfigError, FileAccessError) as err:
        return FileStatus(scope, str(path), "unreadable", warnings=[str(err)])
    expected = {e: spec.group(m, command, t) for e, m, t in spec.events}
    result = FileStatus(scope, str(path), "not installed")
    outdated = False
    for event, group, entry in _entries(spec, hooks):
        outdated |= event in result.events  # a second copy of ours
        outdated |= {**group, "hooks": [entry]} != expected.get(event)
        result.events.append(event)
        result.warnings += missing_paths(entry["command"], reinstall(flags))
    result.missing = [e for e in expected if e not in result.events]
    if result.events:
        result.state = "partial" if result.missing else "outdated" if outdated else "installed"
    return settle(result, flags)


def _entries(spec: Nested, hooks: dict[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
    """(event, matcher group, hook) for each of our hooks in the file."""
    found = []
    for event, groups in hooks.items():
        if event in spec.loose:
            continue
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                found += [(event, group, h) for h in inner if ours(h)]
    return found
