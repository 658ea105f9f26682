"""Keeping memory true and clean: review and staleness, forgetting a value for good, pruning a
source or what a rebase left unreachable, re-applying the redaction table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import Engine

if TYPE_CHECKING:
    from ..config import Settings
    from ..hygiene.forget import ExportReport, ForgetReport, ImportReport
    from ..hygiene.prune import PruneReport
    from ..hygiene.review import MarkStaleResult, ReviewResult
    from ..hygiene.scrub import ScrubReport
    from ..hygiene.stale import DismissResult, OpenSuggestions, StaleReport
    from ..hygiene.unreachable import UnreachableReport


async def review(engine: Engine, node_id: str, trust: str, note: str | None = None) -> ReviewResult:
    """A person's judgement of one node (id or unique prefix): ``verified``, ``rejected``, or
    ``candidate`` to clear it. Rejected ranks lower, never hidden; verified only labels."""
    from ..hygiene.review import review as run

    return await run(engine, node_id, trust, note)


async def stale(engine: Engine, min_age_days: int = 45, limit: int = 20) -> StaleReport:
    """Non-observed nodes older than ``min_age_days`` with nothing confirming them, oldest
    first, with their open "likely superseded" suggestions. Read-only."""
    from ..hygiene.stale import stale as run

    return await run(engine, min_age_days, limit)


async def check_contradictions(
    engine: Engine, min_age_days: int = 45, limit: int = 20
) -> StaleReport:
    """``stale``, after a local chat model judged each candidate against its most similar newer
    node; writes only the cache of verdicts (``report.contradictions`` says if it could not)."""
    from ..hygiene.contradictions import check_contradictions as run

    return await run(engine, min_age_days, limit)


async def mark_stale(engine: Engine, old_id: str, new_id: str) -> MarkStaleResult:
    """Record that ``new_id`` replaces ``old_id``: the old node ranks lower, stays queryable."""
    from ..hygiene.review import mark_stale as run

    return await run(engine, old_id, new_id)


async def dismiss_suggestion(engine: Engine, node_id: str) -> DismissResult:
    """Silence the "likely superseded" suggestions under one stale node."""
    from ..hygiene.stale import dismiss

    return await dismiss(engine, node_id)


async def open_suggestions(engine: Engine, limit: int = 50) -> OpenSuggestions:
    """Every "likely superseded" suggestion nobody has acted on yet. Read-only."""
    from ..hygiene.stale import open_suggestions as run

    return await run(engine, limit)


async def forget(
    engine: Engine,
    value: str,
    *,
    regex: bool = False,
    ignore_case: bool = False,
    reason: str | None = None,
    apply: bool = False,
) -> ForgetReport:
    """Delete every node of this project holding ``value`` (a literal, or a pattern with
    ``regex``) with its vector and index entries, and deny the value to every later sync.
    A dry run unless ``apply``: the report says what would go, by source."""
    from ..hygiene.forget import forget as run

    return await run(
        engine, value, regex=regex, ignore_case=ignore_case, reason=reason, apply=apply
    )


async def deny_list(engine: Engine, *, show_patterns: bool = True) -> list[dict[str, Any]]:
    """The deny list: a literal shows only its length, a regex its pattern (unless not
    ``show_patterns``), with reason and date."""
    from ..hygiene.forget import list_entries

    return await list_entries(engine, show_patterns=show_patterns)


async def export_deny_list(engine: Engine, path: Path) -> ExportReport:
    """Write the deny list (salted hashes and their salts) to ``path``, mode 0600."""
    from ..hygiene.forget import export_entries

    return await export_entries(engine, path)


async def import_deny_list(engine: Engine, path: Path, *, apply: bool = False) -> ImportReport:
    """Add an exported deny list to this checkout and forget the nodes it matches here;
    a dry run unless ``apply``."""
    from ..hygiene.forget import import_entries

    return await import_entries(engine, path, apply=apply)


async def prune_source(engine: Engine, source: str, *, apply: bool = False) -> PruneReport:
    """Remove every node one source (``git``, ``shell:bash``, ...) wrote, and reset what it
    had read; a dry run unless ``apply``."""
    from ..hygiene.prune import prune_source as run

    return await run(engine, source, apply=apply)


async def prune_unreachable(engine: Engine, *, apply: bool = False) -> UnreachableReport:
    """The commits in memory that no ref reaches any more (after a rebase), with their diffs;
    removed at once (no grace period) with ``apply``, else a dry run."""
    from ..hygiene.unreachable import prune_unreachable as run

    if not apply:
        return await run(engine)
    async with engine.db.transaction():
        return await run(engine, apply=True)


async def scrub_secrets(
    settings: Settings, path: Path, *, all_projects: bool = False, apply: bool = False
) -> ScrubReport:
    """Re-apply the current redaction table to what is stored: the nodes of the repository at
    ``path`` (or, ``all_projects``, of every registered one) and the hook logs. A dry run
    unless ``apply``; applied, each database is backed up first (0600) and left with no free
    page or WAL frame holding the old text. See ``nexusmem_core.hygiene.scrub``."""
    from ..hygiene.scrub import scrub

    return await scrub(settings, path, all_projects=all_projects, apply=apply)
