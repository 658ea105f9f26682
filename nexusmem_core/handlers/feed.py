"""What happened in a repository, newest first (the web viewer's Timeline page), and what has
been recorded but not synced yet.

A page is cut by keyset on (ts, seq): ``next`` names the last row shown, and the page after it
starts below that row, however many rows were written meanwhile. Every cursor also carries the
highest seq memory held when the first page was read (its mark): later pages keep to the rows
at or below it, and ``after`` returns the rows written since, so a row arriving while someone
pages back is shown once, by ``after``, even when its event is older than what the page shows
(a commit authored last week, synced now). A commit's file diffs are not rows: they are shown
under their commit (``node.node_detail``).

``pending`` rows are the commands a shell or agent hook has logged that no sync has read
(``pending.py``), as the rows their nodes will be once synced, with the same ids.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import os
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..chains import FAILED, failed
from ..errors import UsageError
from ..models import NODE_KINDS, Node
from ..retrieval.authored import sources_of
from ..store.fts import Candidate
from ..store.nodes import NODE_COLUMNS
from .node import facts, file_counts, fixes_of
from .pending import unsynced

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["MAX_LIMIT", "PENDING_MAX", "TimelinePage", "pending", "timeline"]

MAX_LIMIT = 200
PENDING_MAX = 100  # the newest unsynced commands shown; the tails read are bounded too
MAX_PATH = 1024
TIMELINE_KINDS = tuple(k for k in NODE_KINDS if k != "file_diff")
OUTCOMES = ("failed", "ok")
# The index of migration 20, named: with no statistics the planner prefers the index of a
# source (an author's thousands of rows, sorted) over walking back in time and stopping.
_FROM = "from nodes n indexed by nodes_timeline"
_COLUMNS = f"{NODE_COLUMNS}, n.source"  # source is column 14
_OK = (
    "(json_extract(n.meta, '$.outcome') = 'ok' or (json_extract(n.meta, '$.outcome') is null "
    "and json_extract(n.meta, '$.exit') = 0))"
)
_CURSOR = re.compile(r"(\d{1,18})\.(-?\d{1,12}|u)?\.(\d{1,18})?")  # within SQLite's int64


@dataclass
class TimelinePage:
    """One page: ``items`` newest first (unsynced ``pending`` ones at the top of a first or
    ``after`` page); ``next``, the cursor of the page after (None at the end); ``newest``,
    the cursor to pass as ``after`` to get what is written from now on."""

    items: list[dict[str, Any]]
    next: str | None
    newest: str
    more: bool = False  # an ``after`` page that was full: ask again with its ``newest``
    pending: int = field(default=0)  # how many of ``items`` are pending

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Cursor:
    mark: int  # the highest seq when the first page was read
    ts: int | None = None  # the last row shown (None with ``undated``: a row without ts)
    seq: int | None = None
    undated: bool = False

    def encode(self) -> str:
        ts = "u" if self.undated else "" if self.ts is None else str(self.ts)
        return f"{self.mark}.{ts}.{'' if self.seq is None else self.seq}"

    @classmethod
    def decode(cls, text: object, argument: str) -> _Cursor:
        found = _CURSOR.fullmatch(text) if isinstance(text, str) else None
        if found is None:
            raise UsageError(
                f"{str(text)[:40]!r} is not a timeline cursor: pass a page's `next` or `newest`",
                argument=argument,
            )
        mark, ts, seq = found.groups()
        return cls(
            int(mark),
            int(ts) if ts not in (None, "u") else None,
            int(seq) if seq is not None else None,
            ts == "u",
        )


@dataclass(frozen=True)
class _Filter:
    """The validated filters, as SQL over ``n`` and as a test of one pending node."""

    kinds: tuple[str, ...] | None = None
    patterns: tuple[str, ...] | None = None  # the author's sources (GLOB)
    outcome: str | None = None
    path: str | None = None
    since: int | None = None
    until: int | None = None

    def sql(self) -> tuple[str, list[Any]]:
        where = ["n.kind != 'file_diff'"]  # word for word the index's condition
        params: list[Any] = []
        if self.kinds is not None:
            where.append(f"n.kind in ({','.join('?' * len(self.kinds))})")
            params += self.kinds
        if self.patterns is not None:
            where.append("(" + " or ".join(["n.source glob ?"] * len(self.patterns)) + ")")
            params += self.patterns
        if self.outcome is not None:
            test = FAILED if self.outcome == "failed" else _OK
            where.append(f"n.kind = 'shell_command' and {test}")
        if self.path is not None:  # the file itself, or every file under a folder of it
            where.append("n.seq in (select node_seq from node_files where path >= ? and path < ?)")
            params += [self.path, self.path + "\U0010ffff"]
        if self.since is not None:
            where.append("n.ts >= ?")
            params.append(self.since)
        if self.until is not None:
            where.append("n.ts <= ?")
            params.append(self.until)
        return " and ".join(where), params

    def keeps(self, node: Node) -> bool:
        if self.kinds is not None and node.kind not in self.kinds:
            return False
        if self.patterns and not any(fnmatch.fnmatchcase(node.source, p) for p in self.patterns):
            return False
        if self.outcome is not None and failed(node.meta) != (self.outcome == "failed"):
            return False
        if self.outcome == "ok" and not _ok(node.meta):
            return False
        if self.path is not None and not any(f.startswith(self.path) for f in node.files):
            return False
        if self.since is not None and (node.ts is None or node.ts < self.since):
            return False
        return not (self.until is not None and (node.ts is None or node.ts > self.until))


async def timeline(
    engine: Engine,
    *,
    kinds: list[str] | None = None,
    author: str | None = None,
    outcome: str | None = None,
    path: str | None = None,
    since: str | None = None,
    until: str | None = None,
    before: str | None = None,
    after: str | None = None,
    limit: int = 50,
) -> TimelinePage:
    """A page of this repository's memory, newest first, by when each event happened.

    Filters: ``kinds`` (any of ``NODE_KINDS`` but ``file_diff``, which is shown under its
    commit), ``author`` (``you``, or an agent: ``claude-code``, ``codex``, ...), ``outcome``
    (``failed`` | ``ok``, of commands), ``path`` (a file the node touched, or a prefix of
    one: ``src/`` for a folder), ``since`` / ``until`` (``YYYY-MM-DD`` for the whole day, or
    a date and time; local time unless it says). Nodes without a time come last, and not at
    all with ``since`` or ``until``.

    ``before``: a page's ``next``, for the page after it. ``after``: a page's ``newest``, for
    the rows written since that page was read, whatever their time, newest first; a full
    page says ``more``, and the next call takes its ``newest``. Pass the same filters each
    time. A first or ``after`` page begins with the matching ``pending`` commands. Each item:
    ``id``, ``kind``, ``title``, ``ts``, ``date``, ``time`` (UTC), ``source``, ``author``
    (``you``, an agent, or None), ``outcome`` (commands: ``ok``, ``failed``, ``interrupted``,
    ``false``, ``background``, ``denied``, ``unknown``; else None), ``exit``, ``cwd`` (within
    the repository), ``duration`` (seconds), ``failed``, ``fixes`` (each ``link``, ``id``,
    ``kind``, ``title``, ``ts``), ``edited`` (files an agent changed just before), ``files``
    (a commit's count), ``trust``, ``superseded``, ``pending``, ``cursor``.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"must be a whole number from 1 to {MAX_LIMIT}", argument="limit")
    if before is not None and after is not None:
        raise UsageError(
            "give `before` (older rows) or `after` (newer rows), not both", argument="after"
        )
    wanted = _filter(kinds, author, outcome, path, since, until)
    start = _Cursor.decode(before, "before") if before is not None else None
    since_mark = _Cursor.decode(after, "after") if after is not None else None
    if since_mark is not None:
        return await _newer(engine, wanted, since_mark.mark, limit)
    db, pid = engine.db, engine.project_id
    where, params = wanted.sql()
    if start is None:
        row = await db.fetchone("select coalesce(max(seq), 0) from nodes")
        mark = int(row[0]) if row else 0
    else:
        mark = start.mark
    rows: list[tuple[Any, ...]] = []
    if start is None or not start.undated:
        keyset, more = "", []
        if start is not None and start.ts is not None and start.seq is not None:
            keyset, more = " and (n.ts, n.seq) < (?, ?)", [start.ts, start.seq]
        rows = await db.fetchall(
            f"select {_COLUMNS} {_FROM} where n.project_id = ? and {where} and n.seq <= ? "
            f"and n.ts is not null{keyset} order by n.ts desc, n.seq desc limit ?",
            (pid, *params, mark, *more, limit + 1),
        )
    if len(rows) <= limit and wanted.since is None and wanted.until is None:
        below = start.seq if start is not None and start.undated else None
        rows += await db.fetchall(
            f"select {_COLUMNS} {_FROM} where n.project_id = ? and {where} and n.ts is null "
            "and n.seq <= ? and n.seq < ? order by n.seq desc limit ?",
            (pid, *params, mark, below if below is not None else mark + 1, limit + 1 - len(rows)),
        )
    items = await _items(engine, rows[:limit], mark)
    after_last = items[-1]["cursor"] if len(rows) > limit else None
    top = [] if start is not None else await _pending(engine, wanted)
    return TimelinePage(top + items, after_last, _Cursor(mark).encode(), pending=len(top))


async def _newer(engine: Engine, wanted: _Filter, mark: int, limit: int) -> TimelinePage:
    """The rows written since ``mark`` (by seq: insertion order), the oldest ``limit`` of
    them, shown newest first."""
    db = engine.db
    row = await db.fetchone("select coalesce(max(seq), 0) from nodes")
    top = int(row[0]) if row else 0
    where, params = wanted.sql()
    # By rowid range: `+` keeps the planner off the project's indexes for this one.
    rows = await db.fetchall(
        f"select {_COLUMNS} from nodes n where n.seq > ? and n.seq <= ? "
        f"and +n.project_id = ? and {where} order by n.seq limit ?",
        (mark, top, engine.project_id, *params, limit + 1),
    )
    more = len(rows) > limit
    rows = rows[:limit]
    if more:
        top = int(rows[-1][13])
    rows.sort(key=lambda r: (r[6] is not None, r[6] or 0, r[13]), reverse=True)
    items = await _items(engine, rows, top)
    ahead = await _pending(engine, wanted)
    return TimelinePage(ahead + items, None, _Cursor(top).encode(), more, len(ahead))


def _filter(
    kinds: list[str] | None,
    author: str | None,
    outcome: str | None,
    path: str | None,
    since: str | None,
    until: str | None,
) -> _Filter:
    if kinds is not None:
        if not isinstance(kinds, list | tuple) or not kinds or len(kinds) > len(NODE_KINDS):
            raise UsageError(f"give one or more of {', '.join(TIMELINE_KINDS)}", argument="kinds")
        for kind in kinds:
            if kind == "file_diff":
                raise UsageError(
                    "file diffs are shown under their commit, not as rows: ask for git_commit",
                    argument="kinds",
                )
            if kind not in TIMELINE_KINDS:
                raise UsageError(
                    f"{str(kind)[:40]!r} is not a kind; use {', '.join(TIMELINE_KINDS)}",
                    argument="kinds",
                )
    if author is not None and not isinstance(author, str):
        raise UsageError("must be `you` or an agent's name", argument="author")
    if outcome is not None and outcome not in OUTCOMES:
        raise UsageError(f"{str(outcome)[:40]!r}: use failed or ok", argument="outcome")
    return _Filter(
        tuple(dict.fromkeys(kinds)) if kinds is not None else None,
        tuple(sources_of(author)) if author is not None else None,
        outcome,
        _path(path),
        _moment(since, "since", start_of_day=True),
        _moment(until, "until", start_of_day=False),
    )


def _path(path: str | None) -> str | None:
    if path is None:
        return None
    if not isinstance(path, str) or not path.strip() or len(path) > MAX_PATH or "\0" in path:
        raise UsageError(
            f"give a repository-relative file or folder, at most {MAX_PATH} characters",
            argument="path",
        )
    value = path.strip().replace(os.sep, "/")
    return value[2:] if value.startswith("./") else value


def _moment(text: str | None, argument: str, *, start_of_day: bool) -> int | None:
    """A date as ``--as-of`` reads it (``parse_as_of``: a bare date is its last second, local
    time); a bare date ``since`` is its first second instead."""
    from ..retrieval.search import parse_as_of

    if text is None:
        return None
    if not isinstance(text, str) or len(text) > 40:
        raise UsageError("use YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]", argument=argument)
    try:
        moment = parse_as_of(text)
    except UsageError as err:
        raise UsageError(err.message, argument=argument) from None
    if start_of_day and len(text.strip()) == 10:
        day = dt.date.fromisoformat(text.strip())  # read already: parse_as_of took it
        return int(dt.datetime.combine(day, dt.time()).timestamp())
    return moment


def _ok(meta: dict[str, Any]) -> bool:
    """``_OK``, of a node's decoded metadata."""
    said = meta.get("outcome")
    return said == "ok" if said is not None else meta.get("exit") == 0


def item_of(c: Candidate, source: str, root: str, mark: int | None) -> dict[str, Any]:
    """One row of a page: ``node.facts``, and its ``cursor``; a pending one (no ``mark``)
    has none."""
    item = facts(c, source, root)
    item["pending"] = mark is None
    item["cursor"] = None if mark is None else _Cursor(mark, c.ts, c.seq, c.ts is None).encode()
    return item


async def _items(engine: Engine, rows: list[tuple[Any, ...]], mark: int) -> list[dict[str, Any]]:
    root = os.path.realpath(engine.repo.root)
    shown = [(Candidate.from_row(r, 0.0), r[14]) for r in rows]
    items = [item_of(c, source, root, mark) for c, source in shown]
    by_id = {item["id"]: item for item in items}
    failures = [item["id"] for item in items if item["failed"]]
    for src, fixes in (await fixes_of(engine.db, failures)).items():
        by_id[src]["fixes"] = fixes
    commits = [c for c, _ in shown if c.kind == "git_commit"]
    for node_id, count in (await file_counts(engine.db, commits)).items():
        by_id[node_id]["files"] = count
    return items


# -------------------------------------------------------------------------------- pending


async def pending(engine: Engine) -> list[dict[str, Any]]:
    """The commands the shell and agent hooks logged in this repository that no sync has read
    yet, newest first (at most ``PENDING_MAX``), as the rows sync will make of them (the
    same ids), marked ``pending``. Read-only and bounded: see ``pending.unsynced``."""
    return await _pending(engine, _Filter())


async def _pending(engine: Engine, wanted: _Filter) -> list[dict[str, Any]]:
    root = os.path.realpath(engine.repo.root)
    out = []
    for node in await unsynced(engine, wanted.keeps, PENDING_MAX):
        c = Candidate(
            id=node.id,
            project_id=node.project_id,
            kind=node.kind,
            ref=node.ref,
            grp=node.grp,
            title=node.title,
            ts=node.ts,
            created_at=0,
            signal=node.signal,
            provenance=node.provenance,
            trust="candidate",
            meta_json="{}",
            superseded=False,
        )
        c.meta = node.meta  # set, as the search stages set it, instead of encoded and read
        out.append(item_of(c, node.source, root, None))
    return out
