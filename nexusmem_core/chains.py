"""Failure -> fix chains: which later event resolved a failed command.

Two independent heuristics, each a link in the ``links`` table (migration 4):

* **retry**: the first later run of the same command (by the keyed hash of its raw text, so a
  redacted command still matches only itself) in the same working directory that exited 0
  within 24 hours;
* **discussion**: the conversation turn or session summary within 24 hours that contains
  every significant word of the command; words too common in this project's conversations
  do not count, so "npm" alone never bridges a failure to an unrelated chat.

Links are idempotent (a primary key), belong to the project that found them, and go with
either end when a node is deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

from .store.db import Database

__all__ = [
    "FAILED",
    "PASSED",
    "UnresolvedFailure",
    "unresolved_failures",
]

# A command failed: the agent said so (exit code possibly unknown), or its exit code is known
# and non-zero. Ctrl-C (130, 131) is the user stopping it, not a failure to fix.
FAILED = (
    "(json_extract(meta, '$.outcome') = 'failed' or "
    "(json_extract(meta, '$.exit') is not null and "
    "json_extract(meta, '$.exit') not in (0, 130, 131)))"
)
PASSED = "json_extract(meta, '$.exit') = 0"

WINDOW = 24 * 3600  # a fix is looked for this long after the failure


@dataclass(frozen=True)
class UnresolvedFailure:
    id: str
    title: str  # the (redacted) command
    ts: int
    cwd: str | None
    edited: list[str]  # files the agent changed just before it ran


async def unresolved_failures(db: Database, project_id: str, since: int) -> list[UnresolvedFailure]:
    """Failed commands since ``since`` with no link and no later passing run, newest first."""
    import json

    rows = await db.fetchall(
        f"""
        select n.id, n.title, n.ts, n.meta from nodes n
        where n.project_id = ? and n.kind = 'shell_command' and n.ts >= ? and {FAILED}
          and not exists (select 1 from links l where l.src = n.id)
          and not exists (
              select 1 from nodes later
              where later.project_id = n.project_id and later.kind = 'shell_command'
                and json_extract(later.meta, '$.cmd_hash') = json_extract(n.meta, '$.cmd_hash')
                and later.ts > n.ts and json_extract(later.meta, '$.exit') = 0)
        order by n.ts desc
        """,
        (project_id, since),
    )
    out = []
    for node_id, title, ts, meta in rows:
        facts = json.loads(meta or "{}")
        edited = facts.get("edited") if isinstance(facts.get("edited"), list) else []
        out.append(UnresolvedFailure(node_id, title, ts, facts.get("cwd"), edited))
    return out
