"""``nexusmem agent install|remove|status``: NexusMem's hooks in Claude Code's settings.

The entries go into ``~/.claude/settings.json`` or, with ``--project``, the repository's
``.claude/settings.local.json``. Everything else in the file is kept: other keys, other events,
other tools' matcher groups and hooks. Our entries are found by the hook script's path inside
their command, not by the exact string, so a copy installed from a moved or upgraded NexusMem is
still replaced or removed. The file is written the way Claude Code writes it (two-space JSON and
a final newline), so a file in that form comes back byte for byte after install then remove; the
one exception is a ``"hooks"`` object left empty by remove, which is dropped. A file that
install created (a note in ``$NEXUSMEM_HOME`` says which) is deleted by remove when it held
nothing but our entries, and so is the ``.claude`` directory install created for it, when that
is empty. A file that is not valid JSON, or whose ``hooks`` are not shaped as Claude Code
expects, is refused and never rewritten. The project file holds this machine's absolute paths,
so install also makes git ignore it (in the clone's ``info/exclude``) unless something already
does. Standard library only: this runs from the CLI without an event loop.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...errors import (
    ConfigError,
    FileAccessError,
    NexusMemError,
    NotAGitRepositoryError,
)
from ...files import make_dir, read_bytes, read_text, remove_file, replace_file
from ...paths import home_dir
from ...private import PRIVATE_DIR, PRIVATE_FILE
from ..git import git_sync

__all__ = [
    "CREATED_FILE",
    "DROPS_FILE",
    "EVENTS",
    "EVENTS_FILE",
    "HOOK",
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

HOOK = Path(__file__).with_name("hook.py").resolve()
# How an entry is recognised as ours, whichever copy of NexusMem wrote it.
MARK = "nexusmem_core/collectors/agent/hook.py"
TOOLS = "Bash|Edit|Write|MultiEdit|NotebookEdit"
# (event, matcher or None for every source, timeout in seconds)
EVENTS: tuple[tuple[str, str | None, int], ...] = (
    ("PreToolUse", "Bash", 5),
    ("PostToolUse", TOOLS, 5),
    ("PostToolUseFailure", TOOLS, 5),
    ("SessionStart", None, 10),
)
EVENTS_FILE = "agent-events.jsonl"
DROPS_FILE = "agent-drops.json"
CREATED_FILE = "agent-created.json"  # the settings files install created, for remove
_UNTOUCHED = "fix it by hand, NexusMem will not rewrite it"


def user_file(environ: dict[str, str] | None = None) -> Path:
    """``~/.claude/settings.json``."""
    env = os.environ if environ is None else environ
    return Path(env.get("HOME") or Path.home()) / ".claude" / "settings.json"


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return git_sync(cwd, *args, check=False)  # an exit code here is an answer


def project_file(path: Path) -> Path:
    """``.claude/settings.local.json`` at the root of the repository containing ``path``."""
    out = _git(path, "rev-parse", "--show-toplevel")
    if out.returncode != 0:
        raise NotAGitRepositoryError(f"{path} is not inside a git repository")
    return Path(out.stdout.strip()) / ".claude" / "settings.local.json"


def hook_command(python: str = sys.executable, hook: Path = HOOK) -> str:
    """The command Claude Code runs: absolute paths, so no virtual environment is needed."""
    python = os.path.abspath(python)  # not resolved: a venv's python is a symlink that matters
    if sys.platform == "win32":
        return f'"{python}" -S -P "{hook}"'
    return f"{shlex.quote(python)} -S -P {shlex.quote(str(hook))}"


def _ours(hook: Any) -> bool:
    command = hook.get("command") if isinstance(hook, dict) else None
    return isinstance(command, str) and MARK in command.replace("\\", "/")


def _group(matcher: str | None, command: str, timeout: int) -> dict[str, Any]:
    group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
    group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
    return group


# ------------------------------------------------------------------------- the settings file


def _load(path: Path) -> dict[str, Any] | None:
    """The file's JSON object, or None if there is no file; anything else is refused."""
    raw = read_bytes(path)
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ConfigError(
            f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); "
            + _UNTOUCHED
        ) from err
    except (ValueError, RecursionError) as err:  # not UTF-8, 4,300+ digits, deep nesting
        raise ConfigError(
            f"{path}: not valid JSON (not UTF-8, a number too long or nesting too deep); "
            + _UNTOUCHED
        ) from err
    if not isinstance(data, dict):
        raise ConfigError(_shape(path, "the top level", data, "an object"))
    return data


def _shape(path: Path, where: str, value: Any, expected: str) -> str:
    kinds: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    kind = kinds.get(type(value), "null" if value is None else "a number")
    return f"{path}: {where} is {kind}, not {expected}; {_UNTOUCHED}"


def _hooks(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """``data["hooks"]`` (a new object if absent), checked to be Claude Code's shape."""
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(_shape(path, '"hooks"', hooks, "an object"))
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise ConfigError(_shape(path, f'"hooks.{event}"', groups, "a list"))
    return hooks


def _strip(hooks: dict[str, Any]) -> bool:
    """Take our hooks out of every event, dropping groups and events that only we filled."""
    found = False
    for event in list(hooks):
        kept, here = [], False
        for group in hooks[event]:
            inner = group.get("hooks") if isinstance(group, dict) else None
            rest = [h for h in inner if not _ours(h)] if isinstance(inner, list) else None
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


def _write(path: Path, data: dict[str, Any]) -> None:
    """Replace the file atomically in Claude Code's own format, keeping its mode."""
    # ensure_ascii off: Claude Code (JSON.stringify) writes non-ASCII text as it is.
    # A file made here is private: its hooks name the interpreter, and its ``env`` may hold
    # tokens. One that exists keeps the mode its owner gave it.
    mode = None if path.exists() else PRIVATE_FILE
    make_dir(path.parent, PRIVATE_DIR)  # one that exists keeps its mode
    replace_file(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", mode)


@dataclass
class InstallResult:
    path: str
    changed: bool
    command: str
    events: list[str]
    warnings: list[str]
    git_excluded: str | None = None  # the exclude file the project file was just added to


def install(
    path: Path,
    python: str = sys.executable,
    hook: Path = HOOK,
    *,
    project: bool = False,
    home: Path | None = None,
) -> InstallResult:
    """Put our entries into ``path`` (replacing any older ones); idempotent.

    ``project``: ``path`` is a repository's ``.claude/settings.local.json``. It holds this
    machine's absolute paths, so git is made to ignore it (see :func:`_ignore_in_git`).
    ``home`` (default ``$NEXUSMEM_HOME``) keeps the note that this call created the file.
    """
    link = path
    path = path.resolve()  # a symlinked settings file (dotfiles) stays a symlink
    loaded = _load(path)
    data = loaded or {}
    before = json.dumps(data)
    hooks = _hooks(data, path)
    _strip(hooks)
    command = hook_command(python, hook)
    for event, matcher, timeout in EVENTS:
        hooks.setdefault(event, []).append(_group(matcher, command, timeout))
    data["hooks"] = hooks
    changed = json.dumps(data) != before
    if loaded is None:  # before writing it: the note must exist whenever the file does
        _note_created(Path(home or home_dir()), path)
    if changed:
        _write(path, data)
    result = InstallResult(
        str(path), changed, command, [e for e, _, _ in EVENTS], _missing_paths(command, "")
    )
    if project:
        result.git_excluded = _ignore_in_git(link, result.warnings)
    return result


def _ignore_in_git(path: Path, warnings: list[str]) -> str | None:
    """Unless git already ignores ``path`` (``<top>/.claude/settings.local.json``), add it to
    the repository's ``info/exclude``: local to this clone and shared by its worktrees, where a
    ``.gitignore`` would be a change to commit. Return that file when it was changed."""
    top = path.parent.parent
    name = path.relative_to(top).as_posix()
    check = _git(top, "check-ignore", "-q", name)
    if check.returncode == 0:
        return None
    where = _git(top, "rev-parse", "--git-path", "info/exclude")
    # check-ignore exits 1 for "not ignored"; anything else (.claude a symlink) is no answer.
    failed = check if check.returncode != 1 else where if where.returncode != 0 else None
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


def remove(path: Path, *, home: Path | None = None) -> bool:
    """Take only our entries out of ``path``; return whether there were any. A file that
    :func:`install` created (the note in ``home``, default ``$NEXUSMEM_HOME``) and that held
    nothing else is deleted, with the directory install made for it if that is left empty."""
    path, home = path.resolve(), Path(home or home_dir())
    data = _load(path)
    if data is None:
        _forget_created(home, path)  # deleted by hand: the note is stale
        return False
    hooks = _hooks(data, path)
    if not _strip(hooks):
        return False
    if hooks:
        data["hooks"] = hooks
    else:  # documented: an empty "hooks" object is dropped, whoever created it
        data.pop("hooks", None)
    created = _created(home).get(str(path))
    if data or not isinstance(created, str):
        _write(path, data)
    else:
        remove_file(path)
        if created:
            with contextlib.suppress(OSError):  # rmdir refuses a directory that is not empty
                Path(created).rmdir()
    # After the file is done with: had that failed, the note would still say it is ours.
    _forget_created(home, path)
    return True


def _created(home: Path) -> dict[str, Any]:
    """The note of the settings files install created: path -> the directory it created for
    the file, or "". A note that cannot be read is none: the file is then kept, as ``{}``."""
    try:
        data = json.loads(read_bytes(home / CREATED_FILE) or b"{}")
    except (ValueError, RecursionError, FileAccessError):
        return {}
    return data if isinstance(data, dict) else {}


def _note_created(home: Path, path: Path) -> None:
    notes = _created(home)
    notes[str(path)] = "" if path.parent.exists() else str(path.parent)
    make_dir(home, 0o700)
    replace_file(home / CREATED_FILE, json.dumps(notes, indent=2) + "\n", PRIVATE_FILE)


def _forget_created(home: Path, path: Path) -> None:
    notes = _created(home)
    if notes.pop(str(path), None) is not None:
        replace_file(home / CREATED_FILE, json.dumps(notes, indent=2) + "\n", PRIVATE_FILE)


# ----------------------------------------------------------------------------------- status


def _missing_paths(command: str, flag: str) -> list[str]:
    """One warning for each path in ``command`` that does not exist on this machine."""
    try:
        words = shlex.split(command, posix=sys.platform != "win32")
    except ValueError:
        return []
    words = [w.strip('"') for w in words]
    fix = f"reinstall with `nexusmem agent install{flag}`"
    warnings = []
    if words and os.path.isabs(words[0]) and not os.path.exists(words[0]):
        warnings.append(f"the interpreter {words[0]} does not exist: {fix}")
    for word in words[1:]:
        if word.replace("\\", "/").endswith(MARK) and not os.path.exists(word):
            warnings.append(f"the hook {word} does not exist: {fix}")
    return warnings


@dataclass
class FileStatus:
    scope: str  # user, project
    path: str | None
    state: str  # installed, partial, outdated, not installed, unreadable, no repository
    events: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def file_status(
    scope: str, path: Path | None, python: str = sys.executable, hook: Path = HOOK
) -> FileStatus:
    """Which of our events ``path`` has, and whether their commands can still run."""
    if path is None:
        return FileStatus(scope, None, "no repository")
    flag = " --project" if scope == "project" else ""
    try:
        data = _load(path.resolve()) or {}
        hooks = _hooks(data, path)
    except (ConfigError, FileAccessError) as err:
        return FileStatus(scope, str(path), "unreadable", warnings=[str(err)])
    expected = {e: _group(m, hook_command(python, hook), t) for e, m, t in EVENTS}
    result = FileStatus(scope, str(path), "not installed")
    outdated = False
    for event, group, entry in _entries(hooks):
        outdated |= event in result.events  # a second copy of ours
        outdated |= {**group, "hooks": [entry]} != expected.get(event)
        result.events.append(event)
        result.warnings += _missing_paths(entry["command"], flag)
    result.warnings = list(dict.fromkeys(result.warnings))  # one per path, not per event
    result.missing = [e for e in expected if e not in result.events]
    if result.events:
        result.state = "partial" if result.missing else "outdated" if outdated else "installed"
    if result.state in ("partial", "outdated"):
        result.warnings.append(
            "these hooks differ from what this NexusMem writes: "
            f"run `nexusmem agent install{flag}` to update them"
        )
    return result


def _entries(hooks: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(event, matcher group, hook) for each of our hooks in the file."""
    found = []
    for event, groups in hooks.items():
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                found += [(event, group, h) for h in inner if _ours(h)]
    return found


def last_event(home: Path) -> float | None:
    """The ``ts`` of the last readable record in the hook's event log, or None."""
    try:
        with open(home / EVENTS_FILE, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - 65536))
            tail = handle.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        try:
            record = json.loads(line)
            ts = record["ts"]
            if isinstance(ts, bool) or not isinstance(ts, int | float):
                continue
            time.localtime(ts)  # a timestamp that cannot be shown is garbage too
        except (ValueError, TypeError, KeyError, OverflowError, OSError, RecursionError):
            continue
        return float(ts)
    return None


def read_drops(home: Path) -> dict[str, int]:
    """The hook's drop counters by reason, largest first; a missing or garbled file is none."""
    try:
        data = json.loads((home / DROPS_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    counts = {
        str(k): v
        for k, v in data.items()
        if isinstance(v, int) and not isinstance(v, bool) and v > 0
    }
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


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
