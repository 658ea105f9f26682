"""What the memory knows about one command, told in one short note, at the moment of action.

Read on every Bash call the agent makes, so: the standard library's ``sqlite3`` opened
read-only (no extension, no migration, no write lock), one indexed lookup by the command's
keyed hash, and the tails of the hook logs that no sync has read yet (the failure a minute ago
in this same session is the one most worth knowing about). No model, no network.

A failure is also matched by what went wrong (its error signature, ``signature.py``): right
after one, the same error met here before by any command, and what made it go away (the
commands and edits between its last failure and a pass that showed it gone); before a command,
what made its last error go away when its own runs cannot tell. Another error is not a match.
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

__all__ = [
    "AGENT_LOG",
    "Memory",
    "Run",
    "Story",
    "digest",
    "find_root",
    "note",
    "note_for",
    "story",
]

TAIL_BYTES = 2 * 1024 * 1024  # at most this much unsynced log is read per call
DIGEST_DAYS = 14
DIGEST_CHARS = 600  # about 150 tokens
RECALL_DAYS = 90  # older failures are history, not a warning
SETTLED = 3  # passes since the last failure after which it is no longer worth a note
WINDOW = 24 * 3600  # an error gone this long after it happened is not known to be fixed
SESSIONS = 3  # sessions read at most to learn how an error went away

# Commands that undo work in the files they name...
_UNDO_PATHS = re.compile(
    r"^git\s+(?:checkout\s+(?:\S+\s+)?--\s|restore\s+(?!.*--staged\b(?!.*--worktree))|"
    r"checkout\s+HEAD\s)"
)
# ... and those that undo every uncommitted change.
_UNDO_ALL = re.compile(r"^git\s+(?:reset\s+--hard\b|stash(?:\s+(?:push|save)\b|\s*$))")


class Run(namedtuple("Run", "id ts outcome exit title edited cmd_hash cwd sig session")):
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
    sig: str | None  # the id of its error's signature (signature.py), when it had one
    session: str | None


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
    "json_extract(meta, '$.cmd_hash'), json_extract(meta, '$.cwd'), "
    "json_extract(meta, '$.sig'), json_extract(meta, '$.session')"
)


def _row_run(row: tuple[Any, ...]) -> Run:
    ref, ts, title, outcome, code, edited, cmd_hash, cwd, sig, session = row
    state, code = _outcome(outcome, code, title)
    sig = sig if isinstance(sig, str) else None
    return Run(ref, float(ts or 0), state, code, title, _paths(edited), cmd_hash, cwd, sig, session)


def _record_sig(record: dict[str, Any]) -> str | None:
    """The signature id a log record carries (signature.failure_fields wrote it)."""
    sig = record.get("sig")
    found = sig.get("id") if isinstance(sig, dict) else None
    return found if isinstance(found, str) and len(found) == 16 else None


def _record_run(record: dict[str, Any]) -> Run:
    title = str(record.get("cmd", ""))
    state, code = _outcome(record.get("outcome"), record.get("exit"), title)
    when = record.get("start") or record.get("ts")
    cmd_hash, cwd, session = record.get("cmd_hash"), record.get("cwd"), record.get("session")
    return Run(
        record["id"],
        float(when) if isinstance(when, int | float) else 0.0,
        state,
        code,
        title,
        _paths(record.get("edited")),
        cmd_hash if isinstance(cmd_hash, str) else None,
        cwd if isinstance(cwd, str) else None,
        _record_sig(record),
        session if isinstance(session, str) else None,
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
        self.signed = False  # the database has the index of error signatures (schema 17)
        self.failed_index = ""  # ... and that of failed commands (schema 18): its hint
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
                indexes = {
                    name
                    for (name,) in conn.execute(
                        "select name from sqlite_master where type = 'index' and name in "
                        "('nodes_error_sig', 'nodes_failed_commands')"
                    )
                }
                self.signed = "nodes_error_sig" in indexes
                if "nodes_failed_commands" in indexes:
                    # Named: the planner, with no statistics, prefers the kind-and-time index.
                    self.failed_index = " indexed by nodes_failed_commands"
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
        runs = self._runs_of([cmd_hash], since or 0)[cmd_hash]
        if cwd is None:
            return runs
        here = self.place(cwd)
        return [r for r in runs if self.place(r.cwd) == here]

    def sig_failures(self, sig: str, cwd: str | None, since: float) -> list[Run]:
        """Every recorded failure with error signature ``sig`` in the same place as ``cwd``,
        since ``since``, whatever the command; oldest first. An index lookup (schema 17; an
        older database answers from the unsynced log alone)."""
        found: dict[str, Run] = {}
        if self.conn is not None and self.signed:
            rows = self.conn.execute(
                f"select {_RUN_COLUMNS} from nodes where project_id = ? and "
                "kind = 'shell_command' and json_extract(meta, '$.sig') = ? and ts >= ? "
                "order by ts, seq",
                (self.project_id, sig, int(since)),
            ).fetchall()
            found = {row[0]: _row_run(row) for row in rows}
        for record, kind in self.tail():
            if kind == "agent" and _record_sig(record) == sig and isinstance(record.get("id"), str):
                run = _record_run(record)
                if run.ts >= since:
                    found.setdefault(run.id, run)
        here = self.place(cwd)
        runs = sorted(found.values(), key=lambda r: r.ts)
        return [r for r in runs if r.outcome == "failed" and self.place(r.cwd) == here]

    def session_runs(self, session: str, cwd: str | None, start: float, end: float) -> list[Run]:
        """The runs of one session in the same place as ``cwd`` between two moments, oldest
        first (a range of the kind-and-time index, then the session's own)."""
        found: dict[str, Run] = {}
        if self.conn is not None:
            rows = self.conn.execute(
                f"select {_RUN_COLUMNS} from nodes where project_id = ? and "
                "kind = 'shell_command' and ts between ? and ? "
                "and json_extract(meta, '$.session') = ? order by ts, seq",
                (self.project_id, int(start), int(end) + 1, session),
            ).fetchall()
            found = {row[0]: _row_run(row) for row in rows}
        for record, _kind in self.tail():
            if record.get("session") == session and isinstance(record.get("id"), str):
                run = _record_run(record)
                if start <= run.ts <= end:
                    found.setdefault(run.id, run)
        here = self.place(cwd)
        runs = sorted(found.values(), key=lambda r: r.ts)
        return [r for r in runs if self.place(r.cwd) == here]

    def failures_since(self, since: float) -> list[list[Run]]:
        """Commands with a failure since ``since``: the runs of each since then, one list per
        command and place."""
        hashes: set[str] = set()
        if self.conn is not None:
            rows = self.conn.execute(
                f"select distinct json_extract(meta, '$.cmd_hash') from nodes{self.failed_index} "
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
        every = self._runs_of(sorted(hashes), since)
        for cmd_hash in sorted(hashes):
            by_place: dict[str | None, list[Run]] = {}
            for run in every[cmd_hash]:
                by_place.setdefault(self.place(run.cwd), []).append(run)
            groups += by_place.values()
        return groups

    def _runs_of(self, hashes: list[str], since: float) -> dict[str, list[Run]]:
        """:meth:`runs` of each of ``hashes`` since ``since``, every place, in one read of the
        command-hash index: a session's digest asked once per failed command (77 reads on
        bench_agent's memory, half the hook's time at session start)."""
        found: dict[str, dict[str, Run]] = {cmd_hash: {} for cmd_hash in hashes}
        if self.conn is not None and hashes:
            # Named: given a list, the planner took the kind-and-time index and read every
            # command since ``since``. It is schema 4's, as old as the links this needs.
            rows = self.conn.execute(
                f"select {_RUN_COLUMNS} from nodes indexed by nodes_command_hash "
                "where project_id = ? and kind = 'shell_command' and "
                "json_extract(meta, '$.cmd_hash') in (select value from json_each(?)) "
                "and ts >= ? order by ts, seq",
                (self.project_id, json.dumps(hashes), int(since)),
            ).fetchall()
            for row in rows:
                if row[6] in found:
                    found[row[6]][row[0]] = _row_run(row)
        tail = self.tail_runs()
        for cmd_hash, runs in found.items():
            for run in tail.get(cmd_hash, []):
                if run.ts >= since:
                    runs.setdefault(run.id, run)
        # Sorted as ``runs`` sorts: stable, so rows tied in time keep the index's order.
        return {h: sorted(runs.values(), key=lambda r: r.ts) for h, runs in found.items()}

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


def note(
    memory: Memory, digest: str, cwd: str, now: float, exclude: str | None, noted: dict[str, Any]
) -> str | None:
    """The note before a command runs (``exclude`` None) or right after it failed (``exclude``
    its record's id), or None. After a failure whose error has a signature, the note is about
    the error, whatever command met it before; the command's own failures with another error
    are not its story. ``noted`` (the session's) rations notes per error too."""
    since = now - RECALL_DAYS * 86400
    runs = memory.runs(digest, cwd, since)
    current = next((r for r in runs if r.id == exclude), None) if exclude else None
    sig = current.sig if current is not None else None
    if current is not None and sig is not None:
        if f"sig:{sig}" in noted:
            return None
        text = _error_note(memory, current, since)
        if text is not None:
            noted[f"sig:{sig}"] = round(now)
            return text
        runs = [r for r in runs if r.outcome != "failed" or r.sig in (None, sig)]
    tale = story(runs, exclude=exclude)
    if tale is None or _settled(memory, tale, before=exclude is None):
        return None
    text = note_for(memory, tale, now)
    last = tale.failures[-1].sig
    if exclude is None and last is not None and f"sig:{last}" not in noted:
        more = _error_more(memory, tale, last, cwd, since)
        if more:
            noted[f"sig:{last}"] = round(now)
            text += more
    return text


def _settled(memory: Memory, tale: Story, before: bool) -> bool:
    """Before a run, a failure that has passed several times since (and was not undone) is
    history, not a warning: one `git push` that failed in March must not cost every session
    a note. Right after a failure, nothing is settled."""
    if not before or tale.fix is None or tale.passes_after < SETTLED:
        return False
    return memory.reverts_after(tale.fix.ts, tale.fix_edited) is None


class Gone(namedtuple("Gone", "passed changes edited")):
    """How an error went away: the pass that showed it gone, the commands that passed between
    the last failure with it and that pass (the candidate fix), and the files edited then."""

    __slots__ = ()
    passed: Run
    changes: list[str]
    edited: list[str]


def gone(memory: Memory, failures: list[Run], exclude: str | None = None) -> Gone | None:
    """How the error of ``failures`` (one signature, oldest first) went away, the last time it
    did: in the session and directory of a failure, a later pass, after which it never came
    back (signature.went_away)."""
    from .signature import Step, went_away  # only once an error matched: its patterns cost

    sig = failures[-1].sig
    tried: list[str] = []
    for failure in reversed(failures):
        if not failure.session or failure.session in tried or sig is None:
            continue
        if len(tried) == SESSIONS:
            break
        tried.append(failure.session)
        runs = memory.session_runs(failure.session, failure.cwd, failure.ts, failure.ts + WINDOW)
        runs = [r for r in runs if r.id != exclude and r.outcome != "background"]
        steps = [
            Step(r.outcome == "ok", r.outcome == "failed", r.sig, r.cmd_hash, r.title, r.edited)
            for r in runs
        ]
        found = went_away(steps, sig)
        if found is not None:
            last, fix = found
            changes = [r.title for r in runs[last + 1 : fix] if r.outcome == "ok"]
            edited = [p for r in runs[last + 1 : fix + 1] for p in r.edited]
            return Gone(runs[fix], list(dict.fromkeys(changes)), edited)
    return None


def _how(memory: Memory, fixed: Gone) -> str:
    """``it went away after `pip install pyyaml` (…)`` and whether that was undone since."""
    steps = [code_span(_short(c, 60)) for c in fixed.changes[-3:]]
    if fixed.edited:
        steps.append(f"editing {_files(fixed.edited)}")
    when = _when(fixed.passed.ts)
    shown = f"{code_span(_short(fixed.passed.title, 60))} passed"
    if steps:
        text = f"it went away after {' and '.join(steps)} ({shown} at {when})."
    else:
        text = f"it went away with nothing recorded in between ({shown} at {when})."
    reverted = memory.reverts_after(fixed.passed.ts, fixed.edited)
    return text + (f" That fix was reverted since: {reverted}." if reverted else "")


def _error_note(memory: Memory, current: Run, since: float) -> str | None:
    """Right after a failure: the same error met here before, by any command, and what made
    it go away. None when a note on the command alone says as much: the error was only ever
    this command's, or only this session's, and nothing made it go away."""
    found = memory.sig_failures(current.sig, current.cwd, since) if current.sig else []
    failures = [r for r in found if r.id != current.id]
    if not failures:
        return None
    fixed = gone(memory, failures, exclude=current.id)
    others = [r for r in failures if r.cmd_hash != current.cmd_hash]
    elsewhere = [r for r in failures if r.session != current.session]
    if fixed is None and (not others or not elsewhere):
        return None
    count = len(failures)
    times = "once" if count == 1 else f"{count} times"
    commands = list(dict.fromkeys(_short(r.title, 60) for r in reversed(failures)))
    named = ", ".join(code_span(c) for c in commands[:3])
    more = f" and {len(commands) - 3} more" if len(commands) > 3 else ""
    text = (
        f"NexusMem: this error happened here {times} before, with {named}{more} "
        f"(last {_when(failures[-1].ts)}). "
    )
    if fixed is None:
        return text + "No fix was ever recorded."
    return text + "What fixed it: " + _how(memory, fixed)


def _error_more(memory: Memory, tale: Story, sig: str, cwd: str, since: float) -> str | None:
    """Before a command: what made its last error go away, when another command met it too or
    something was run to fix it, which the command's own story cannot tell."""
    failures = memory.sig_failures(sig, cwd, since)
    if not failures:
        return None
    fixed = gone(memory, failures)
    if fixed is None:
        return None
    own = {r.cmd_hash for r in tale.failures}
    if not fixed.changes and fixed.passed.cmd_hash in own:
        return None  # the command's own retry: the note above says it
    others = list(dict.fromkeys(_short(r.title, 60) for r in failures if r.cmd_hash not in own))
    if others:
        return f" Its error also happened with {code_span(others[-1])}; {_how(memory, fixed)}"
    return f" Its error: {_how(memory, fixed)}"


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
