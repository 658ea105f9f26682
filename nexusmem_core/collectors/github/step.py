"""The GitHub step of a sync, and the ``scan-github`` preview.

Runs inside the sync's transaction (see ``sync._ingest``); whatever goes wrong with ``gh`` or
the network ends in one line in ``report.github_note`` and the sync goes on. The threads read
before a failure are written, and the cursor moves past them only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...engine import Engine
from ...logging import get_logger
from ...models import Node, SyncReport, Writer
from ...store.nodes import get_cursor, set_cursor
from ..git import RepoInfo
from .fetch import Cursor, Fetched, fetch_threads
from .gh import github_repo
from .links import link_threads
from .nodes import Unreadable, thread_node

if TYPE_CHECKING:
    from ...config import ProjectConfig

__all__ = ["CURSOR", "Preview", "preview_github", "sync_github"]

CURSOR = "github:since"
log = get_logger("github")


@dataclass
class Preview:
    """What a sync would write, read as a first sync reads (from the oldest change)."""

    nodes: list[Node] = field(default_factory=list)
    note: str = "ok"
    redacted: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The preview as ``scan-github --json`` prints it (rows shaped as the other scans')."""
        from ...retrieval.pack import preview_row

        rows = [{**preview_row(n), "url": n.meta.get("url")} for n in self.nodes]
        return {"github": self.note, "redacted": self.redacted, "threads": rows}


async def sync_github(engine: Engine, report: SyncReport, write: Writer) -> None:
    """Read the issues and pull requests changed since the last sync and link them."""
    repo = github_repo(engine.repo.origin)
    if repo is None:
        report.github_note = "off: no github.com remote"
        return
    db, pid = engine.db, engine.project_id
    cursor = Cursor.decode(await get_cursor(db, pid, CURSOR))
    fetched = await _fetch(engine.repo, engine.config, repo, cursor, None)
    nodes, secrets, unreadable = _nodes(pid, fetched, engine.config)
    report.redacted += secrets
    report.github = await write(_each(nodes), "github")
    if fetched.cursor != cursor:
        await set_cursor(db, pid, CURSOR, fetched.cursor.encode())
    cap = engine.config.sources.github.max_threads
    report.github_note = _note(fetched, len(nodes), unreadable, cap)
    links = await link_threads(db, pid, "/".join(repo).lower(), written=report.github)
    if links.mentions or links.closes or links.discussion or links.removed:
        report.notes.append(
            f"github links: {links.mentions} mention(s), {links.closes} closing commit(s), "
            f"{links.discussion} failure discussion(s) added, {links.removed} removed"
        )
    log.debug(
        "github_synced",
        threads=len(nodes),
        written=report.github,
        calls=fetched.calls,
        unreadable=unreadable,
    )


async def preview_github(repo: RepoInfo, config: ProjectConfig, limit: int | None) -> Preview:
    """The nodes a first sync would write (at most ``limit``, else ``maxThreads``); writes
    nothing anywhere."""
    slug = github_repo(repo.origin)
    if slug is None:
        return Preview(note="off: no github.com remote")
    fetched = await _fetch(repo, config, slug, Cursor(), limit)
    nodes, secrets, unreadable = _nodes(repo.project_id, fetched, config)
    cap = limit or config.sources.github.max_threads
    return Preview(nodes, _note(fetched, len(nodes), unreadable, cap), secrets)


async def _fetch(
    repo: RepoInfo, config: ProjectConfig, slug: tuple[str, str], cursor: Cursor, limit: int | None
) -> Fetched:
    cfg = config.sources.github
    return await fetch_threads(
        repo.root,
        *slug,
        cursor,
        max_threads=limit or cfg.max_threads,
        max_comments=cfg.max_comments_per_thread,
        timeout=cfg.timeout_seconds,
    )


def _nodes(project_id: str, fetched: Fetched, config: ProjectConfig) -> tuple[list[Node], int, int]:
    """The threads' nodes, the secrets redacted from them, and how many records were unusable."""
    nodes, secrets, unreadable = [], 0, fetched.unreadable
    per_thread = config.sources.github.max_comments_per_thread
    for thread in fetched.threads:
        try:
            node, found = thread_node(project_id, thread, per_thread, config.limits.max_body_chars)
        except (Unreadable, TypeError, ValueError, AttributeError):
            unreadable += 1  # a record of a shape this code does not know: skipped, counted
            continue
        nodes.append(node)
        secrets += found
    return nodes, secrets, unreadable


async def _each(nodes: Iterable[Node]) -> AsyncIterator[Node]:
    for node in nodes:
        yield node


def _note(fetched: Fetched, read: int, unreadable: int, cap: int) -> str:
    """``ok``, or ``ok`` and what is left for later, or why the read stopped early."""
    if fetched.note != "ok":
        return fetched.note + (f" ({read} thread(s) read before that)" if read else "")
    parts = ["ok"]
    if fetched.more:
        parts.append(f"{cap} thread(s) read, the most one run reads; more are left")
    if unreadable:
        parts.append(f"{unreadable} unreadable record(s) skipped")
    return "; ".join(parts)
