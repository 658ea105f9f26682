"""``nexusmem precheck``: before a commit, what memory knows about the files in it.

Two warnings, both advisory (a git pre-commit hook runs this, and it never blocks a commit
unless ``--strict`` is asked for):

* **unresolved failure**: a command that failed in the last 30 days and has neither passed
  since nor been linked to a fix (``chains.unresolved_failures``) names the file, or the agent
  edited the file just before running it. A name counts when the command or its recorded
  output writes the file's repository path, a path that resolves to it from the command's
  directory, or its bare file name, and the bare name only when no other file in the
  repository has that name (``__init__.py`` in a package tree is never enough) and it looks
  like a file name (``build`` in ``npm run build`` is a word, not the file ``build``).
  Precision matters more than recall: a warning that is usually wrong teaches people to
  skip the hook.
* **high churn**: the file changed in at least 5 commits in the last 30 days and is among the
  top 5% of the files changed in that window by that count (ties included; in a window where
  fewer than 20 files changed, that is the most-changed file).

A repository that was never initialised is checked quietly as clean: this runs inside
``git commit`` in repositories that may never have heard of NexusMem. In a linked worktree the
worktree's own files are checked against its main checkout's memory, where its commands are
recorded too.
"""

from __future__ import annotations

import math
import os
import posixpath
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .chains import UnresolvedFailure, unresolved_failures
from .collectors.git import git, read_repo
from .collectors.shell.scope import repository_roots
from .engine import memory_repo, open_engine
from .errors import ConfigError, StoreError, UntrustedWorkspaceError
from .paths import DB_FILE, workspace_dir
from .store.db import Database

if TYPE_CHECKING:
    from .config import Settings

__all__ = ["PrecheckReport", "PrecheckWarning", "precheck"]

WINDOW = 30 * 86_400
CHURN_MIN = 5
CHURN_TOP = 0.05
PER_FILE = 3  # failures shown for one file; more are counted in the last one's line

# The characters a path is written with; anything else (spaces, quotes, "::", ":12") ends one.
_TOKEN = re.compile(r"[\w.~/\\+@-]+")


@dataclass(frozen=True)
class PrecheckWarning:
    path: str
    kind: str  # "failure" or "churn"
    message: str  # one line, naming the file and why
    node: str | None = None  # the failed command's node
    ts: int | None = None
    commits: int | None = None


@dataclass
class PrecheckReport:
    files: list[str]
    warnings: list[PrecheckWarning] = field(default_factory=list)
    skipped: str | None = None  # why nothing was checked
    notice: str | None = None  # a line worth showing on stderr about that, if any

    def lines(self) -> list[str]:
        """One line per warning, then a summary; nothing at all when there is nothing to say."""
        if not self.warnings:
            return []
        files = len({w.path for w in self.warnings})
        return [
            *(w.message for w in self.warnings),
            f"precheck: {len(self.warnings)} warning(s) on {files} of {len(self.files)} "
            "file(s); advisory (run `nexusmem query` on a file for its history)",
        ]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def precheck(
    settings: Settings,
    path: Path,
    *,
    files: list[str] | None = None,
    working: bool = False,
    now: float | None = None,
) -> PrecheckReport:
    """Warn about ``files`` (default: the staged ones; ``working``: every changed or untracked
    file in the working tree) named by recent unresolved failures, or changing very often."""
    now = time.time() if now is None else now
    checkout = await read_repo(path.expanduser())
    repo = await memory_repo(checkout)  # in a linked worktree, usually the main checkout
    if not (workspace_dir(repo.root) / DB_FILE).exists():
        return PrecheckReport(files=[], skipped="not initialised")
    checked = await _files(checkout.root, files, working)
    report = PrecheckReport(files=checked)
    if not checked:
        return report
    since = int(now - WINDOW)
    try:
        async with open_engine(settings, repo.root, read_only=True) as engine:
            failures = await unresolved_failures(engine.db, engine.project_id, since)
            texts = await _texts(engine.db, [f.id for f in failures])
            names = await _name_counts(checkout.root, checked, working) if failures else {}
            root = checkout.root.as_posix()
            others = await repository_roots(repo.root) if failures else []
            report.warnings += _failure_warnings(checked, failures, texts, names, root, now, others)
            report.warnings += await _churn_warnings(engine.db, engine.project_id, checked, since)
    except (StoreError, ConfigError, UntrustedWorkspaceError) as err:
        # Advisory: a memory that cannot be read (or must not be) must not stop a commit.
        report.skipped = report.notice = f"precheck skipped: {err}"
    order = {p: i for i, p in enumerate(checked)}
    report.warnings.sort(key=lambda w: (order[w.path], w.kind != "failure"))
    return report


# ------------------------------------------------------------------------------------ the files


def _split(output: str) -> list[str]:
    return [p for p in output.split("\0") if p]


async def _files(root: Path, explicit: list[str] | None, working: bool) -> list[str]:
    """Repository-relative paths, in a stable order, each once."""
    if explicit is not None:
        found = [_relative(name, root) for name in explicit]
    else:
        # Added, copied, modified or renamed: a deleted file has nothing left to warn about.
        changed = ("--name-only", "-z", "--diff-filter=ACMR")
        found = _split(await git(root, "diff", "--cached", *changed))
        if working:
            found += _split(await git(root, "diff", *changed))
            found += _split(await git(root, "ls-files", "--others", "--exclude-standard", "-z"))
    return list(dict.fromkeys(found))


def _relative(name: str, root: Path) -> str:
    """A path as typed (from here) made repository-relative; one outside stays as given."""
    here = os.path.abspath(name)
    for base in (str(root), os.path.realpath(root)):
        if here.startswith(base + os.sep):
            return Path(os.path.relpath(here, base)).as_posix()
    return Path(name).as_posix()


async def _name_counts(root: Path, checked: list[str], working: bool) -> dict[str, int]:
    """How many files in the repository carry each checked file's name."""
    wanted = {posixpath.basename(p) for p in checked}
    args = ["ls-files", "-z", "--cached"]
    if working:
        args += ["--others", "--exclude-standard"]
    every = set(_split(await git(root, *args))) | set(checked)
    counts = dict.fromkeys(wanted, 0)
    for p in every:
        name = posixpath.basename(p)
        if name in counts:
            counts[name] += 1
    return counts


# ---------------------------------------------------------------------------------- failures


async def _texts(db: Database, ids: list[str]) -> dict[str, str]:
    """The searchable text of each failure: its command, and any output recorded with it."""
    out: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows = await db.fetchall(f"select id, title, body from nodes where id in ({marks})", chunk)
        out.update({node_id: f"{title}\n{body}" for node_id, title, body in rows})
    return out


def _looks_like_file(name: str) -> bool:
    return "." in name[1:] or (name.startswith(".") and len(name) > 3)


def _cwd_in_repo(cwd: str | None, roots: list[str]) -> str | None:
    """The failure's working directory relative to the checkout it was in, if any (the
    deepest: a worktree may sit inside the main checkout)."""
    if not cwd:
        return None
    real = os.path.realpath(cwd)
    for base in sorted({os.path.realpath(r) for r in roots}, key=len, reverse=True):
        if real == base:
            return "."
        if real.startswith(base.rstrip(os.sep) + os.sep):
            return Path(os.path.relpath(real, base)).as_posix()
    return None


def _names(token: str, path: str, cwd: str | None, roots: list[str], unique: bool) -> bool:
    """Whether ``token``, as written in a command run in ``cwd``, means the file ``path``."""
    t = token.replace("\\", "/").rstrip(".,")
    if "/" not in t and not _looks_like_file(t):
        return False
    if t.startswith("/") or re.match(r"^[A-Za-z]:/", t):
        return any(t == f"{base}/{path}" for base in roots)
    if t.startswith("~"):
        return False
    t = posixpath.normpath(t)
    if t == path or (cwd is not None and posixpath.normpath(posixpath.join(cwd, t)) == path):
        return True
    return unique and t == posixpath.basename(path)


def _failure_warnings(
    checked: list[str],
    failures: list[UnresolvedFailure],
    texts: dict[str, str],
    names: dict[str, int],
    root: str,
    now: float,
    others: list[str] | None = None,
) -> list[PrecheckWarning]:
    """``root`` is the checked checkout's top; ``others`` the repository's other checkouts
    (main and worktrees), where a command may have named the same file by another path."""
    given = [root, *(others or [])]
    roots = list(dict.fromkeys([*given, *(Path(os.path.realpath(r)).as_posix() for r in given)]))
    hits: dict[str, list[tuple[UnresolvedFailure, bool]]] = {}
    for failure in failures:  # newest first
        cwd = _cwd_in_repo(failure.cwd, roots)
        tokens = set(_TOKEN.findall(texts.get(failure.id, failure.title)))
        for path in checked:
            unique = names.get(posixpath.basename(path), 0) == 1
            edited = any(_names(e, path, cwd, roots, False) for e in failure.edited if e)
            if edited or any(_names(t, path, cwd, roots, unique) for t in tokens):
                hits.setdefault(path, []).append((failure, edited))
    warnings = []
    for path in checked:
        found = hits.get(path, [])
        for i, (failure, edited) in enumerate(found[:PER_FILE]):
            how = "was edited just before" if edited else "is named by"
            more = len(found) - PER_FILE if i == PER_FILE - 1 else 0
            tail = f" (and {more} more unresolved failure(s))" if more > 0 else ""
            message = (
                f"{path}: {how} `{_short(failure.title)}`, which failed {_ago(failure.ts, now)} "
                f"and has not passed since{tail}"
            )
            warnings.append(PrecheckWarning(path, "failure", message, failure.id, failure.ts))
    return warnings


def _short(command: str, limit: int = 60) -> str:
    line = command.strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _ago(ts: int | None, now: float) -> str:
    if ts is None:
        return "recently"
    seconds = max(0, int(now - ts))
    if seconds < 3600:
        return f"{max(1, seconds // 60)} min ago"
    if seconds < 86_400:
        hours = seconds // 3600
        return f"{hours} hour{'s' if hours > 1 else ''} ago"
    days = seconds // 86_400
    return f"{days} day{'s' if days > 1 else ''} ago"


# ------------------------------------------------------------------------------------- churn


async def _churn_warnings(
    db: Database, project_id: str, checked: list[str], since: int
) -> list[PrecheckWarning]:
    rows = await db.fetchall(
        """
        select f.path, count(*) from node_files f join nodes n on n.seq = f.node_seq
        where n.project_id = ? and n.kind = 'git_commit' and n.ts >= ?
        group by f.path order by 2 desc
        """,
        (project_id, since),
    )
    if not rows:
        return []
    top = math.ceil(len(rows) * CHURN_TOP)
    threshold = max(CHURN_MIN, rows[top - 1][1])
    counts = dict(rows)
    return [
        PrecheckWarning(
            path,
            "churn",
            f"{path}: changed in {counts[path]} commits in the last 30 days "
            "(high churn: among this repository's most-changed files)",
            commits=counts[path],
        )
        for path in checked
        if counts.get(path, 0) >= threshold
    ]
