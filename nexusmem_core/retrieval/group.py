"""A commit is one answer: its file diffs are ranked with it, not beside it.

A commit and the diffs of its files matched one query as separate results, so one commit
could fill three of the ten places and push older commits (which have no diffs kept) out.
Here each diff joins its commit: the commit stands at the best relevance of the two, with the
best-matching diff as its ``hunk`` (the excerpt shows that hunk), and the places the diffs
held go to other answers. A diff whose commit was not among the candidates brings it in.
Grouping comes before the priors, so the unit is weighed as the commit is: its signal, its
trust (a rejected commit is not lifted back by its own diff), its age.
"""

from __future__ import annotations

from ..store.db import Database
from ..store.fts import Candidate, candidates_by_ref

__all__ = ["group_commits"]


async def group_commits(
    db: Database, pid: str, ranked: list[Candidate], as_of: int | None = None
) -> list[Candidate]:
    """``ranked`` (by relevance) with every file diff folded into its commit; by relevance."""
    commits = {c.ref: c for c in ranked if c.kind == "git_commit"}
    missing = sorted({sha for c in ranked if (sha := _sha(c)) and sha not in commits})
    fetched = await candidates_by_ref(db, pid, "git", "git_commit", missing, as_of)
    out: list[Candidate] = []
    for c in ranked:
        sha = _sha(c)
        if sha is None:
            out.append(c)
            continue
        commit = commits.get(sha) or fetched.get(sha)
        if commit is None:  # its commit is not in memory (a diff of a forgotten commit)
            out.append(c)
            continue
        if sha not in commits:  # brought in by its diff, at the diff's place
            commits[sha] = commit
            commit.relevance, commit.arms = c.relevance, list(c.arms)
            out.append(commit)
        elif c.relevance > commit.relevance:
            commit.relevance = c.relevance
        if commit.hunk is None or c.relevance > commit.hunk.relevance:
            commit.hunk = c
    out.sort(key=lambda c: c.relevance, reverse=True)
    return out


def _sha(c: Candidate) -> str | None:
    if c.kind != "file_diff":
        return None
    sha = c.meta.get("sha")
    return sha if isinstance(sha, str) else None
