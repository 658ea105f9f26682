"""Reverts: a commit that undoes another is linked to it (``reverts``), both ways readable.

"Did we ever try X?" is answered by the attempt and its undoing together, and the revert's
own text ("Revert "…"", "This reverts commit <sha>.") says little of why. Sync links each
revert to the commit it names: by the sha in ``This reverts commit <sha>`` (git's own
wording), in a subject ``Revert <sha>``, or in a line that says it reverts what that sha did
(``Revert changes made to X in <sha>``); else by the subject inside ``Revert "<subject>"``
(the newest earlier commit of that subject). Search then keeps the two together
(retrieval/pairs.py). A revert told only in words ("revert adding space between option
help", "Restore option_name parameter to BadOptionUsage") names nothing to link: its words
still find it, and a question about something undone counts it among the reverts it asks for
(``UNDOING``: retrieval/lexical.py and pairs.py).
"""

from __future__ import annotations

import re
import time

from .store.db import Database

__all__ = ["REVERTS", "UNDOING_TITLE", "link_reverts", "reverted", "says_undoing"]

REVERTS = "reverts"  # the links.kind

# The words a commit's subject undoes something with, linked or not: "Revert ...", "Restore
# option_name parameter to BadOptionUsage", "Reintroduce sync API", "Re-add zsh types", "Bring
# back skip for Windows". Written as FTS5 phrases (the index's Porter stemmer matches
# "reverted", "restores", "reintroducing"), and as the pattern that says the same of a title.
UNDOING = (
    "revert",
    "restore",
    "reintroduce",
    "re add",
    "readd",
    "bring back",
    "brought back",
    "put back",
    "undo",
    "back out",
    "roll back",
    "rollback",
)
UNDOING_TITLE = "title : (" + " OR ".join(f'"{w}"' for w in UNDOING) + ")"
_UNDOING = re.compile(
    r"\b(?:revert|restor|reintroduc|re-?add|bring\s+back|brought\s+back|put\s+back|undo|"
    r"undid|back(?:ed)?\s+out|roll(?:ed|s)?\s*back)\w*",
    re.IGNORECASE,
)


def says_undoing(subject: str) -> bool:
    """Whether a commit's subject says it undoes something (``UNDOING``)."""
    return _UNDOING.search(subject) is not None


_SAYS_REVERT = "{title body} : revert*"  # a word that begins so, in the title or the body
_SHA = re.compile(r"\breverts? commit ([0-9a-f]{7,40})\b", re.IGNORECASE)
_SUBJECT = re.compile(r'^Revert\s+"(.+)"\s*$', re.IGNORECASE)
_SUBJECT_SHA = re.compile(r"^Revert(?:\s+commit)?\s+([0-9a-f]{7,40})\b", re.IGNORECASE)
# "Revert(s/ed/ing) ... <sha>" within one line: what that commit did is undone here.
_LINE_SHA = re.compile(r"\brevert(?:s|ed|ing)?\b[^\n]{0,120}?\b([0-9a-f]{7,40})\b", re.IGNORECASE)


def _sha_like(word: str) -> bool:
    return any(ch.isdigit() for ch in word)  # "defaced" is a word, not a sha


def reverted(subject: str, body: str) -> tuple[str | None, str | None]:
    """What a commit message says it reverts: (a sha or its prefix, a subject); or Nones."""
    sha = None
    for found in (
        _SHA.search(body),
        _SUBJECT_SHA.match(subject.strip()),
        *_LINE_SHA.finditer(body),
    ):
        if found and _sha_like(found.group(1)):
            sha = found.group(1).lower()
            break
    named = _SUBJECT.match(subject.strip())
    return sha, named.group(1) if named else None


async def link_reverts(db: Database, pid: str) -> int:
    """Link every revert commit not linked yet to the commit it reverts; how many were.

    The commits that say "revert" are found by the word index, which keeps the rows of each
    word: every way :func:`reverted` reads a message needs a word beginning "revert" (reverts,
    reverted, reverting: the index's stemmer makes them one). A ``like '%revert%'`` over every
    commit's body read them all, 75 ms of each sync with new commits at 50k."""
    rows = await db.fetchall(
        "select n.id, n.title, n.body, n.ts "
        "from (select rowid from nodes_fts where nodes_fts match ?) f "
        "cross join nodes n on n.seq = f.rowid "  # those rows first, not every commit
        "where n.project_id = ? and n.kind = 'git_commit' "
        "and not exists (select 1 from links l where l.src = n.id and l.kind = ?)",
        (_SAYS_REVERT, pid, REVERTS),
    )
    now, linked = int(time.time()), 0
    for node_id, title, body, ts in rows:
        sha, subject = reverted(title, body or "")
        target = await _target(db, pid, sha, subject, ts)
        if target is None or target == node_id:
            continue
        await db.execute(
            "insert into links (src, dst, kind, project_id, created_at) values (?, ?, ?, ?, ?) "
            "on conflict do nothing",
            (node_id, target, REVERTS, pid, now),
        )
        linked += 1
    return linked


async def _target(
    db: Database, pid: str, sha: str | None, subject: str | None, ts: int | None
) -> str | None:
    if sha is not None:
        row = await db.fetchone(
            "select id from nodes where project_id = ? and source = 'git' and kind = 'git_commit' "
            "and ref >= ? and ref < ? limit 1",
            (pid, sha, sha + "g"),  # a prefix: every sha character sorts below 'g'
        )
        if row:
            return str(row[0])
    if subject:
        row = await db.fetchone(
            "select id from nodes where project_id = ? and kind = 'git_commit' and title = ? "
            "and (ts <= ? or ? is null) order by ts desc limit 1",
            (pid, subject, ts, ts),
        )
        if row:
            return str(row[0])
    return None
