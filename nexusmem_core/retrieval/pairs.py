"""A revert and the commit it undoes come as a pair: the second right after the first.

"Did we ever try X?" is answered by both: what was tried, and that (and often why) it was
undone. Whichever of the two ranks first brings the other to the place after it, at its own
score; one that ranked higher on its own stays where it was.

When the question itself asks after something tried and undone (``Query.undone``, see
retrieval/asked.py), the commits of revert pairs are lifted before the pairing, and the word
arm has looked for them among the pairs alone and fused that ranking with its own
(retrieval/lexical.py), so a pair BM25 placed below its first hundred is still a candidate
and the best-matching pair stands near the top. Real set, revert questions (BM25 MRR@10):
fused without this lift 0.585, with it 0.663.

A revert told only in words ("revert adding space between option help", "Restore
option_name parameter to BadOptionUsage", "Reintroduce sync API") has no partner to link,
but the word arm counts it among the reverts the question asks for (reverts.UNDOING: the
words a subject undoes something with); the lift counts it too. Lifting only the linked
pairs put the memory's other pairs above the one revert that answered. Real set, revert
questions (BM25 MRR@10): 0.730 -> 0.812, all 0.776 -> 0.789 (four rose to first place,
three fell one place); hybrid revert 0.844 -> 0.910. Counting the subjects that undo in
other words than "revert" (restore, reintroduce, re-add, bring back, undo, back out, roll
back; 34 subjects in the six repositories, each read): revert 0.812 -> 0.871, all 0.791 ->
0.801 (three rose to first place, one fell a place).

Held out (issue 48; bench/eval/real/loo.py, eleven corpora, 421 questions), without the
pairing: -0.011 [-0.021, -0.000] on all, -0.004 [-0.018, +0.011] on the five corpora written
after it; revert questions -0.10 there and -0.11 on the first six, what keeps it. The undone
lift alone: revert questions -0.10 / -0.12. Both cost those five corpora's commit questions a
little (+0.006 to +0.008 without them: a question saying "ever" read as one about something
undone).
"""

from __future__ import annotations

from ..reverts import REVERTS, says_undoing
from ..store.db import Database
from ..store.fts import Candidate, candidates_by_id
from .asked import LIFT

__all__ = ["pair_reverts"]


async def pair_reverts(
    db: Database, ranked: list[Candidate], as_of: int | None = None, undone: bool = False
) -> list[Candidate]:
    """``ranked`` with each commit's revert partner right after it; with ``undone``, the
    pairs lifted first (see the module text)."""
    ids = [c.id for c in ranked if c.kind == "git_commit"]
    if not ids:
        return ranked
    marks = ",".join("?" * len(ids))
    links = await db.fetchall(
        f"select src, dst from links where kind = ? and (src in ({marks}) or dst in ({marks}))",
        [REVERTS, *ids, *ids],
    )
    partners: dict[str, list[str]] = {}
    for src, dst in links:
        partners.setdefault(src, []).append(dst)
        partners.setdefault(dst, []).append(src)
    if undone:
        for c in ranked:
            # linked, or a commit whose subject says it undoes something (reverts.UNDOING)
            if c.id in partners or (c.kind == "git_commit" and says_undoing(c.title or "")):
                c.score *= LIFT
        ranked = sorted(ranked, key=lambda c: c.score, reverse=True)
    if not links:
        return ranked
    known = {c.id: c for c in ranked}
    wanted = sorted({p for ps in partners.values() for p in ps} - known.keys())
    known.update(await candidates_by_id(db, wanted, as_of))
    out: list[Candidate] = []
    placed: set[str] = set()
    for c in ranked:
        if c.id in placed:
            continue
        out.append(c)
        placed.add(c.id)
        for partner_id in partners.get(c.id, []):
            partner = known.get(partner_id)
            if partner is not None and partner_id not in placed:
                partner.score = min(partner.score, c.score) if partner.score else c.score
                out.append(partner)
                placed.add(partner_id)
    return out
