"""A repository whose origin changed keeps its memory.

A project's id is its normalized origin URL, else its checkout's path, and every node id is
derived from it (``models.node_id``). So renaming the repository on GitHub, pointing origin at
a fork, adding an origin to a repository that had none, or moving a checkout that has none
gives the same repository a new id, and its memory would be orphaned under the old one. The
first writable open after such a change carries the old identity over into the new one, in one
transaction (``store/rekey.py``), and records it in ``project_aliases`` for ``status``. A
read-only open (``query``, ``status``) changes nothing: it reads under the old id meanwhile.

Which identity recorded in the database is this repository's earlier self:

* one recorded at this very root: the database lives in the checkout's ``.nexusmem/``, so a
  project recorded here was this checkout;
* one whose last synced commit exists in this repository: the checkout moved (and had no
  origin to keep its id by).

A database copied in from an unrelated repository has neither (another root, commits this
repository does not have), and is never merged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .collectors.git import RepoInfo, git
from .store import audit
from .store.db import Database
from .store.nodes import get_cursor

if TYPE_CHECKING:
    from .config import Settings
    from .registry import ProjectEntry

__all__ = [
    "Change",
    "Prior",
    "adopt",
    "find_priors",
    "follow_registry",
    "last_change",
    "settle",
]

SAME_CHECKOUT = "same checkout"
SAME_HISTORY = "same history"


@dataclass(frozen=True)
class Prior:
    """An identity recorded in the database that is this repository's earlier self."""

    id: str
    root: str
    origin: str | None
    nodes: int
    reason: str  # SAME_CHECKOUT or SAME_HISTORY


@dataclass(frozen=True)
class Change:
    """One carried-over identity, as ``status`` tells it."""

    old_id: str
    project_id: str
    old_origin: str | None
    nodes: int
    changed_at: int

    def describe(self, origin: str | None) -> str:
        when = time.strftime("%Y-%m-%d", time.localtime(self.changed_at))
        return (
            f"changed from {self.old_origin or 'no origin'} to {origin or 'no origin'} on "
            f"{when}; {self.nodes} node(s) carried over"
        )


async def find_priors(db: Database, repo: RepoInfo) -> list[Prior]:
    """The identities in ``db`` other than ``repo``'s own that are ``repo``'s earlier self."""
    rows = await db.fetchall(
        "select p.id, p.root, p.origin, (select count(*) from nodes n where n.project_id = p.id) "
        "from projects p where p.id != ?",
        (repo.project_id,),
    )
    found = []
    for pid, root, origin, nodes in rows:
        if root == str(repo.root):
            found.append(Prior(pid, root, origin, nodes, SAME_CHECKOUT))
        elif await _has_commit(repo, await get_cursor(db, pid, "git")):
            found.append(Prior(pid, root, origin, nodes, SAME_HISTORY))
    return found


async def _has_commit(repo: RepoInfo, sha: str | None) -> bool:
    if not sha or not repo.head:
        return False
    out = await git(repo.root, "rev-parse", "--verify", "-q", f"{sha}^{{commit}}", check=False)
    return out.strip() == sha


async def adopt(db: Database, repo: RepoInfo) -> list[Prior]:
    """Carry every earlier identity of ``repo`` over into its current one, inside the caller's
    transaction; return what was carried (nothing, almost always)."""
    priors = await find_priors(db, repo)
    if not priors:
        return priors
    from .store.rekey import rekey  # a move of the origin or the folder: rare

    now = int(time.time())
    for prior in priors:
        moved = await rekey(db, prior.id, repo.project_id, repo.name, str(repo.root), repo.origin)
        await db.execute(
            "update project_aliases set project_id = ? where project_id = ?",
            (repo.project_id, prior.id),
        )
        await db.execute("delete from project_aliases where old_id = ?", (repo.project_id,))
        await db.execute(
            "insert into project_aliases (old_id, project_id, old_origin, old_root, reason, "
            "nodes, changed_at) values (?, ?, ?, ?, ?, ?, ?) on conflict(old_id) do update set "
            "project_id = excluded.project_id, old_origin = excluded.old_origin, "
            "old_root = excluded.old_root, reason = excluded.reason, nodes = excluded.nodes, "
            "changed_at = excluded.changed_at",
            (prior.id, repo.project_id, prior.origin, prior.root, prior.reason, moved, now),
        )
        await audit.record(
            db, repo.project_id, "carry-over", moved, old_id=prior.id, reason=prior.reason
        )
    return priors


class Engine(Protocol):
    """What settling reads and sets of an open engine (engine.Engine; named so, engine.py,
    which settles every engine it opens, is not imported back)."""

    db: Database
    repo: RepoInfo
    settings: Settings
    prior: Prior | None

    def registry_entry(self) -> ProjectEntry: ...


async def settle(engine: Engine, *, writable: bool) -> None:
    """At open: carry earlier identities over (writable), or read under the one that holds
    the memory until a writable open does (read-only: ``engine.prior``)."""
    db, repo = engine.db, engine.repo
    if not await db.fetchone("select 1 from projects where id != ? limit 1", (repo.project_id,)):
        return  # the usual case: one query, and nothing else to look at
    if not writable:
        priors = await find_priors(db, repo)
        mine = await db.fetchone(
            "select 1 from nodes where project_id = ? limit 1", (repo.project_id,)
        )
        if priors and not mine:
            engine.prior = max(priors, key=lambda p: p.nodes)
        return
    async with db.transaction():
        carried = await adopt(db, repo)
    if carried:
        follow_registry(engine, carried)


def follow_registry(engine: Engine, carried: list[Prior]) -> None:
    """The registry entry takes the new id; one left at an old root by a moved checkout goes."""
    from .registry import forget_entry, register_project

    home, db = engine.settings.home, str(engine.db.path)
    register_project(home, engine.registry_entry())
    for prior in carried:
        if prior.root != str(engine.repo.root):
            forget_entry(home, prior.root, db)


async def last_change(db: Database, pid: str) -> Change | None:
    """The latest identity carried over into ``pid``, if any."""
    row = await db.fetchone(
        "select old_id, project_id, old_origin, nodes, changed_at from project_aliases "
        "where project_id = ? order by changed_at desc limit 1",
        (pid,),
    )
    return None if row is None else Change(*row)
