"""Cursor's hooks file: ``{"version": 1, "hooks": {event: [{"command": ..., "timeout": ...}]}}``.

A flat list of commands per event (a tool event's own ``matcher``), timeouts in seconds.
Everything else stays; our entries are found by the hook script's path in their command. A
file whose ``version`` is not 1 is refused: its shape may not be the one this NexusMem writes.
An empty ``"hooks"`` left by remove is dropped; the ``"version": 1`` install added to a file of
the user's stays, as Cursor expects it in every hooks file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ....errors import ConfigError, FileAccessError
from .common import (
    UNTOUCHED,
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

__all__ = ["Flat", "file_status", "install", "remove"]

VERSION = 1


@dataclass(frozen=True)
class Flat:
    """One agent's hooks in the flat shape: (event, matcher or None, timeout in seconds)."""

    events: tuple[tuple[str, str | None, int], ...]

    def entry(self, command: str, matcher: str | None, timeout: int) -> dict[str, Any]:
        entry: dict[str, Any] = {"command": command, "timeout": timeout}
        return entry if matcher is None else {**entry, "matcher": matcher}


def _hooks(data: dict[str, Any], path: Path) -> dict[str, Any]:
    version = data.get("version", VERSION)
    if version != VERSION or isinstance(version, bool):
        raise ConfigError(
            f'{path}: "version" is {json.dumps(version)}, not {VERSION}: this NexusMem writes '
            f"hooks files of version {VERSION} only; {UNTOUCHED}"
        )
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(shape(path, '"hooks"', hooks, "an object"))
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            raise ConfigError(shape(path, f'"hooks.{event}"', entries, "a list"))
    return hooks


def _strip(hooks: dict[str, Any]) -> bool:
    found = False
    for event in list(hooks):
        kept = [e for e in hooks[event] if not ours(e)]
        if len(kept) == len(hooks[event]):
            continue
        found = True
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    return found


def install(spec: Flat, path: Path, command: str, home: Path) -> InstallResult:
    """Put our entries into ``path`` (replacing any older ones); idempotent."""
    path = path.resolve()
    loaded = load_json(path)
    data = loaded or {}
    before = json.dumps(data)
    hooks = _hooks(data, path)
    _strip(hooks)
    for event, matcher, timeout in spec.events:
        hooks.setdefault(event, []).append(spec.entry(command, matcher, timeout))
    data.setdefault("version", VERSION)
    data["hooks"] = hooks
    changed = json.dumps(data) != before
    if loaded is None:
        note_created(home, path)
    if changed:
        write_json(path, data)
    return InstallResult(str(path), changed, command, [e for e, _, _ in spec.events], [])


def remove(spec: Flat, path: Path, home: Path) -> bool:
    """Take only our entries out of ``path``; a file install created that held nothing else
    is deleted."""
    path = path.resolve()
    data = load_json(path)
    if data is None:
        forget_created(home, path)
        return False
    hooks = _hooks(data, path)
    if not _strip(hooks):
        return False
    if hooks:
        data["hooks"] = hooks
    else:
        data.pop("hooks", None)
    mine = created_by_install(home, path)
    if mine and set(data) <= {"version"}:
        remove_created(home, path)
    else:
        write_json(path, data)
    forget_created(home, path)
    return True


def file_status(spec: Flat, scope: str, path: Path, command: str, flags: str) -> FileStatus:
    """Which of our events ``path`` has, and whether their commands can still run."""
    try:
        hooks = _hooks(load_json(path.resolve()) or {}, path)
    except (ConfigError, FileAccessError) as err:
        return FileStatus(scope, str(path), "unreadable", warnings=[str(err)])
    expected = {e: spec.entry(command, m, t) for e, m, t in spec.events}
    result = FileStatus(scope, str(path), "not installed")
    outdated = False
    for event, entries in hooks.items():
        for entry in filter(ours, entries):
            outdated |= event in result.events or entry != expected.get(event)
            result.events.append(event)
            result.warnings += missing_paths(entry["command"], reinstall(flags))
    result.missing = [e for e in expected if e not in result.events]
    if result.events:
        result.state = "partial" if result.missing else "outdated" if outdated else "installed"
    return settle(result, flags)
