"""What every agent's install shares: the hook command, reading and writing a JSON settings file
without losing anything, the note of the files install created, git ignoring a project file,
and the shapes ``install``, ``remove`` and ``status`` report in.

A settings file is read whole and refused, never rewritten, when it is not what the agent
expects: the refusal is one line naming the file and the field. It is written atomically in
the agents' own layout (two-space JSON, non-ASCII as it is, a final newline), keeping its mode
and following a symlink, so a file in that layout comes back byte for byte after install then
remove. A file made here is private: its hooks name this machine's interpreter.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ....errors import ConfigError, FileAccessError, NotAGitRepositoryError
from ....files import make_dir, read_bytes, read_text, remove_file, replace_file
from ....private import PRIVATE_DIR, PRIVATE_FILE
from ...git import git_sync

__all__ = [
    "CREATED_FILE",
    "HOOK",
    "MARK",
    "UNTOUCHED",
    "FileStatus",
    "InstallResult",
    "forget_created",
    "hook_command",
    "ignore_in_git",
    "load_json",
    "missing_paths",
    "note_created",
    "ours",
    "reinstall",
    "remove_created",
    "repository_root",
    "settle",
    "shape",
    "write_json",
]

HOOK = Path(__file__).parent.parent.joinpath("hook.py").resolve()
# How an entry is recognised as ours, whichever copy of NexusMem wrote it.
MARK = "nexusmem_core/collectors/agent/hook.py"
CREATED_FILE = "agent-created.json"  # the settings files install created, for remove
UNTOUCHED = "fix it by hand, NexusMem will not rewrite it"


def hook_command(python: str = sys.executable, hook: Path = HOOK, agent: str | None = None) -> str:
    """The command an agent runs: absolute paths, so no virtual environment is needed. Claude
    Code's has no agent argument, as every install before the other agents had none."""
    python = os.path.abspath(python)  # not resolved: a venv's python is a symlink that matters
    if sys.platform == "win32":
        command = f'"{python}" -S -P "{hook}"'
    else:
        command = f"{shlex.quote(python)} -S -P {shlex.quote(str(hook))}"
    return f"{command} {agent}" if agent else command


def ours(hook: Any) -> bool:
    """Whether a hook entry (an object with a ``command``) runs NexusMem's hook."""
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and MARK in command.replace("\\", "/")


def repository_root(path: Path) -> Path:
    """The root of the git repository containing ``path``."""
    out = git_sync(path, "rev-parse", "--show-toplevel", check=False)
    if out.returncode != 0:
        raise NotAGitRepositoryError(f"{path} is not inside a git repository")
    return Path(out.stdout.strip())


# ------------------------------------------------------------------------------ JSON files


def load_json(path: Path) -> dict[str, Any] | None:
    """The file's JSON object, or None if there is no file; anything else is refused."""
    raw = read_bytes(path)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); "
            + UNTOUCHED
        ) from err
    except (ValueError, RecursionError) as err:  # not UTF-8, 4,300+ digits, deep nesting
        raise ConfigError(
            f"{path}: not valid JSON (not UTF-8, a number too long or nesting too deep); "
            + UNTOUCHED
        ) from err
    if not isinstance(data, dict):
        raise ConfigError(shape(path, "the top level", data, "an object"))
    return data


def shape(path: Path, where: str, value: Any, expected: str) -> str:
    """The one-line refusal of a field that is not of the shape the agent expects."""
    kinds: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    kind = kinds.get(type(value), "null" if value is None else "a number")
    return f"{path}: {where} is {kind}, not {expected}; {UNTOUCHED}"


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace the file atomically in the agents' own format, keeping its mode."""
    # ensure_ascii off: the agents (JSON.stringify) write non-ASCII text as it is.
    write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """Replace ``path``; a file made here is private (its hooks name the interpreter, and a
    settings file's ``env`` may hold tokens), one that exists keeps the mode its owner gave."""
    mode = None if path.exists() else PRIVATE_FILE
    make_dir(path.parent, PRIVATE_DIR)  # one that exists keeps its mode
    replace_file(path, text, mode)


# ------------------------------------------------------------------- files install created


def _created(home: Path) -> dict[str, Any]:
    """The note of the files install created: path -> the highest directory it created for the
    file, or "". A note that cannot be read is none: the file is then kept, as the user's."""
    try:
        data = json.loads(read_bytes(home / CREATED_FILE) or b"{}")
    except (ValueError, RecursionError, FileAccessError):
        return {}
    return data if isinstance(data, dict) else {}


def note_created(home: Path, path: Path) -> None:
    """Note, before writing it, that install is creating ``path`` (and the directories that do
    not exist yet): the note must exist whenever the file does."""
    top = ""
    for parent in path.parents:
        if parent.exists():
            break
        top = str(parent)
    notes = _created(home)
    notes[str(path)] = top
    _save(home, notes)


def forget_created(home: Path, path: Path) -> None:
    """Drop ``path`` from the note: it is gone, or no longer install's alone."""
    notes = _created(home)
    if notes.pop(str(path), None) is not None:
        _save(home, notes)


def created_by_install(home: Path, path: Path) -> bool:
    """Whether the note says install created ``path``."""
    return isinstance(_created(home).get(str(path)), str)


def remove_created(home: Path, path: Path) -> None:
    """Delete ``path``, which install created and which holds nothing of the user's, and the
    directories install made for it while they are empty."""
    top = _created(home).get(str(path))
    remove_file(path)
    if top:
        for parent in path.parents:
            with contextlib.suppress(OSError):  # rmdir refuses a directory that is not empty
                parent.rmdir()
            if str(parent) == top or parent.exists():
                break


def _save(home: Path, notes: dict[str, Any]) -> None:
    make_dir(home, 0o700)
    replace_file(home / CREATED_FILE, json.dumps(notes, indent=2) + "\n", PRIVATE_FILE)


# ------------------------------------------------------------------------- git and paths


def ignore_in_git(path: Path, top: Path, warnings: list[str]) -> str | None:
    """Unless git already ignores ``path`` (a file under the repository root ``top``), add it
    to the repository's ``info/exclude``: local to this clone and shared by its worktrees,
    where a ``.gitignore`` would be a change to commit. Return that file when it was changed."""
    name = path.relative_to(top).as_posix()
    check = git_sync(top, "check-ignore", "-q", name, check=False)
    if check.returncode == 0:
        return None
    where = git_sync(top, "rev-parse", "--git-path", "info/exclude", check=False)
    # check-ignore exits 1 for "not ignored"; anything else (a symlinked directory) is no answer.
    failed: subprocess.CompletedProcess[str] | None = (
        check if check.returncode != 1 else where if where.returncode != 0 else None
    )
    if failed is not None:
        reason = (failed.stderr.strip().splitlines() or [f"exit code {failed.returncode}"])[0]
        warnings.append(
            f"could not make git ignore {name} ({reason}): if `git status` lists it, "
            "ignore it yourself, as it holds this machine's paths"
        )
        return None
    exclude = Path(os.path.abspath(top / where.stdout.strip()))  # relative to ``top``, or not
    text = read_text(exclude) or ""
    if text and not text.endswith("\n"):
        text += "\n"
    replace_file(exclude, f"{text}/{name}\n")
    return str(exclude)


def missing_paths(command: str | list[str], fix: str) -> list[str]:
    """One warning for each path in ``command`` that does not exist on this machine."""
    if isinstance(command, str):
        try:
            words = shlex.split(command, posix=sys.platform != "win32")
        except ValueError:
            return []
        words = [w.strip('"') for w in words]
    else:
        words = command
    warnings = []
    if words and os.path.isabs(words[0]) and not os.path.exists(words[0]):
        warnings.append(f"the interpreter {words[0]} does not exist: {fix}")
    for word in words[1:]:
        if word.replace("\\", "/").endswith(MARK) and not os.path.exists(word):
            warnings.append(f"the hook {word} does not exist: {fix}")
    return warnings


def reinstall(flags: str) -> str:
    """The way out of hooks that can no longer run."""
    return f"reinstall with `nexusmem agent install{flags}`"


def settle(result: FileStatus, flags: str) -> FileStatus:
    """One warning per missing path (not per event), and the way to update hooks that differ
    from what this NexusMem writes."""
    result.warnings = list(dict.fromkeys(result.warnings))
    if result.state in ("partial", "outdated"):
        result.warnings.append(
            "these hooks differ from what this NexusMem writes: "
            f"run `nexusmem agent install{flags}` to update them"
        )
    return result


# ------------------------------------------------------------------------------- results


@dataclass
class InstallResult:
    path: str
    changed: bool
    command: str
    events: list[str]
    warnings: list[str]
    git_excluded: str | None = None  # the exclude file the project file was just added to


@dataclass
class FileStatus:
    scope: str  # user, project
    path: str | None
    state: str  # installed, partial, outdated, not installed, unreadable, no repository
    events: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
