"""What the memory knows about one command, told in one short note, at the moment of action.

Read on every Bash call the agent makes, so: the standard library's ``sqlite3`` opened
read-only (no extension, no migration, no write lock), one indexed lookup by the command's
keyed hash, and the tails of the hook logs that no sync has read yet (the failure a minute ago
in this same session is the one most worth knowing about). No model, no network.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import time
from collections import namedtuple
from collections.abc import Iterable, Iterator

from ...textguard import code_span, one_line
from ...trust import trusted
from ..commands import is_predicate
from ..shell import hooklog
from . import AGENT_LOG

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~3 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = ["AGENT_LOG", "Memory", "Run", "Story", "digest", "find_root", "note_for", "story"]

TAIL_BYTES = 2 * 1024 * 1024  # at most this much unsynced log is read per call
DIGEST_DAYS = 14
DIGEST_CHARS = 600  # about 150 tokens
RECALL_DAYS = 90  # older failures are history, not a warning
SETTLED = 3  # passes since the last failure after which it is no longer worth a note

# Commands that undo work in the files they name...
_UNDO_PATHS = re.compile(
    r"^git\s+(?:checkout\s+(?:\S+\s+)?--\s|restore\s+(?!.*--staged\b(?!.*--worktree))|"
    r"checkout\s+HEAD\s)"
)
# ... and those that undo every uncommitted change.
_UNDO_ALL = re.compile(r"^git\s+(?:reset\s+--hard\b|stash(?:\s+(?:push|save)\b|\s*$))")


class Run(namedtuple("Run", "id ts outcome exit title edited cmd_hash cwd")):
    """One recorded run of a command."""

    __slots__ = ()
    id: str
    ts: float
    outcome: str  # ok | failed | interrupted | background | unknown
    exit: int | None
    title: str
    edited: list[str]
    cmd_hash: str | None
    cwd: str | None  # the real path it ran in


def find_root(cwd: str, home: str) -> tuple[str, str] | None:
    """Where the memory of the repository around ``cwd`` lives, and the top of the checkout
    ``cwd`` is in: the same directory, except in a linked worktree, whose memory is the main
    checkout's. None where NexusMem has not run (no ``.nexusmem/memory.db``), and where the
    ``.nexusmem`` is not this user's own (a clone shipped it: see ``trust.py``)."""
    path = os.path.realpath(cwd)
    while True:
        if os.path.isfile(os.path.join(path, ".nexusmem", "memory.db")):
            return (path, path) if trusted(path, home) else None
        git = os.path.join(path, ".git")
        if os.path.isfile(git):  # a linked worktree: ".git" names its git dir
            main = _main_checkout(git)
            if main and os.path.isfile(os.path.join(main, ".nexusmem", "memory.db")):
                return (main, path) if trusted(main, home) else None
            return None
        if os.path.exists(git):
            return None  # the repository's top, never initialised
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _main_checkout(dot_git: str) -> str | None:
    """The main checkout of a linked worktree, from its ``.git`` file and ``commondir``."""
    try:
        with open(dot_git, encoding="utf-8") as handle:
            line = handle.readline().strip()
        if not line.startswith("gitdir:"):
            return None
        gitdir = os.path.join(os.path.dirname(dot_git), line[len("gitdir:") :].strip())
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
            common = os.path.realpath(os.path.join(gitdir, handle.readline().strip()))
    except OSError:
        return None
    return os.path.dirname(common) if os.path.basename(common) == ".git" else None


def _worktrees(root: str) -> list[str]:
    """The linked worktrees of the repository at ``root`` (from ``.git/worktrees/*/gitdir``)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(os.path.join(root, ".git", "worktrees")):
            with contextlib.suppress(OSError), open(os.path.join(entry.path, "gitdir")) as handle:
                found.append(os.path.dirname(os.path.realpath(handle.readline().strip())))
    return found


def _outcome(outcome: Any, code: Any, title: str) -> tuple[str, int | None]:
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if isinstance(outcome, str) and outcome:
        return outcome, code
    if code is None:
        return "unknown", None
    if code == 0:
        return "ok", 0
    if code in (130, 131):
        return "interrupted", code
    return ("false" if code == 1 and is_predicate(title) else "failed"), code


def _paths(value: Any) -> list[str]:
    if isinstance(value, str):  # json_extract gives an array as its JSON text
        if value in ("", "[]"):
            return []
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [p for p in value if isinstance(p, str)] if isinstance(value, list) else []


# The facts of a run, pulled out by SQLite: parsing every node's meta in Python was 40% of a
# session-start digest over 9,000 runs.
_RUN_COLUMNS = (
    "ref, coalesce(json_extract(meta, '$.at'), ts), title, json_extract(meta, '$.outcome'), "
    "json_extract(meta, '$.exit'), json_extract(meta, '$.edited'), "
    "json_extract(meta, '$.cmd_hash'), json_extract(meta, '$.cwd')"
)


def _row_run(row: tuple[Any, ...]) -> Run:
    ref, ts, title, outcome, code, edited, cmd_hash, cwd = row
    state, code = _outcome(outcome, code, title)
    return Run(ref, float(ts or 0), state, code, title, _paths(edited), cmd_hash, cwd)


def _record_run(record: dict[str, Any]) -> Run:
    title = str(record.get("cmd", ""))
    state, code = _outcome(record.get("outcome"), record.get("exit"), title)
    when = record.get("start") or record.get("ts")
    cmd_hash, cwd = record.get("cmd_hash"), record.get("cwd")
    return Run(
        record["id"],
        float(when) if isinstance(when, int | float) else 0.0,
        state,
        code,
        title,
        _paths(record.get("edited")),
        cmd_hash if isinstance(cmd_hash, str) else None,
        cwd if isinstance(cwd, str) else None,
    )


class Memory:
    """One repository's memory, read-only: its database plus the unsynced log tails."""

    def __init__(self, root: str, home: str, top: str | None = None) -> None:
        self.root = root
        self.home = home
        # Commands count as this repository's when run under its root or one of its linked
        # worktrees (as sync counts them).
        tops = {root, top or root, *_worktrees(root)}
        self.tops = sorted(tops, key=len, reverse=True)
        self.prefixes = tuple(p.rstrip(os.sep) + os.sep for p in self.tops)
        self.conn: sqlite3.Connection | None = None
        self.project_id: str | None = None
        self.cursors: dict[str, str] = {}
        self._tail: list[tuple[dict[str, Any], str]] | None = None
        self._by_hash: dict[str, list[Run]] | None = None
        self._places: dict[str, str | None] = {}
        db = os.path.join(root, ".nexusmem", "memory.db").replace(os.sep, "/")
        with contextlib.suppress(sqlite3.Error):
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)
            if not conn.execute(
                "select 1 from sqlite_master where type = 'table' and name = 'links'"
            ).fetchone():
                conn.close()  # older than schema 4: `nexusmem sync` upgrades it
                return
            row = conn.execute("select id from projects where root = ?", (root,)).fetchone()
            if row:
                self.conn, self.project_id = conn, row[0]
                self.cursors = dict(
                    conn.execute(
                        "select source, value from cursors where project_id = ?", (row[0],)
                    ).fetchall()
                )
            else:
                conn.close()

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()

    def place(self, cwd: str | None) -> str | None:
        """Where in the repository ``cwd`` is ("." or "pkg/a"), the same in every worktree;
        None outside it. `npm test` in pkg/a and in pkg/b are different commands."""
        if not cwd:
            return None
        if cwd not in self._places:
            real = os.path.realpath(cwd)
            self._places[cwd] = next(
                (
                    os.path.relpath(real, top).replace(os.sep, "/")
                    for top in self.tops
                    if (real + os.sep).startswith(top.rstrip(os.sep) + os.sep)
                ),
                None,
            )
        return self._places[cwd]

    # ------------------------------------------------------------------ the log tails

    def tail(self) -> list[tuple[dict[str, Any], str]]:
        """Records no sync has read yet, of commands run in this repository: (record, kind)."""
        if self._tail is None:
            self._tail = [
                *self._read(AGENT_LOG, self.cursors.get("agent:claude"), "agent"),
                *self._read(hooklog.LOG_FILE, self.cursors.get("shell:hook"), "shell"),
            ]
        return self._tail

    def _read(self, name: str, cursor: str | None, kind: str) -> Iterator[tuple[dict, str]]:
        path = os.path.join(self.home, name)
        try:
            size = os.stat(path).st_size
        except OSError:
            return
        start = hooklog.LogCursor.decode(cursor)
        if size - start.offset > TAIL_BYTES or start.offset > size:
            start = hooklog.LogCursor(max(0, size - TAIL_BYTES), "")
        prefixes = self.prefixes
        resolved: dict[str, str] = {}
        # The agent hook stores resolved directories, so a line of another repository can be
        # passed over without parsing it: most of a shared log is other repositories'.
        marks = [json.dumps(t)[1:-1].encode() for t in self.tops] if kind == "agent" else []
        with contextlib.suppress(OSError), open(path, "rb") as handle:
            handle.seek(start.offset)
            if start.offset and not start.head:
                handle.readline()  # started mid-file: skip to the next whole line
            for line in handle:
                if not line.endswith(b"\n"):
                    break
                if marks and not any(mark in line for mark in marks):
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                cwd = record.get("cwd") if isinstance(record, dict) else None
                if not isinstance(cwd, str) or not os.path.isabs(cwd):
                    continue
                if (cwd + os.sep).startswith(prefixes):
                    yield record, kind
                elif kind == "shell":  # a shell reports $PWD, which may go through a link
                    real = resolved.get(cwd) or resolved.setdefault(cwd, os.path.realpath(cwd))
                    if (real + os.sep).startswith(prefixes):
                        yield record, kind

    def tail_runs(self) -> dict[str, list[Run]]:
        """The unsynced runs, by command hash (built once per hook call)."""
        if self._by_hash is None:
            self._by_hash = {}
            for record, _kind in self.tail():
                if isinstance(record.get("id"), str) and isinstance(record.get("cmd_hash"), str):
                    self._by_hash.setdefault(record["cmd_hash"], []).append(_record_run(record))
        return self._by_hash

    # ------------------------------------------------------------------ questions

    def runs(self, cmd_hash: str, cwd: str | None = None, since: float | None = None) -> list[Run]:
        """Every recorded run of the command with this hash, in the same place as ``cwd`` when
        given, since ``since`` when given; oldest first."""
        found: dict[str, Run] = {}
        if self.conn is not None:
            rows = self.conn.execute(
                f"select {_RUN_COLUMNS} from nodes where project_id = ? and "
                "kind = 'shell_command' and json_extract(meta, '$.cmd_hash') = ? and ts >= ? "
                "order by ts, seq",
                (self.project_id, cmd_hash, int(since or 0)),
            ).fetchall()
            found = {row[0]: _row_run(row) for row in rows}
        for run in self.tail_runs().get(cmd_hash, []):
            if since is None or run.ts >= since:
                found.setdefault(run.id, run)
        runs = sorted(found.values(), key=lambda r: r.ts)  # stable: ties keep their order
        if cwd is None:
            return runs
        here = self.place(cwd)
        return [r for r in runs if self.place(r.cwd) == here]

    def failures_since(self, since: float) -> list[list[Run]]:
        """Commands with a failure since ``since``: the runs of each since then, one list per
        command and place."""
        hashes: set[str] = set()
        if self.conn is not None:
            rows = self.conn.execute(
                "select distinct json_extract(meta, '$.cmd_hash') from nodes "
                "where project_id = ? and kind = 'shell_command' and ts >= ? and "
                "(json_extract(meta, '$.outcome') = 'failed' or "
                "(json_extract(meta, '$.outcome') is null and "
                "json_extract(meta, '$.exit') not in (0, 130, 131)))",
                (self.project_id, int(since)),
            ).fetchall()
            hashes |= {h for (h,) in rows if isinstance(h, str)}
        for cmd_hash, runs in self.tail_runs().items():
            if any(r.outcome == "failed" and r.ts >= since for r in runs):
                hashes.add(cmd_hash)
        groups: list[list[Run]] = []
        for cmd_hash in sorted(hashes):
            by_place: dict[str | None, list[Run]] = {}
            for run in self.runs(cmd_hash, since=since):
                by_place.setdefault(self.place(run.cwd), []).append(run)
            groups += by_place.values()
        return groups

    def reverts_after(self, ts: float, paths: list[str]) -> str | None:
        """What undid a fix since it passed: a revert commit touching the files edited before
        it, a ``git checkout --``/``restore`` naming one of them, or a ``reset --hard`` or
        ``stash`` of all uncommitted work. A fix with no recorded edit has nothing to undo."""
        if not paths:
            return None
        names = {os.path.basename(p) for p in paths} | set(paths)
        candidates: list[tuple[float, str]] = []
        if self.conn is not None:
            rows = self.conn.execute(
                "select coalesce(json_extract(meta, '$.at'), ts), title from nodes "
                "where project_id = ? and kind = 'shell_command' and ts >= ? "
                "and title like 'git %'",
                (self.project_id, int(ts)),
            ).fetchall()
            candidates += [(float(t or 0), title) for t, title in rows]
            marks = ",".join("?" * len(paths))
            commit = self.conn.execute(
                "select n.ts, n.title from nodes n join node_files f on f.node_seq = n.seq "
                f"where n.project_id = ? and n.kind = 'git_commit' and n.ts >= ? and "
                f"n.title like 'Revert%' and f.path in ({marks}) order by n.ts limit 1",
                (self.project_id, int(ts), *paths),
            ).fetchone()
            if commit:
                return f"commit “{one_line(commit[1])}” ({_when(commit[0])})"
        for record, _kind in self.tail():
            when = record.get("start") or record.get("ts")
            if isinstance(when, int | float) and isinstance(record.get("cmd"), str):
                candidates.append((float(when), record["cmd"]))
        for when, command in sorted(candidates):
            if when <= ts:
                continue
            words = {w.strip("'\"") for w in command.split()}
            named = bool(names & (words | {os.path.basename(w) for w in words}))
            if _UNDO_ALL.match(command) or (_UNDO_PATHS.match(command) and named):
                return f"{code_span(_short(command))} ({_when(when)})"
        return None

    def discussions(self, ids: Iterable[str]) -> list[str]:
        """Titles of the conversations linked to these failures."""
        ids = list(ids)
        if self.conn is None or not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"select distinct d.title from links l join nodes s on s.id = l.src "
            f"join nodes d on d.id = l.dst where l.kind = 'discussion' and s.ref in ({marks})",
            ids,
        ).fetchall()
        return [title for (title,) in rows]


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def _short(text: str, limit: int = 80) -> str:
    """The first line of stored text, cut to ``limit`` and made safe to quote to an agent."""
    line = text.strip().split("\n", 1)[0]
    return one_line(line if len(line) <= limit else line[: limit - 1] + "…")


def _files(paths: list[str], limit: int = 3) -> str:
    unique = list(dict.fromkeys(paths))
    shown = ", ".join(one_line(path) for path in unique[:limit])
    return shown + (f" and {len(unique) - limit} more" if len(unique) > limit else "")


class Story(namedtuple("Story", "title failures fix failed_again edited fix_edited passes_after")):
    """One command's failures and what became of them."""

    __slots__ = ()
    title: str
    failures: list[Run]
    fix: Run | None  # the first passing run after the last failure
    failed_again: bool  # an earlier fix did not hold
    edited: list[str]  # what was changed just before the failures
    fix_edited: list[str]  # what was changed just before the fix (since the last failure)
    passes_after: int  # passing runs since the last failure


def story(runs: list[Run], exclude: str | None = None) -> Story | None:
    """The story of one command's runs (oldest first), or None if it never failed."""
    runs = [r for r in runs if r.id != exclude and r.outcome != "background"]
    failed_at = [i for i, r in enumerate(runs) if r.outcome == "failed"]
    if not failed_at:
        return None
    # Positions, not times: two runs in one second are still in the order they happened.
    first, last = failed_at[0], failed_at[-1]
    after = runs[last + 1 :]
    fix_at = next((i for i, r in enumerate(after) if r.outcome == "ok"), None)
    fix = after[fix_at] if fix_at is not None else None
    return Story(
        title=runs[last].title,
        failures=[runs[i] for i in failed_at],
        fix=fix,
        failed_again=any(r.outcome == "ok" for r in runs[first:last]),
        edited=[p for i in failed_at for p in runs[i].edited],
        fix_edited=[p for r in after[: (fix_at or 0) + 1] for p in r.edited] if fix else [],
        passes_after=sum(r.outcome == "ok" for r in after),
    )


def note_for(memory: Memory, tale: Story, now: float) -> str:
    """The one short note an agent gets before (or right after) running a failed command."""
    count = len(tale.failures)
    times = "once" if count == 1 else f"{count} times"
    last = tale.failures[-1]
    code = f", exit {last.exit}" if last.exit is not None else ""
    text = (
        f"NexusMem: {code_span(_short(tale.title))} failed {times} in this repository before "
        f"(last {_when(last.ts)}{code}"
    )
    if tale.edited:
        text += f", after editing {_files(tale.edited)}"
    text += "). "
    if tale.fix is not None:
        how = f" after editing {_files(tale.fix_edited)}" if tale.fix_edited else ""
        text += f"Recorded fix: it passed at {_when(tale.fix.ts)}{how}."
        reverted = memory.reverts_after(tale.fix.ts, tale.fix_edited)
        if reverted:
            text += f" That fix was reverted since: {reverted}."
    elif tale.failed_again:
        text += "A fix was recorded earlier, but it failed again since; no fix after that."
    else:
        text += "No fix was ever recorded."
    discussed = memory.discussions(r.id for r in tale.failures)
    if discussed:
        text += f" Discussed in: {_short(discussed[0], 100)}."
    return text


def digest(memory: Memory, now: float) -> str | None:
    """At session start: the commands that failed in the last two weeks, resolved first."""
    stories = [
        tale
        for runs in memory.failures_since(now - DIGEST_DAYS * 86400)
        if (tale := story(runs)) is not None
    ]
    if not stories:
        return None
    stories.sort(key=lambda t: (t.fix is None, -t.failures[-1].ts))
    lines = [f"NexusMem: commands that failed here in the last {DIGEST_DAYS} days:"]
    size = len(lines[0])
    for tale in stories:
        count = len(tale.failures)
        if tale.fix is not None:
            how = f" after editing {_files(tale.fix_edited, 2)}" if tale.fix_edited else ""
            state = f"fixed {_when(tale.fix.ts)[5:]}{how}"
        else:
            state = "no fix recorded"
        last = _when(tale.failures[-1].ts)[5:]
        line = f"- {code_span(_short(tale.title, 60))} failed {count}x, last {last}; {state}"
        if size + len(line) + 1 > DIGEST_CHARS:
            lines.append(f"- and {len(stories) - len(lines) + 1} more (`nexusmem query failed`)")
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)
