"""The same text in two files is one answer: a section copied elsewhere shows once.

Projects keep copies on purpose: ``.github/CONTRIBUTING.md`` beside ``docs/contributing.md``,
the README's install steps again in ``docs/index.md``, one deployment note per web server.
Each copy matches a question exactly as well as the other, so both took a place in the top
ten, and the answer that should have been second was third. On the six real corpora, httpx
holds ten such pairs of sections, werkzeug and cobra one each.

Among the best ``DEPTH`` candidates, a doc section whose text (whitespace aside) is that of a
better-ranked one is dropped; the one kept names the others in ``meta["copies"]``. A section
shorter than ``SHORTEST`` characters is left alone: "See below." twice is not a copy.
"""

from __future__ import annotations

import hashlib
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
    rows = await db.fetchall(
        "select seq, body from nodes where seq in (select value from json_each(?))",
        (json.dumps([c.seq for c in sections]),),
    )
    digest = {
        seq: hashlib.sha1(" ".join(body.split()).encode("utf-8", "surrogatepass")).digest()
        for seq, body in rows
        if len(body) >= SHORTEST
    }
    first: dict[bytes, Candidate] = {}
    dropped: set[int] = set()
    for c in sections:
        key = digest.get(c.seq)
        if key is None:
            continue
        kept = first.setdefault(key, c)
        if kept is not c:
            dropped.add(c.seq)
            kept.meta = {**kept.meta, "copies": [*kept.meta.get("copies", []), c.ref]}
    if not dropped:
        return ranked
    return [c for c in ranked if c.seq not in dropped]
