"""The same text in two files is one answer: a section copied elsewhere shows once.

Projects keep copies on purpose: ``.github/CONTRIBUTING.md`` beside ``docs/contributing.md``,
the README's install steps again in ``docs/index.md``, one deployment note per web server.
Each copy matches a question exactly as well as the other, so both took a place in the top
ten, and the answer that should have been second was third. On the six real corpora, httpx
holds ten such pairs of sections, werkzeug and cobra one each.

Among the best ``DEPTH`` candidates, a doc section whose text is that of a better-ranked one is
dropped; the one kept names the others in ``meta["copies"]``. A section
shorter than ``SHORTEST`` characters is left alone: "See below." twice is not a copy.
"""

from __future__ import annotations

import json

from ..store.db import Database
from ..store.fts import Candidate

__all__ = ["DEPTH", "SHORTEST", "drop_copies"]

DEPTH = 40
SHORTEST = 80


async def drop_copies(db: Database, ranked: list[Candidate]) -> list[Candidate]:
    """``ranked`` without the doc sections that repeat a better-ranked one's text."""
    sections = [c for c in ranked[:DEPTH] if c.kind == "doc_section"]
    if len(sections) < 2:
        return ranked
    # Compared where they are: SQLite stops at the first byte that differs, and no body
    # crosses into Python (reading them all cost a search more than a tenth of its time).
    seqs = json.dumps([c.seq for c in sections])
    pairs = await db.fetchall(
        "select a.seq, b.seq from nodes a join nodes b on a.seq < b.seq "
        "and length(a.body) = length(b.body) and a.body = b.body "
        "where a.seq in (select value from json_each(?)) "
        "and b.seq in (select value from json_each(?)) and length(a.body) >= ?",
        (seqs, seqs, SHORTEST),
    )
    if not pairs:
        return ranked
    same: dict[int, set[int]] = {}
    for a, b in pairs:
        same.setdefault(a, set()).add(b)
        same.setdefault(b, set()).add(a)
    dropped: set[int] = set()
    for c in sections:  # best first: the first of each set of copies is kept
        copies = [o for o in sections if o.seq in same.get(c.seq, ())]
        if copies and c.seq not in dropped:
            dropped.update(o.seq for o in copies)
            c.meta = {**c.meta, "copies": [*c.meta.get("copies", []), *(o.ref for o in copies)]}
    return [c for c in ranked if c.seq not in dropped]
