"""Commits no ref reaches any more: what a rebase, an amend or a reset leaves behind.

Memory holds every commit it once walked from HEAD. After ``git rebase`` the old commits stay
in memory beside their rewritten copies: the same message twice, and patches that no longer
exist. ``sync --prune-unreachable`` lists the commits (and their file diffs) that no branch,
tag, remote-tracking ref or HEAD reaches; ``--yes`` removes them as forget does (tombstones,
vectors, index entries, an audit row).

Automatically, each sync that sees history rewritten (its git cursor is no longer an ancestor
of HEAD) notes when each unreachable commit was first seen so, in the cursor
``git:unreachable``; one still unreachable ``sources.git.pruneUnreachableDays`` (default 14)
later is removed. The grace period is there because unreachable is not gone: a commit
reset away by mistake is still in the reflog and often comes back (``git reset HEAD@{1}``),
and memory should not lose it the moment it blinks. 0 turns the automatic pruning off.

A repository in which ``git rev-list --all`` fails, or reaches nothing (no refs at all), prunes
nothing: that is a broken or half-made clone, not a rewritten history.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from ..collectors.git import GitError, git_stream
from ..engine import Engine
from ..errors import CONFIRM
from ..store import audit
from ..store.db import Database
from ..store.nodes import get_cursor, set_cursor
from .remove import Doomed, remove_nodes

__all__ = ["UnreachableReport", "prune_unreachable", "reachable_commits"]

CURSOR = "git:unreachable"
DAY = 86_400
SHOWN = 20  # commits a dry run lists by name


@dataclass
class UnreachableReport:
    applied: bool
    commits: int = 0  # unreachable commits in memory
    nodes: int = 0  # their nodes: the commits and their file diffs
    removed: int = 0
    waiting: int = 0  # unreachable, inside the grace period (automatic pruning only)
    examples: list[str] = field(default_factory=list)  # "sha7 subject" of the first few
    note: str = ""  # why nothing was examined

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        if self.note:
            return [self.note]
        if not self.commits:
            return ["every commit in memory is reachable from a ref: nothing to prune"]
        what = f"{self.commits} unreachable commit(s) ({self.nodes} node(s) with their diffs)"
        shown = [f"  {line}" for line in self.examples]
        more = self.commits - len(self.examples)
        if more > 0:
            shown.append(f"  ... and {more} more")
        if self.applied:
            return [f"removed {what}", *shown]
        return [
            f"would remove {what}",
            *shown,
            f"dry run: nothing was changed; {CONFIRM} to remove them",
        ]


async def reachable_commits(engine: Engine) -> set[str] | None:
    """Every commit a ref or HEAD reaches; None when git cannot say (or reaches nothing)."""
    shas: set[str] = set()
    rest = b""
    try:
        async for chunk in git_stream(engine.repo.root, "rev-list", "--all"):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            shas.update(line.decode("ascii", "replace") for line in lines if line)
    except GitError:
        return None
    if rest:
        shas.add(rest.decode("ascii", "replace"))
    return shas or None


async def _unreachable(
    db: Database, pid: str, reachable: set[str]
) -> list[tuple[str, int, str, int | None]]:
    """(sha, seq, title, ts) of each commit node whose sha no ref reaches, newest first."""
    rows = await db.fetchall(
        "select ref, seq, title, ts from nodes where project_id = ? and kind = 'git_commit' "
        "order by ts desc",
        (pid,),
    )
    return [row for row in rows if row[0] not in reachable]


async def _doomed(db: Database, pid: str, shas: list[str]) -> list[Doomed]:
    """The commit nodes of ``shas`` and the file diffs of those commits."""
    doomed: list[Doomed] = []
    for start in range(0, len(shas), 400):
        batch = shas[start : start + 400]
        marks = ",".join("?" * len(batch))
        rows = await db.fetchall(
            f"select id, seq, source from nodes where project_id = ? and ("
            f"(kind = 'git_commit' and ref in ({marks})) or "
            f"(kind = 'file_diff' and grp in ({marks})))",
            (pid, *batch, *[f"commit:{sha}" for sha in batch]),
        )
        doomed += [Doomed(i, seq, source) for i, seq, source in rows]
    return doomed


async def prune_unreachable(
    engine: Engine, *, apply: bool = False, grace_days: int | None = None
) -> UnreachableReport:
    """List (or, with ``apply``, remove) the unreachable commits in memory.

    ``grace_days`` is the automatic mode, run inside sync's transaction: only commits first
    seen unreachable at least that long ago are removed, and the first sightings are kept in
    the ``git:unreachable`` cursor. Without it, every unreachable commit counts, at once.
    """
    db, pid = engine.db, engine.project_id
    report = UnreachableReport(applied=apply)
    reachable = await reachable_commits(engine)
    if reachable is None:
        report.note = "git reaches no commit from any ref here: nothing was pruned"
        return report
    found = await _unreachable(db, pid, reachable)
    if grace_days is not None:
        now = int(time.time())
        seen: dict[str, int] = json.loads(await get_cursor(db, pid, CURSOR) or "{}")
        first = {sha: seen.get(sha, now) for sha, *_ in found}  # back in reach: forgotten
        due = {sha for sha, when in first.items() if now - when >= grace_days * DAY}
        report.waiting = len(first) - len(due)
        for sha in due:
            del first[sha]
        if first or seen:
            await set_cursor(db, pid, CURSOR, json.dumps(first, sort_keys=True))
        found = [row for row in found if row[0] in due]
    report.commits = len(found)
    report.examples = [f"{sha[:7]} {title}" for sha, _, title, _ in found[:SHOWN]]
    doomed = await _doomed(db, pid, [sha for sha, *_ in found])
    report.nodes = len(doomed)
    if apply and doomed:
        report.removed = await remove_nodes(db, doomed, "prune-unreachable")
        await audit.record(db, pid, "prune-unreachable", report.removed, commits=report.commits)
    return report
