"""Which release shipped it, in a repository that keeps no changelog: the version bump after it.

Many projects write no release notes into the tree: a crate publishes "Release 1.0.182", a
JavaScript library commits "10.11.0 (#3719)", and the notes live on a website. Asked "which
release first let me do X?", the answer is that bump, and its subject holds none of the
question's words: the word arm finds the commit that made X, never the release that shipped
it. So for a release question in a memory that holds no changelog's sections, each of the
best ``TOP`` commits brings the first version bump committed after it (``is_bump``), placed
right above it at its score. The commit stays: it says what changed.

"After" is by commit time, the moment a change reached the branch: a change merged from a
long-lived branch can be dated before a bump that did not contain it, so this is the likely
release, not a proof of ancestry.

Judged held out (issue 48, bench/eval/real/loo.py, eleven corpora): release questions +0.044
[+0.012, +0.086] (serde 0 -> 0.281, preact 0 -> 0.179; six rose, none fell); all questions
+0.006 [-0.001, +0.013]; one recent question read as a release question fell a place.
"""

from __future__ import annotations

import re

from ..store.db import Database
from ..store.fts import Candidate, candidates_by_id
from ..store.nodes import held_changelogs

__all__ = ["TOP", "is_bump", "shipped_in"]

TOP = 5  # commits of a release question's ranking that bring their release
SCAN = 400  # commits after one read to find the bump (the newest bump may be far)

# A subject that is a version and little else: "Release 1.0.182", "10.11.0 (#3719)",
# "v11.0.0-beta.0", "Beta.2", "chore(release): 2.3.0", "Bump version to 3.1".
_BUMP = re.compile(
    r"^(?:(?:chore|build|release)(?:\([\w-]+\))?:\s*)?"
    r"(?:(?:release|releasing|version|publish|bump(?:\s+version)?(?:\s+to)?|prepare)\s+)?"
    r"v?(?:\d+(?:\.\d+)*(?:[-.]?(?:alpha|beta|rc|pre)(?:[.-]?\d+)?)?|(?:alpha|beta|rc)[.-]?\d+)"
    r"\s*(?:\(#\d+\))?\.?$",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")


def is_bump(subject: str) -> bool:
    """Whether a commit's subject is a version bump: a version and little else."""
    text = subject.strip()
    return len(text) <= 60 and _DIGIT.search(text) is not None and _BUMP.match(text) is not None


async def shipped_in(
    db: Database, pid: str, ranked: list[Candidate], as_of: int | None = None
) -> list[Candidate]:
    """``ranked`` with the release each of its best commits shipped in above it (see the
    module text); unchanged when memory holds a changelog's sections, which answer."""
    best = [c for c in ranked[:TOP] if c.kind == "git_commit" and not is_bump(c.title or "")]
    if not best or await held_changelogs(db, pid):
        return ranked
    bumps: dict[str, str] = {}  # a commit's id -> its release's
    for c in best:
        if c.ts is None:
            continue
        rows = await db.fetchall(
            "select id, title from nodes where project_id = ? and kind = 'git_commit' "
            "and ts >= ? and created_at <= ? order by ts, seq limit ?",
            (pid, c.ts, 2**62 if as_of is None else as_of, SCAN),
        )
        found = next((id_ for id_, title in rows if id_ != c.id and is_bump(title or "")), None)
        if found is not None:
            bumps[c.id] = found
    if not bumps:
        return ranked
    known = {c.id: c for c in ranked}
    known.update(await candidates_by_id(db, sorted(set(bumps.values()) - known.keys()), as_of))
    out: list[Candidate] = []
    placed: set[str] = set()
    for c in ranked:
        release = known.get(bumps.get(c.id, ""))
        if release is not None and release.id not in placed:
            release.score = max(release.score, c.score)
            out.append(release)
            placed.add(release.id)
        if c.id not in placed:
            out.append(c)
            placed.add(c.id)
    return out
