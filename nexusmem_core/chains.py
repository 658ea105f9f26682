"""Failure -> fix chains: which later event resolved a failed command.

Independent heuristics, each a link in the ``links`` table (migrations 4 and 17):

* **retry**: the first later run of the same command (by the keyed hash of its raw text, so a
  redacted command still matches only itself) in the same working directory that exited 0
  within 24 hours;
* **discussion**: the conversation turn or session summary within 24 hours that contains
  every significant word of the command; words too common in this project's conversations
  do not count, so "npm" alone never bridges a failure to an unrelated chat;
* **signature**: the failure's error (its signature, ``meta.sig``: collectors/agent/signature.py)
  gone in a later pass in the same directory and session, of a command that had failed with it
  or of the same program, after which it never came back within 24 hours; what ran between is
  the candidate fix (``pytest tests/a.py`` failed on a missing module, ``pip install pyyaml``,
  then ``pytest -k foo`` passed);
* **trace**: the first commit within 24 hours that touched a file of the repository the
  failure's stack trace names, when the error did not come back after it in that directory.

Links are idempotent (a primary key), belong to the project that found them, and go with
either end when a node is deleted.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from .collectors.agent.signature import Step, went_away
from .store.db import Database
from .store.fts import Candidate, quote_term
from .store.nodes import NODE_COLUMNS, decode_meta, get_cursor, set_cursor

__all__ = [
    "DISCUSSION_KINDS",
    "FAILED",
    "PASSED",
    "ChainCounts",
    "LinkReport",
    "UnresolvedFailure",
    "chain_counts",
    "failed",
    "follow",
    "link_failures",
    "significant_words",
    "unresolved_failures",
]

# A command failed: its recorded outcome says so (an agent's failure may have no exit code),
# or, with no outcome recorded, its exit code is known and non-zero. Ctrl-C (130, 131) is the
# user stopping it, and an outcome of "false" (grep found nothing) is an answer: neither is a
# failure to fix. The SQL condition, and ``failed`` for a node already read.
STOPPED = (130, 131)
FAILED = (
    "(json_extract(meta, '$.outcome') = 'failed' or "
    "(json_extract(meta, '$.outcome') is null and json_extract(meta, '$.exit') is not null "
    f"and json_extract(meta, '$.exit') not in (0, {', '.join(map(str, STOPPED))})))"
)
PASSED = "json_extract(meta, '$.exit') = 0"


def failed(meta: dict[str, object]) -> bool:
    """``FAILED``, of a node's decoded metadata."""
    outcome = meta.get("outcome")
    if outcome is not None:
        return outcome == "failed"
    code = meta.get("exit")
    return code is not None and code != 0 and code not in STOPPED


WINDOW = 24 * 3600  # a fix is looked for this long after the failure
DISCUSSION_KINDS = ("conversation_turn", "session_summary")
# A word in more than this share of the project's conversations says nothing about which one
# discussed a failure ("npm", "test", "run"); with few conversations, a word must also be in
# more than two of them to be called common.
COMMON_SHARE = 0.2
# Command words that are also everyday English: a conversation saying "let's make sure the
# build runs" names `make` without being about it. A command whose only significant words are
# these is never bridged to a conversation.
ENGLISH = frozenset(
    "add all apply build cat check clean copy cp diff do find get go help init install kill "
    "list log make move mv new open pull push run set show sort start status stop sure test "
    "time touch true update upgrade view watch which".split()
)


@dataclass(frozen=True)
class UnresolvedFailure:
    id: str
    title: str  # the (redacted) command
    ts: int
    cwd: str | None
    edited: list[str]  # files the agent changed just before it ran


async def unresolved_failures(db: Database, project_id: str, since: int) -> list[UnresolvedFailure]:
    """Failed commands since ``since`` with no link and no later passing run, newest first."""
    rows = await db.fetchall(
        f"""
        select n.id, n.title, n.ts, n.meta from nodes n
        where n.project_id = ? and n.kind = 'shell_command' and n.ts >= ? and {FAILED}
          and not exists (select 1 from links l where l.src = n.id)
          and not exists (
              select 1 from nodes later
              where later.project_id = n.project_id and later.kind = 'shell_command'
                and json_extract(later.meta, '$.cmd_hash') = json_extract(n.meta, '$.cmd_hash')
                and later.ts > n.ts and json_extract(later.meta, '$.exit') = 0)
        order by n.ts desc
        """,
        (project_id, since),
    )
    out = []
    for node_id, title, ts, meta in rows:
        facts = decode_meta(meta)
        listed = facts.get("edited")
        edited = [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []
        out.append(UnresolvedFailure(node_id, title, ts, facts.get("cwd"), edited))
    return out


@dataclass
class LinkReport:
    examined: int = 0
    retry: int = 0  # links added this time
    discussion: int = 0
    signature: int = 0
    trace: int = 0


# The first later run of the same command in the same directory that exited 0 within the
# window. Same-second runs are ordered by insertion (seq), which follows the logs' order.
_RETRY = f"""
insert into links (src, dst, kind, project_id, created_at)
select f.id, (
    select p.id from nodes p
    where p.project_id = f.project_id and p.kind = 'shell_command'
      and json_extract(p.meta, '$.cmd_hash') = json_extract(f.meta, '$.cmd_hash')
      and json_extract(p.meta, '$.cwd') = json_extract(f.meta, '$.cwd')
      and (p.ts > f.ts or (p.ts = f.ts and p.seq > f.seq)) and p.ts <= f.ts + {WINDOW}
      and json_extract(p.meta, '$.exit') = 0
    order by p.ts, p.seq limit 1
) as fix, 'retry', f.project_id, ?
from nodes f
where f.project_id = ? and f.kind = 'shell_command' and f.ts >= ? and {FAILED}
  and not exists (select 1 from links l where l.src = f.id and l.kind = 'retry')
  and json_extract(f.meta, '$.cwd') is not null
  and json_extract(f.meta, '$.cmd_hash') is not null
  and fix is not null
on conflict do nothing
"""

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9]|[A-Za-z]{2,}")


def significant_words(command: str) -> list[str]:
    """The words of a command that could name it in prose: no flags, paths' separators,
    numbers or one-letter words; ``npm run build:prod`` gives npm, run, build, prod."""
    words = []
    for token in re.split(r"[\s/=:'\"`|&;()<>]+", command.lower()):
        if not token or token.startswith("-") or "$" in token:
            continue
        words += [w for w in _WORD.findall(token) if len(w) >= 2]
    return list(dict.fromkeys(words))


async def _conversation_count(db: Database, project_id: str) -> int:
    marks = ",".join("?" * len(DISCUSSION_KINDS))
    row = await db.fetchone(
        f"select count(*) from nodes where project_id = ? and kind in ({marks})",
        (project_id, *DISCUSSION_KINDS),
    )
    return int(row[0]) if row else 0


async def _discussion_links(db: Database, project_id: str, since: int, now: int) -> int:
    total = await _conversation_count(db, project_id)
    if not total:
        return 0
    kinds = ",".join("?" * len(DISCUSSION_KINDS))
    failures = await db.fetchall(
        f"select id, title, ts from nodes where project_id = ? and kind = 'shell_command' "
        f"and ts >= ? and {FAILED}",
        (project_id, since),
    )
    frequency: dict[str, int] = {}

    async def common(word: str) -> bool:
        if word not in frequency:
            row = await db.fetchone(
                f"select count(*) from nodes_fts join nodes n on n.seq = nodes_fts.rowid "
                f"where nodes_fts match ? and n.project_id = ? and n.kind in ({kinds})",
                (quote_term(word), project_id, *DISCUSSION_KINDS),
            )
            frequency[word] = int(row[0]) if row else 0
        return frequency[word] > max(2, COMMON_SHARE * total)

    added = 0
    for failure_id, title, ts in failures:
        words = [w for w in significant_words(title) if not await common(w)]
        if not [w for w in words if w not in ENGLISH]:
            continue  # nothing in the command singles out one conversation
        match = " AND ".join(quote_term(w) for w in words)
        best = await db.fetchone(
            f"select n.id from nodes_fts join nodes n on n.seq = nodes_fts.rowid "
            f"where nodes_fts match ? and n.project_id = ? and n.kind in ({kinds}) "
            f"and n.ts between ? and ? order by bm25(nodes_fts) limit 1",
            (match, project_id, *DISCUSSION_KINDS, ts, ts + WINDOW),
        )
        if best:
            added += await db.execute(
                "insert into links (src, dst, kind, project_id, created_at) "
                "values (?, ?, 'discussion', ?, ?) on conflict do nothing",
                (failure_id, best[0], project_id, now),
            )
    return added


# The facts of a command the error links read, pulled out by SQLite.
_STEP = (
    "id, ts, seq, title, json_extract(meta, '$.exit') = 0, "
    f"{FAILED}, json_extract(meta, '$.sig'), json_extract(meta, '$.cmd_hash'), "
    "json_extract(meta, '$.edited'), json_extract(meta, '$.session'), json_extract(meta, '$.cwd'), "
    "json_extract(meta, '$.trace')"
)


async def _error_links(db: Database, project_id: str, since: int, now: int) -> tuple[int, int]:
    """Signature and trace links of the failures with an error signature since ``since``."""
    failures = await db.fetchall(
        f"select {_STEP} from nodes where project_id = ? and kind = 'shell_command' "
        f"and ts >= ? and json_extract(meta, '$.sig') is not null and {FAILED} order by ts, seq",
        (project_id, since),
    )
    if not failures:
        return 0, 0
    row = await db.fetchone("select root from projects where id = ?", (project_id,))
    root = os.path.realpath(row[0]) if row else ""  # trace files are kept as real paths
    groups: dict[tuple[str, str], list[tuple[Any, ...]]] = {}
    for failure in failures:
        session, cwd = failure[9], failure[10]
        if isinstance(session, str) and session and isinstance(cwd, str):
            groups.setdefault((session, cwd), []).append(failure)
    gone = 0
    for (session, cwd), group in groups.items():
        # One read per session and directory, from its first failure to a day after its last.
        runs = await db.fetchall(
            f"select {_STEP} from nodes where project_id = ? and kind = 'shell_command' "
            "and ts between ? and ? and json_extract(meta, '$.session') = ? "
            "and json_extract(meta, '$.cwd') = ? order by ts, seq",
            (project_id, group[0][1], group[-1][1] + WINDOW, session, cwd),
        )
        for failure in group:
            gone += await _link_gone(db, project_id, runs, failure, now)
    trace = 0
    for failure in failures:
        trace += await _link_trace(db, project_id, root, failure, now)
    return gone, trace


def _paths(value: Any) -> list[str]:
    """A JSON array of paths as json_extract gives it."""
    try:
        listed = json.loads(value) if isinstance(value, str) else []
    except ValueError:
        return []
    return [p for p in listed if isinstance(p, str)] if isinstance(listed, list) else []


async def _link_gone(
    db: Database, project_id: str, runs: list[tuple[Any, ...]], failure: tuple[Any, ...], now: int
) -> int:
    """The 'signature' link of one failure: to the pass after which its error never came back."""
    start = next((i for i, r in enumerate(runs) if r[0] == failure[0]), None)
    if start is None:
        return 0
    # From the session's first failure with this error within the window: a pass of a command
    # that failed with it earlier (`npm run build`, then `npx vite build`) shows it gone too.
    start = next(
        (
            i
            for i, r in enumerate(runs[:start])
            if r[5] and r[6] == failure[6] and r[1] >= failure[1] - WINDOW
        ),
        start,
    )
    window = [r for r in runs[start:] if r[1] <= failure[1] + WINDOW]
    steps = [Step(bool(r[4]), bool(r[5]), r[6], r[7], str(r[3]), _paths(r[8])) for r in window]
    found = went_away(steps, failure[6])
    if found is None:
        return 0
    return await db.execute(
        "insert into links (src, dst, kind, project_id, created_at) "
        "values (?, ?, 'signature', ?, ?) on conflict do nothing",
        (failure[0], window[found[1]][0], project_id, now),
    )


async def _link_trace(
    db: Database, project_id: str, root: str, failure: tuple[Any, ...], now: int
) -> int:
    """The 'trace' link of one failure: to the first commit within the window that touched a
    file of this repository its stack trace names, unless the error came back after it."""
    files = _paths(failure[11])
    prefix = root.rstrip(os.sep) + os.sep
    paths = sorted({os.path.relpath(f, root) for f in files if f.startswith(prefix) and root})
    if not paths:
        return 0
    marks = ",".join("?" * len(paths))
    ts = failure[1]
    commit = await db.fetchone(
        "select n.id, n.ts from nodes n join node_files f on f.node_seq = n.seq "
        f"where n.project_id = ? and n.kind = 'git_commit' and n.ts >= ? and n.ts <= ? "
        f"and f.path in ({marks}) order by n.ts limit 1",
        (project_id, ts, ts + WINDOW, *paths),
    )
    if commit is None:
        return 0
    back = await db.fetchone(
        "select 1 from nodes where project_id = ? and kind = 'shell_command' and ts > ? "
        "and ts <= ? and json_extract(meta, '$.sig') = ? and json_extract(meta, '$.cwd') is ? "
        f"and {FAILED} limit 1",
        (project_id, commit[1], int(commit[1]) + WINDOW, failure[6], failure[10]),
    )
    if back is not None:
        return 0  # the error came back after the commit: it did not fix it
    return await db.execute(
        "insert into links (src, dst, kind, project_id, created_at) "
        "values (?, ?, 'trace', ?, ?) on conflict do nothing",
        (failure[0], commit[0], project_id, now),
    )


async def link_failures(db: Database, project_id: str) -> LinkReport:
    """Link failed commands to what resolved them (inside the caller's transaction).

    Incremental: only a failure within the window before the earliest command or conversation
    written since the last pass can gain a link, so only those are examined (re-examining all
    1,852 failures of a 20,000-command log doubled a sync that found nothing new).
    """
    now = int(time.time())
    done = int(await get_cursor(db, project_id, "chains") or 0)
    kinds = ",".join("?" * (1 + len(DISCUSSION_KINDS)))
    row = await db.fetchone(
        f"select min(ts), max(seq) from nodes where project_id = ? and seq > ? "
        f"and kind in ({kinds})",
        (project_id, done, "shell_command", *DISCUSSION_KINDS),
    )
    report = LinkReport()
    if not row or row[1] is None:
        return report  # nothing new since the last pass
    since = int(row[0] or 0) - WINDOW
    counted = await db.fetchone(
        f"select count(*) from nodes where project_id = ? and kind = 'shell_command' "
        f"and ts >= ? and {FAILED}",
        (project_id, since),
    )
    report.examined = int(counted[0]) if counted else 0
    if report.examined:
        report.retry = await db.execute(_RETRY, (now, project_id, since))
        report.discussion = await _discussion_links(db, project_id, since, now)
        report.signature, report.trace = await _error_links(db, project_id, since, now)
    top = await db.fetchone("select max(seq) from nodes where project_id = ?", (project_id,))
    await set_cursor(db, project_id, "chains", str(top[0] if top else row[1]))
    return report


@dataclass
class ChainCounts:
    failures: int = 0  # failed commands examined
    retry: int = 0  # of them, linked to a passing retry
    discussion: int = 0  # linked to a conversation
    unresolved: int = 0
    signature: int = 0  # linked to the pass after which its error was gone
    trace: int = 0  # linked to a commit touching a file its stack trace names


async def chain_counts(db: Database, project_id: str) -> ChainCounts:
    """What ``status`` shows of the chains."""
    row = await db.fetchone(
        f"""
        select count(*),
               sum(exists(select 1 from links l where l.src = n.id and l.kind = 'retry')),
               sum(exists(select 1 from links l where l.src = n.id and l.kind = 'discussion')),
               sum(not exists(select 1 from links l where l.src = n.id)),
               sum(exists(select 1 from links l where l.src = n.id and l.kind = 'signature')),
               sum(exists(select 1 from links l where l.src = n.id and l.kind = 'trace'))
        from nodes n where n.project_id = ? and n.kind = 'shell_command' and {FAILED}
        """,
        (project_id,),
    )
    if not row:
        return ChainCounts()
    return ChainCounts(*(int(v or 0) for v in row))


async def follow(
    db: Database, ranked: list[Candidate], as_of: int | None = None
) -> list[Candidate]:
    """``ranked`` with each linked failure's fixes right after it, at the failure's score.

    The fix need not match the query: asking why something failed should also show what fixed
    it, without guessing the fix's words. A fix that ranked on its own, above or below, moves
    to follow its failure; one fix of several failures follows the first (best) of them.
    """
    failures = [c for c in ranked if c.kind == "shell_command"]
    if not failures:
        return ranked
    marks = ",".join("?" * len(failures))
    links = await db.fetchall(
        f"select src, dst, kind from links where src in ({marks}) and created_at <= ? "
        # A pass linked both ways follows as the retry it is; the error's links come after.
        "order by case kind when 'retry' then 0 when 'discussion' then 1 "
        "when 'signature' then 2 else 3 end",
        [*(c.id for c in failures), 2**62 if as_of is None else as_of],
    )
    if not links:
        return ranked
    wanted = sorted({dst for _, dst, _ in links})
    rows = await db.fetchall(
        f"select {NODE_COLUMNS} from nodes n where n.id in ({','.join('?' * len(wanted))}) "
        "and n.created_at <= ?",
        [*wanted, 2**62 if as_of is None else as_of],
    )
    nodes = {row[0]: row for row in rows}
    fixes: dict[str, list[tuple[str, str]]] = {}
    for src, dst, kind in links:
        if dst in nodes:
            fixes.setdefault(src, []).append((dst, kind))
    moving = {dst for pairs in fixes.values() for dst, _ in pairs}
    out: list[Candidate] = []
    placed: set[str] = set()
    for c in ranked:
        if c.id in placed or (c.id in moving and c.id not in fixes):
            continue
        out.append(c)
        placed.add(c.id)
        for dst, kind in fixes.get(c.id, []):
            if dst in placed:
                continue
            fix = Candidate.from_row(nodes[dst], c.relevance, ["linked"])
            fix.score = c.score
            fix.meta = {**fix.meta, "fix_of": c.id, "link": kind}
            out.append(fix)
            placed.add(dst)
    return out
