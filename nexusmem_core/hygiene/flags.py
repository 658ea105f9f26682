"""The "likely superseded" flags: counted after every sync and by ``status``, and whether a
sync makes a few new judgements (``contradictions.py`` makes them).

Kept apart from the judging and reporting modules so a sync loads those only when the
embedding model answered: without Ollama, a sync's share of this is one count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import ProjectConfig
    from ..store.db import Database

__all__ = ["OPEN", "count_open", "judging_off"]

# A flag is open while nobody has acted on its "yes": not dismissed, reviewed or marked stale.
# The judgements are read first and their nodes looked up (``cross join`` keeps that order):
# the planner otherwise walked every node of the project to probe the judgements, 29 ms of
# every sync at 50k commits for a count that is almost always 0.
OPEN = """
from contradictions c cross join nodes o on o.id = c.old_id join nodes n on n.id = c.new_id
where o.project_id = ? and c.verdict = 'yes' and not c.dismissed and o.trust = 'candidate'
  and not exists (select 1 from nodes s where s.supersedes = o.id)
"""


async def count_open(db: Database, pid: str) -> int:
    """Stale nodes with a "likely superseded" suggestion nobody has acted on yet (not
    dismissed, reviewed or marked stale)."""
    row = await db.fetchone(f"select count(distinct c.old_id) {OPEN}", (pid,))
    return int(row[0]) if row else 0


def judging_off(config: ProjectConfig, vectors: str) -> str | None:
    """Why a sync makes no new judgements (its report's line), or None when it makes some:
    quiet when the model was never reachable, as embedding is (``vectors`` is how the sync's
    embedding pass ended)."""
    if not config.contradictions.auto_check:
        return "off (contradictions.autoCheck is false)"
    if vectors.startswith(("off", "skipped")):
        return "off: the embedding model was not reachable"
    return None
