"""``nexusmem sync --prune-source NAME``: remove everything one source wrote.

For a source that should not have been read at all (scraped bash history, say). A dry run
unless ``apply``; applied, one transaction removes the nodes as forget does (tombstones,
vectors, index entries: :mod:`.remove`), resets what the source had read up to, and writes an
audit row. Resetting keeps the state honest: the database no longer claims to hold what it
removed, so a later sync of a source that is still enabled reads it all again. The report
says how to turn the source off.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..collectors.agent import AGENTS
from ..engine import Engine
from ..errors import CONFIRM, UsageError
from ..store import audit
from ..store.db import Database
from .remove import Doomed, leaving_no_trace, remove_nodes

__all__ = ["KNOWN_SOURCES", "PruneReport", "prune_source"]

KNOWN_SOURCES = (
    "git",
    "diff",
    "docs",
    "shell:hook",
    "shell:bash",
    "shell:zsh",
    "shell:fish",
    "shell:pwsh",
    "agent:claude",
    "agent:codex",
    "agent:gemini",
    "agent:cursor",
    "agent:opencode",
    "conversation:claude",
    "conversation:codex",
    "conversation:gemini",
    "conversation:opencode",
    "session",
    "github",
)
# What each source has read up to: the git walk (commits and diffs share it), the hook logs'
# offsets, what the last sync read of each history file (whose first entries the next one
# would otherwise not store again). Doc files are remembered by content hash in their own table.
_CURSORS = {
    "git": "git",
    "diff": "git",
    "shell:hook": "shell:hook",
    "shell:bash": "shell:bash:read",
    "shell:zsh": "shell:zsh:read",
    "shell:fish": "shell:fish:read",
    "shell:pwsh": "shell:pwsh:read",
    # Every agent's hook writes the one agent log; its cursor kept the first agent's name.
    **{f"agent:{name}": "agent:claude" for name in AGENTS},
    "github": "github:since",  # issues and pull requests: read again from the oldest change
}
_CONFIG = ".nexusmem/config.json"


def keep_out(source: str) -> str:
    """How to keep ``source`` from coming back at the next sync."""
    if source in ("git", "diff", "docs"):
        return f"set sources.{source}.enabled to false in {_CONFIG}"
    if source == "shell:hook":
        return (
            f"set sources.shell.enabled to false in {_CONFIG}; `nexusmem hook remove` stops "
            "the recording"
        )
    if source.startswith("shell:"):
        return f"set sources.shell.scrape (or sources.shell.enabled) to false in {_CONFIG}"
    if source.startswith("agent:"):
        agent = source.partition(":")[2]
        return (
            f"set sources.agent.enabled to false in {_CONFIG}; `nexusmem agent remove --agent "
            f"{agent}` stops the recording"
        )
    if source.startswith("conversation:"):
        agent = source.partition(":")[2]
        return (
            f"set sources.conversation.enabled (or sources.conversation.{agent}) to false in "
            f"{_CONFIG}, and sync without --conversation"
        )
    if source == "session":
        return f"set sources.session.enabled to false in {_CONFIG}"
    if source == "github":
        return f"set sources.github.enabled to false in {_CONFIG}, and sync without --github"
    return f"turn it off in {_CONFIG}"


@dataclass
class PruneReport:
    source: str
    applied: bool
    nodes: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    removed: int = 0
    reset: list[str] = field(default_factory=list)  # what the source had read, now unread
    keep_out: str = ""
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        kinds = ", ".join(f"{kind} {n}" for kind, n in self.by_kind.items())
        what = f"{self.nodes} node(s) from {self.source}" + (f" ({kinds})" if kinds else "")
        come_back = f"a later sync reads {self.source} again while it is enabled: {self.keep_out}"
        if not self.applied:
            return [
                f"would remove {what}",
                come_back,
                f"dry run: nothing was changed; {CONFIRM} to remove them",
            ]
        out = [f"removed {what}"]
        if self.reset:
            out.append(f"reset: {', '.join(self.reset)}")
        return [*out, come_back, *self.notes]


async def _present(db: Database, pid: str) -> dict[str, int]:
    rows = await db.fetchall(
        "select source, count(*) from nodes where project_id = ? group by source "
        "order by 2 desc, 1",
        (pid,),
    )
    return dict(rows)


async def _doomed(db: Database, pid: str, source: str) -> tuple[list[Doomed], dict[str, int]]:
    rows = await db.fetchall(
        "select id, seq, kind from nodes where project_id = ? and source = ?", (pid, source)
    )
    kinds = Counter(kind for _, _, kind in rows)
    return [Doomed(i, seq, source) for i, seq, _ in rows], dict(kinds.most_common())


async def _reset(db: Database, pid: str, source: str) -> list[str]:
    """Forget how far ``source`` was read, so the state matches the removed nodes."""
    reset = []
    cursor = _CURSORS.get(source)
    if cursor and await db.execute(
        "delete from cursors where project_id = ? and source = ?", (pid, cursor)
    ):
        walk = " (the next sync walks every commit again)" if cursor == "git" else ""
        reset.append(f"the {cursor} cursor{walk}")
    if source == "docs" and await db.execute("delete from doc_files where project_id = ?", (pid,)):
        reset.append("the record of parsed doc files")
    if source.startswith("conversation:") and await db.execute(
        "delete from source_files where project_id = ? and source = ?", (pid, source)
    ):
        reset.append("the record of read transcripts")
    if source == "session" and await db.execute(
        "delete from sessions where project_id = ?", (pid,)
    ):
        reset.append("the record of summarised sessions (each is asked about again)")
    return reset


async def prune_source(engine: Engine, source: str, *, apply: bool = False) -> PruneReport:
    """Remove every node ``source`` wrote in this project; a dry run unless ``apply``."""
    db, pid = engine.db, engine.project_id
    present = await _present(db, pid)
    if source not in KNOWN_SOURCES and source not in present:
        here = ", ".join(present) or "none (nothing is synced yet)"
        raise UsageError(f"sync --prune-source: no source {source!r}; sources here: {here}")
    report = PruneReport(source=source, applied=apply, keep_out=keep_out(source))
    if not apply:
        nodes, report.by_kind = await _doomed(db, pid, source)
    else:
        async with leaving_no_trace(db) as notes:
            nodes, report.by_kind = await _doomed(db, pid, source)
            report.removed = await remove_nodes(db, nodes, "prune-source")
            report.reset = await _reset(db, pid, source)
            await audit.record(
                db, pid, "prune-source", report.removed, source=source, reset=report.reset
            )
        report.notes = notes
    report.nodes = len(nodes)
    return report
