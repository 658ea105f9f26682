"""Import expansion: a question about a file also weighs the history of the files it imports.

When the query names a file of the import graph (``src/app/upload.py``, or ``upload.py`` when
only one file has that name), the candidates that are commits, file diffs or failed commands
touching a file it imports are raised by ``DISCOUNT`` times the best candidate's relevance,
before the priors. "Requests to upload.py come back 429" then finds the rate limiter's commit
(upload.py imports ratelimit.py) although its words are not the question's.

Measured on the labelled set (bench/eval, BM25; MRR@10 / Recall@5), with the 15 queries of
``queries_structure.json`` written and labelled before this existed:

                                   73 old queries   10 in an import   5 in the file itself
    off                             0.676 / 0.607    0.398 / 0.350     0.900 / 0.900
    raise matches (kept)            0.676 / 0.607    0.678 / 0.783     0.767 / 0.800
    raise, and add the 5 newest     0.676 / 0.607    0.678 / 0.783     0.767 / 0.800
      unmatched ones                    (Recall@10 of the 15: 0.911 against 0.944)
    add the 5 newest only           0.676 / 0.607    0.398 / 0.350     0.900 / 0.800

No old query names a file, so none moves. With the vector arm (all-minilm, fusion k = 10) the
15 go from 0.678 / 0.622 to 0.737 / 0.778 (own-file questions from 0.867 / 0.900 to
0.750 / 1.000), and the 73 old ones stay at 0.676 / 0.685. Adding the imported files' recent
history that the query's words do not match never brought a relevant node in and took a place
from one, so only the raise is kept. It costs questions about a file's own history a little: a
widely imported module (``config.py``) lends its commits to every file that imports it.
"""

from __future__ import annotations

from ..chains import FAILED
from ..store.db import Database
from ..store.fts import Candidate

__all__ = ["DISCOUNT", "expand", "named_files"]

DISCOUNT = 0.5
_KINDS = f"(n.kind in ('git_commit', 'file_diff') or (n.kind = 'shell_command' and {FAILED}))"


async def named_files(db: Database, project_id: str, paths: list[str]) -> list[str]:
    """The importing files the question names among ``paths``, its words that look like a file
    name (``Query.paths``): a whole path, or a tail of one that only a single file of the graph
    ends with."""
    found = []
    for token in paths:
        rows = await db.fetchall(
            "select distinct src from import_edges where project_id = ? "
            "and (src = ? or substr(src, -length(?) - 1) = '/' || ?) limit 2",
            (project_id, token, token, token),
        )
        if len(rows) == 1:
            found.append(rows[0][0])
    return found


async def expand(
    db: Database, project_id: str, paths: list[str], candidates: list[Candidate]
) -> list[Candidate]:
    """``candidates`` with those touching a file the named files (of ``paths``, see
    ``named_files``) import raised; same order."""
    named = await named_files(db, project_id, paths) if candidates else []
    if not named:
        return candidates
    ids = [c.id for c in candidates]
    marks, named_marks = ",".join("?" * len(ids)), ",".join("?" * len(named))
    rows = await db.fetchall(
        f"""
        select n.id from nodes n
        where n.id in ({marks}) and {_KINDS}
          and exists (select 1 from node_files f where f.node_seq = n.seq and f.path in (
              select dst from import_edges where project_id = ? and src in ({named_marks})
              and dst not in ({named_marks})))
        """,
        (*ids, project_id, *named, *named),
    )
    raised = {row[0] for row in rows}
    bonus = DISCOUNT * max(c.relevance for c in candidates)
    for c in candidates:
        if c.id in raised:
            c.relevance += bonus
            c.arms = [*c.arms, "imports"]
    return candidates
