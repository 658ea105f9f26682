"""One node as the web viewer shows it: the facts a timeline row carries (who, how it ended,
where, what fixed it), and ``node_detail``, everything memory holds about one node and the
nodes around it (what it replaced, its links, a commit's diffs).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from ..chains import failed
from ..collectors.agent import AGENTS, author_of
from ..errors import UsageError
from ..render import format_date
from ..retrieval.pack import display_title
from ..store.db import Database
from ..store.fts import Candidate
from ..store.nodes import NODE_COLUMNS

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["MAX_DIFFS", "MAX_DIFF_CHARS", "facts", "file_counts", "fixes_of", "node_detail"]

MAX_DIFFS = 100  # a commit's file diffs shown; ``diffs_more`` counts the rest
MAX_DIFF_CHARS = 20_000  # of each diff's body
MAX_LINKS = 100  # each way
MIN_PREFIX = 4
FIX_KINDS = ("retry", "discussion", "signature", "trace")  # a failure's links to its fix
_FIX_ORDER = (
    "case l.kind when 'retry' then 0 when 'discussion' then 1 when 'signature' then 2 else 3 end"
)


def _outcome(meta: dict[str, Any]) -> str:
    """How a command ended, in the words the hooks use (``recall.Run.outcome``)."""
    said = meta.get("outcome")
    if isinstance(said, str) and said:
        return said
    code = meta.get("exit")
    if not isinstance(code, int) or isinstance(code, bool):
        return "unknown"
    return "ok" if code == 0 else "interrupted" if code in (130, 131) else "failed"


def author(source: str) -> str | None:
    """Who wrote a node of ``source``: ``you``, an agent (its hook, or its session files), or
    None (git, the docs)."""
    kind, _, name = source.partition(":")
    if kind == "conversation":
        return AGENTS.get(name, name)
    return author_of(source)


def _place(cwd: object, root: str) -> str | None:
    """The directory within the repository ("." for its top); another one as it was."""
    if not isinstance(cwd, str):
        return None
    if cwd == root:
        return "."
    return cwd[len(root) + 1 :] if cwd.startswith(root + os.sep) else cwd


def _seconds(value: object) -> float | None:
    """A command's duration in seconds: the shell's meta says ``"2.50s"``, an agent's a
    number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value.endswith("s"):
        try:
            return float(value[:-1])
        except ValueError:
            return None
    return None


def facts(c: Candidate, source: str, root: str) -> dict[str, Any]:
    """A node's facts as a timeline row shows them (``timeline.timeline`` names each);
    ``fixes`` empty and ``files`` None until the caller fills them in. ``root``: the
    repository's real path, which a command's ``cwd`` is shown within."""
    meta = c.meta
    command = c.kind == "shell_command"
    edited = meta.get("edited") if command else None
    duration, code = meta.get("duration"), meta.get("exit")
    return {
        "id": c.id,
        "kind": c.kind,
        "title": c.title,
        "ts": c.ts,
        "date": format_date(c.ts),
        "time": None if c.ts is None else time.strftime("%H:%M:%S", time.gmtime(c.ts)),
        "source": source,
        "author": author(source),
        "outcome": _outcome(meta) if command else None,
        "exit": code if isinstance(code, int) and not isinstance(code, bool) else None,
        "cwd": _place(meta.get("cwd"), root) if command else None,
        "duration": _seconds(duration),
        "failed": command and failed(meta),
        "fixes": [],
        "edited": [p for p in edited if isinstance(p, str)] if isinstance(edited, list) else [],
        "files": None,
        "trust": c.trust,
        "superseded": c.superseded,
    }


async def fixes_of(db: Database, failures: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The links from each failed command in ``failures`` to what fixed it: ``link`` (retry,
    discussion, signature, trace), the fix's ``id``, ``kind``, ``title`` and ``ts``; the
    retry first, as search shows them (``chains.follow``)."""
    if not failures:
        return {}
    rows = await db.fetchall(
        f"select l.src, l.kind, {NODE_COLUMNS} from links l join nodes n on n.id = l.dst "
        f"where l.src in ({','.join('?' * len(failures))}) "
        f"and l.kind in ({','.join('?' * len(FIX_KINDS))}) "
        f"order by l.src, {_FIX_ORDER}, n.ts",
        [*failures, *FIX_KINDS],
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for src, kind, *node in rows:
        fix = Candidate.from_row(tuple(node), 0.0)
        out.setdefault(src, []).append(
            {
                "link": kind,
                "id": fix.id,
                "kind": fix.kind,
                "title": display_title(fix),
                "ts": fix.ts,
            }
        )
    return out


async def file_counts(db: Database, commits: list[Candidate]) -> dict[str, int]:
    """How many files each commit changed: as its meta says (``files_changed``), else the
    files memory holds for it (at most ``ingest.MAX_FILES``)."""
    out: dict[str, int] = {}
    unsaid: dict[int, str] = {}
    for c in commits:
        said = c.meta.get("files_changed")
        if isinstance(said, int) and not isinstance(said, bool):
            out[c.id] = said
        else:
            unsaid[c.seq] = c.id
            out[c.id] = 0
    if unsaid:
        rows = await db.fetchall(
            "select node_seq, count(*) from node_files where node_seq in "
            f"({','.join('?' * len(unsaid))}) group by node_seq",
            list(unsaid),
        )
        for seq, count in rows:
            out[unsaid[int(seq)]] = int(count)
    return out


# ---------------------------------------------------------------------------------- detail


async def node_detail(engine: Engine, node_id: str) -> dict[str, Any] | None:
    """One node of this repository (its id, or a unique prefix of at least four hex
    characters) in full; None when there is none.

    Everything ``get_node`` gives (``id``, ``kind``, ``ref``, ``title``, ``date``, ``ts``,
    ``provenance``, ``trust``, ``signal``, ``superseded``, ``meta``, ``body``, ``files``),
    the row facts of ``facts`` (``source``, ``author``, ``outcome``, ``exit``, ``cwd``,
    ``duration``, ``failed``, ``edited``, ``time``), and: ``capture`` (post-install,
    backfilled or origin-unknown, as search tags results), ``trust_note`` (the last review's
    note, or None), ``supersedes`` (the node it replaced, a summary, or None),
    ``superseded_by`` (summaries), ``links`` (each ``kind``, ``direction`` ``out`` | ``in``,
    ``node``: a summary; at most ``MAX_LINKS`` each way), ``fixes`` (a failure's, as a
    timeline row has them), ``diffs`` (a commit's: ``path``, ``id``, ``body`` cut to
    ``MAX_DIFF_CHARS`` with ``cut``, at most ``MAX_DIFFS``, and ``diffs_more``), ``files_count``
    (a commit's), and ``commit`` (a diff's commit, a summary, or None).
    """
    from ..retrieval.search import _capture, _installed
    from .search import _summary, get_node

    found = await _find(engine, node_id)
    if found is None:
        return None
    row, source, supersedes = found[:14], found[14], found[15]
    c = Candidate.from_row(row, 0.0)
    whole = await get_node(engine, c.id)
    if whole is None:  # deleted in between
        return None
    _capture([c], await _installed(engine))
    db = engine.db
    shown = facts(c, source, os.path.realpath(engine.repo.root))
    detail = {**shown, **whole, "capture": c.capture, "trust_note": await _trust_note(engine, c.id)}
    detail["supersedes"] = (await _summaries(db, "n.id = ?", [supersedes], _summary) or [None])[0]
    detail["superseded_by"] = await _summaries(db, "n.supersedes = ?", [c.id], _summary)
    detail["links"] = await _links(db, c.id, _summary)
    if shown["failed"]:
        detail["fixes"] = (await fixes_of(db, [c.id])).get(c.id, [])
    if c.kind == "git_commit":
        detail["diffs"], detail["diffs_more"] = await _diffs(engine, c.ref)
        detail["files_count"] = (await file_counts(db, [c]))[c.id]
    if c.kind == "file_diff":
        sha = c.meta.get("sha") or c.ref.partition(":")[0]
        commits = await _summaries(
            db, "n.project_id = ? and n.source = 'git' and n.ref = ?", [c.project_id, sha], _summary
        )
        detail["commit"] = commits[0] if commits else None
    return detail


async def _find(engine: Engine, node_id: str) -> tuple[Any, ...] | None:
    """The row of the node ``node_id`` names (whole, or a unique prefix), in this project."""
    value = node_id.strip().lower() if isinstance(node_id, str) else ""
    if not MIN_PREFIX <= len(value) <= 64 or any(ch not in "0123456789abcdef" for ch in value):
        raise UsageError(
            f"give a node id, or at least {MIN_PREFIX} hex characters of one", argument="node_id"
        )
    # A range on the unique index, as hygiene.review.resolve reads a prefix: hex sorts below g.
    rows = await engine.db.fetchall(
        f"select {NODE_COLUMNS}, n.source, n.supersedes from nodes n "
        "where n.id >= ? and n.id < ? and n.project_id = ? limit 2",
        (value, value + "g", engine.project_id),
    )
    if len(rows) > 1:
        raise UsageError(
            f"{value!r} starts several node ids: give more characters", argument="node_id"
        )
    return rows[0] if rows else None


async def _trust_note(engine: Engine, node_id: str) -> str | None:
    """The note of the last review of the node, when it had one (hygiene.review audits it)."""
    row = await engine.db.fetchone(
        "select json_extract(detail, '$.note') from audit where project_id = ? "
        "and operation = 'review' and json_extract(detail, '$.node') = ? order by id desc limit 1",
        (engine.project_id, node_id),
    )
    return row[0] if row and isinstance(row[0], str) else None


async def _summaries(db: Database, where: str, params: list[Any], summary: Any) -> list[Any]:
    rows = await db.fetchall(
        f"select {NODE_COLUMNS} from nodes n where {where} order by n.ts, n.seq limit ?",
        [*params, MAX_LINKS],
    )
    return [summary(Candidate.from_row(r, 0.0)) for r in rows]


async def _links(db: Database, node_id: str, summary: Any) -> list[dict[str, Any]]:
    """The node's links both ways: ``out`` to what it links (a failure to its fix, a revert
    to what it undid), ``in`` from what links to it."""
    out = []
    for direction, near, far in (("out", "src", "dst"), ("in", "dst", "src")):
        rows = await db.fetchall(
            f"select l.kind, {NODE_COLUMNS} from links l join nodes n on n.id = l.{far} "
            f"where l.{near} = ? order by {_FIX_ORDER}, n.ts, n.seq limit ?",
            (node_id, MAX_LINKS),
        )
        for kind, *row in rows:
            node = summary(Candidate.from_row(tuple(row), 0.0))
            out.append({"kind": kind, "direction": direction, "node": node})
    return out


async def _diffs(engine: Engine, sha: str) -> tuple[list[dict[str, Any]], int]:
    """A commit's file diffs, by path: the first ``MAX_DIFFS``, and how many more there are."""
    db = engine.db
    # Their refs are "<sha>:<path>": a range of the (project, source, ref) index.
    where = "project_id = ? and source = 'diff' and ref >= ? and ref < ?"
    params = (engine.project_id, sha + ":", sha + ";")
    rows = await db.fetchall(
        f"select id, json_extract(meta, '$.path'), substr(body, 1, ?), length(body) "
        f"from nodes where {where} order by ref limit ?",
        (MAX_DIFF_CHARS, *params, MAX_DIFFS),
    )
    diffs = [
        {"path": path, "id": node_id, "body": body, "cut": length > MAX_DIFF_CHARS}
        for node_id, path, body, length in rows
    ]
    total = len(diffs)
    if total == MAX_DIFFS:
        row = await db.fetchone(f"select count(*) from nodes where {where}", params)
        total = int(row[0]) if row else total
    return diffs, total - len(diffs)
