"""The sync line: what a sync changed, in words a person reads.

Kept out of render.py, which a sync with nothing new never imports (start-up is a feature:
git's post-commit hook runs one after every commit). Both adapters may use it; ``prune`` names
the caller's own way to prune.
"""

from __future__ import annotations

from .models import SyncReport
from .textguard import one_line

__all__ = ["counted", "sync_text", "waiting_text"]


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` things in words a person reads: "1 commit", "3 commits", "1,204 doc sections"."""
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def sync_text(r: SyncReport, conversation: bool = False) -> str:
    """A sync in one line: what changed, the sources that wrote nothing left out. With
    ``conversation`` (that opt-in source ran), its turns are counted too."""
    how = " (rebuilt)" if r.rebuilt else " (the whole history read)" if r.full_walk else ""
    written = [
        (r.commits, "commit"),
        (r.diffs, "file diff"),
        (r.docs_sections, "doc section"),
        (r.shell, "shell command"),
        (r.agent, "agent command"),
        *([(r.conversation, "conversation turn")] if conversation else []),
    ]
    changes = [counted(n, what) for n, what in written if n]
    if changes:
        changes[-1] += " written"
    if r.removed:
        changes.append(f"{r.removed:,} removed")
    if r.embedded:
        changes.append(f"{r.embedded:,} embedded")
    said = ", ".join(changes) if changes else "nothing new"
    return f"synced {one_line(r.project)} in {r.seconds:.2f}s{how}: {said}"


def waiting_text(
    commits: int, days: int, prune: str = "`nexusmem sync --prune-unreachable --yes`"
) -> str:
    """After a rebase: the old commits still answer beside the new ones until they are pruned."""
    return (
        f"{counted(commits, 'commit')} a rewrite (a rebase) left behind still show in answers "
        f"beside their new copies: pruned {days} days after, or now with {prune}"
    )
