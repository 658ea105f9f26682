"""A commit is one answer: its file diffs are ranked with it, not beside it.

A commit and the diffs of its files matched one query as separate results, so one commit
could fill three of the ten places and push older commits (which have no diffs kept) out.
Here each diff joins its commit: the commit stands at the best relevance of the two, with the
best-matching diff as its ``hunk`` (the excerpt shows that hunk), and the places the diffs
held go to other answers. A diff whose commit was not among the candidates brings it in.
Grouping comes before the priors, so the unit is weighed as the commit is: its signal, its
trust (a rejected commit is not lifted back by its own diff), its age.

A diff of a prose file (a doc file by the project's doc extensions, or a changelog) lends its
commit nothing. Memory holds the file as sections, which answer better, and the diff is the
same words again: "Fix docs and changelog" outranked the section it edited, and the older
commits a question was about. Such a diff is still its commit's excerpt when the commit is
found by its own words. Measured on the real set (BM25 MRR@10): 0.641 -> 0.655; howto 0.643
-> 0.683, release 0.657 -> 0.687, recent 0.700 -> 0.720. Lending only from files memory
holds now (doc_files) gained half of that: renamed docs and ``requirements/*.txt``-like lists
of names still lent.

With two arms, a commit is one answer to each of them: the word arm often finds it by its
diff (the code holds the identifiers a question names) and the vector arm by its message.
Fused record by record, each record held one arm's share and the commit the better of the
two, so a commit found by both arms through different records counted as found by one
(``fuse.unit_relevance`` gives it each arm's share at the best rank any of its records holds
there). Real set, hybrid MRR@10: 0.839 -> 0.844, recent questions (answered inside the diff
window) 0.746 -> 0.813; seven rose, six fell one place. Grouping each arm's list before the
fusion instead (each commit one place in each list) scored 0.834: it moved every other
candidate's rank with it, and how-to questions' sections fell behind the commits.

Held out (issue 48; bench/eval/real/loo.py, eleven corpora, 421 questions), letting the
prose diffs lend after all: -0.009 [-0.015, -0.004] on all, -0.006 [-0.014, +0.000] on the five
corpora written after it (how-to questions -0.03 on both halves): they stay lending nothing.
"""

from __future__ import annotations

from ..collectors.changelog import is_changelog
from ..config import DEFAULT_DOC_EXTENSIONS
from ..store.db import Database
from ..store.fts import Candidate, candidates_by_ref
from ..store.nodes import held_changelogs

__all__ = ["group_commits", "unit_of"]


async def group_commits(
    db: Database,
    pid: str,
    ranked: list[Candidate],
    as_of: int | None = None,
    doc_extensions: tuple[str, ...] = DEFAULT_DOC_EXTENSIONS,
    units: dict[str, float] | None = None,
) -> list[Candidate]:
    """``ranked`` (by relevance) with every file diff folded into its commit; by relevance.
    ``units``: a commit's relevance as one answer across fused arms (fuse.unit_relevance),
    which it keeps when that is more than its best member's."""
    commits = {c.ref: c for c in ranked if c.kind == "git_commit"}
    prose = {c.id for c in ranked if _sha(c) and _is_prose(c, doc_extensions)}
    logs = {c.id for c in ranked if c.id in prose and is_changelog(_path(c))}
    if logs and not await held_changelogs(db, pid):
        # No changelog in memory: its history is the only record of what each release
        # shipped, and the commit that wrote a release's notes answers for it.
        prose -= logs
    missing = sorted(
        {sha for c in ranked if (sha := _sha(c)) and sha not in commits and c.id not in prose}
    )
    fetched = await candidates_by_ref(db, pid, "git", "git_commit", missing, as_of)
    out: list[Candidate] = []
    for c in ranked:
        sha = _sha(c)
        if sha is None:
            out.append(c)
            continue
        if c.id in prose:  # the sections answer; the commit stands on its own words
            found = commits.get(sha)
            if found is not None and found.hunk is None:
                found.hunk = c
            continue
        commit = commits.get(sha) or fetched.get(sha)
        if commit is None:  # its commit is not in memory (a diff of a forgotten commit)
            out.append(c)
            continue
        if sha not in commits:  # brought in by its diff, at the diff's place
            commits[sha] = commit
            commit.relevance, commit.arms = c.relevance, list(c.arms)
            out.append(commit)
        else:
            commit.relevance = max(commit.relevance, c.relevance)
            commit.arms = sorted({*commit.arms, *c.arms})  # bm25, vector
        if commit.hunk is None or c.relevance > commit.hunk.relevance:
            commit.hunk = c
    for c in out:
        if units and c.kind == "git_commit" and c.ref in units:
            c.relevance = max(c.relevance, units[c.ref])
    out.sort(key=lambda c: c.relevance, reverse=True)
    return out


def unit_of(c: Candidate, doc_extensions: tuple[str, ...] = DEFAULT_DOC_EXTENSIONS) -> str | None:
    """The commit a candidate answers as (its sha): a commit's own, a code diff's commit's;
    None for the rest, and for a diff of a prose file, which lends its commit nothing."""
    if c.kind == "git_commit":
        return c.ref
    sha = _sha(c)
    return None if sha is None or _is_prose(c, doc_extensions) else sha


def _is_prose(c: Candidate, doc_extensions: tuple[str, ...]) -> bool:
    path = _path(c)
    return path.lower().endswith(doc_extensions) or is_changelog(path)


def _path(c: Candidate) -> str:
    return c.ref.partition(":")[2]  # a diff's reference is ``<sha>:<path>``


def _sha(c: Candidate) -> str | None:
    if c.kind != "file_diff":
        return None
    sha = c.meta.get("sha")
    return sha if isinstance(sha, str) else None
