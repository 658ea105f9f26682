"""``nexusmem hook git|git-post install|remove|status``: NexusMem in git's own hooks.

* ``pre-commit`` (``hook git``) runs ``nexusmem precheck`` on the staged files. Advisory: it
  prints its warnings and lets the commit through; ``precheck --strict`` written into the
  block makes a warning stop the commit, and a reinstall keeps that choice.
* ``post-commit`` (``hook git-post``) starts ``nexusmem sync --auto --quiet`` detached, so
  ``git commit`` returns at once; ``--auto`` skips a sync while another one still runs.

Each is a marked block, as the shell hook is. A hook file NexusMem creates holds a shebang and
the block. Another tool's hook is left alone unless ``--force``, which puts the block right
after its shebang and keeps the rest; ``remove`` takes out exactly the block's lines, and
deletes the file only when nothing but a shebang is left. The directory is git's own answer
(``git rev-parse --git-path hooks``), so ``core.hooksPath`` and worktrees are honoured.

The block calls this interpreter and this ``cli.py`` by absolute path (``cli.py`` sits beside
the ``nexusmem_core`` package in a checkout and when installed), so it works outside the
virtualenv, and does nothing when either is gone. Standard library only: ``hook`` runs without
an event loop, inside every ``git commit``.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from .collectors.git import git_sync
from .errors import NotAGitRepositoryError, UsageError
from .files import read_text, remove_file, replace_file

__all__ = ["CLI", "COMMANDS", "GitHookStatus", "hooks_dir", "install", "remove", "render", "status"]

# The `hook` subcommand's word for each git hook it manages.
COMMANDS = {"git": "pre-commit", "git-post": "post-commit"}
CLI = Path(__file__).resolve().parent.parent / "cli.py"
# Shells that can run the block; a hook in another language cannot take it.
_SHELL = re.compile(r"^#!\s*(?:\S*/)?(?:env\s+)?(?:\S*/)?(?:sh|bash|dash|ash|ksh|zsh)(?:\s.*)?$")


def _markers(kind: str) -> tuple[str, str]:
    return f"# >>> nexusmem {kind} >>>", f"# <<< nexusmem {kind} <<<"


def _pattern(kind: str) -> re.Pattern[str]:
    begin, end = (re.escape(m) for m in _markers(kind))
    return re.compile(rf"^{begin}[^\n]*\n.*?^{end}[^\n]*(?:\n|\Z)", re.MULTILINE | re.DOTALL)


def _command(kind: str) -> str:
    return next(word for word, hook in COMMANDS.items() if hook == kind)


def _check_kind(kind: str) -> None:
    if kind not in COMMANDS.values():
        raise UsageError(f"{kind!r} is not a git hook NexusMem manages: pre-commit, post-commit")


def render(kind: str, python: str = sys.executable, cli: Path = CLI, strict: bool = False) -> str:
    """The marked block for ``kind``, calling ``python cli`` by absolute path."""
    begin, end = _markers(kind)
    # Not resolved: a virtualenv's python is a symlink whose target lacks the venv's packages.
    py, script = shlex.quote(Path(python).as_posix()), shlex.quote(Path(cli).as_posix())
    guard = f"if [ -x {py} ] && [ -f {script} ]; then"
    if kind == "pre-commit":
        lines = [
            "# Warns about staged files named by recent unresolved failures, or changed very",
            "# often. Advisory: `precheck --strict` makes a warning stop the commit.",
            guard,
            f"    {py} {script} precheck{' --strict' if strict else ''} || exit $?",
            "fi",
        ]
    else:
        lines = [
            "# Brings NexusMem's memory up to date in the background: git does not wait for",
            "# it, and a sync still running from the previous commit is not started twice.",
            guard,
            # Detached: its own stdio, SIGHUP ignored (a closing terminal), and the index
            # git used for this commit forgotten (the next one is the repository's own).
            f"    ( trap '' HUP; unset GIT_INDEX_FILE; exec {py} {script} sync --auto --quiet ) \\",
            "        </dev/null >/dev/null 2>&1 &",
            "fi",
        ]
    return "\n".join([begin, *lines, end]) + "\n"


def _git(repo: Path, *args: str) -> str:
    if not repo.is_dir():
        raise NotAGitRepositoryError(f"{repo} is not a directory")
    return git_sync(repo, *args).stdout.strip()


def hooks_dir(repo: Path) -> Path:
    """Where git looks for this repository's hooks (``core.hooksPath`` when it is set)."""
    # git prints it relative to where it ran, or absolute.
    return Path(os.path.abspath(repo / _git(repo, "rev-parse", "--git-path", "hooks")))


def _write(path: Path, text: str) -> None:
    """Replace the file in one step, executable wherever it is readable."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    replace_file(path, text, mode | (mode & 0o444) >> 2)


def _strict(block: str) -> bool:
    return " precheck --strict" in block


def _executable(path: Path) -> bool:
    return sys.platform == "win32" or os.access(path, os.X_OK)


def install(
    repo: Path, kind: str, force: bool = False, python: str = sys.executable, cli: Path = CLI
) -> tuple[str, Path]:
    """Put the block in the hook file; return what happened (created, added, updated,
    unchanged) and the file. Another tool's hook needs ``force``."""
    _check_kind(kind)
    path = hooks_dir(repo) / kind
    text = read_text(path)
    if text is None:
        _write(path, "#!/bin/sh\n" + render(kind, python, cli))
        return "created", path
    match = _pattern(kind).search(text)
    if match is not None:
        block = render(kind, python, cli, _strict(match.group(0)))
        new = text[: match.start()] + block + text[match.end() :]
        if new == text and _executable(path):
            return "unchanged", path
        _write(path, new)
        return "updated", path
    if not force:
        raise UsageError(
            f"{path} is another tool's {kind} hook: add --force to put NexusMem's block at "
            "its top (the rest is kept)"
        )
    first, _, rest = text.partition("\n")
    if "\0" in text or (first.startswith("#!") and not _SHELL.match(first)):
        raise UsageError(
            f"{path} is not a shell script, so NexusMem cannot add its block to it: call "
            f"`{python} {cli} {'precheck' if kind == 'pre-commit' else 'sync --auto'}` from it"
        )
    if first.startswith("#!"):
        new = first + "\n" + render(kind, python, cli) + rest
    else:  # no shebang: git runs it with sh, and the block goes first
        new = render(kind, python, cli) + text
    _write(path, new)
    return "added", path


def remove(repo: Path, kind: str) -> tuple[bool, Path]:
    """Take the block out of the hook file; return whether it was there, and the file."""
    _check_kind(kind)
    path = hooks_dir(repo) / kind
    text = read_text(path)
    match = _pattern(kind).search(text) if text is not None else None
    if text is None or match is None:
        return False, path
    rest = text[: match.start()] + text[match.end() :]
    left = [line for line in rest.splitlines() if line.strip()]
    if not left or (len(left) == 1 and left[0].startswith("#!")):
        remove_file(path)
    else:
        _write(path, rest)
    return True, path


@dataclass
class GitHookStatus:
    kind: str
    state: str  # installed, not installed, outdated, foreign hook present
    path: str
    warnings: list[str]


def status(repo: Path, kind: str, python: str = sys.executable, cli: Path = CLI) -> GitHookStatus:
    """installed / not installed / outdated / foreign hook present, and the hook's path."""
    _check_kind(kind)
    path = hooks_dir(repo) / kind
    text = read_text(path)
    match = _pattern(kind).search(text) if text is not None else None
    command = f"nexusmem hook {_command(kind)} install"
    warnings = []
    if text is None:
        state = "not installed"
    elif match is None:
        state = "foreign hook present"
        warnings.append(f"another tool wrote {path}: `{command} --force` adds NexusMem to it")
    elif match.group(0).rstrip("\n") != render(kind, python, cli, _strict(match.group(0)))[:-1]:
        state = "outdated"
        warnings.append(f"it calls another interpreter or cli.py: run `{command}` to update it")
    else:
        state = "installed"
    if match is not None and not _executable(path):
        warnings.append(f"{path} is not executable, so git skips it: run `{command}` again")
    return GitHookStatus(kind, state, str(path), warnings)
