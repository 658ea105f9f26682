"""The conversation source's sync step, and the dry run ``scan-conversation`` shows.

Which transcripts: Claude Code's in the project directories named after the repository's work
trees or paths beneath them, and every Codex rollout; each kept when the working directory it
records lies inside the repository (one of its worktrees included).

Incremental: each file's size and mtime as last read are kept in ``source_files``, and an
unchanged file is not opened again (a file of another repository included, so Codex's shared
folder is not re-read on every sync). A changed file is read whole again: node ids come from
(session, turn, chunk), so what was there already upserts onto itself and only the new or
grown turns change rows. At most ``max_files`` files are read per sync, the most recently
changed first; the rest wait for the next sync. A transcript that has vanished (Claude Code
deletes them after 30 days) keeps its nodes: memory is meant to outlive the file.

A rebuild keeps the turns too (see ``sync._drop_project``) and reads every transcript again:
the turns of a session read again are replaced by what it gives now (a changed
``max_body_chars`` cuts replies into other chunks); those of a transcript that is gone stay.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ...engine import Engine
from ...logging import get_logger
from ...models import Node, SyncReport, Writer
from ...redact import redact
from ...store.db import Database
from ...store.nodes import delete_nodes
from ..git import RepoInfo
from ..shell.scope import inside, repository_roots
from .claude import claude_files, parse_claude
from .codex import codex_files, parse_codex
from .paths import RepoPaths
from .transcript import Transcript, storable
from .turns import KIND, Built, turn_nodes

if TYPE_CHECKING:
    from ...config import ConversationSource, ProjectConfig, Settings

__all__ = ["CLAUDE", "CODEX", "Preview", "preview", "sync_conversations"]

CLAUDE = "conversation:claude"
CODEX = "conversation:codex"
log = get_logger("conversation")


@dataclass(frozen=True)
class Found:
    """A transcript file as it is on disk now."""

    source: str
    path: str
    size: int
    mtime_ns: int


@dataclass
class Scope:
    """The repository's work trees, and the resolver of the file paths its turns name."""

    roots: list[str]
    paths: RepoPaths

    @classmethod
    async def of(cls, root: Path) -> Scope:
        resolved = await repository_roots(root)
        # Claude Code names a directory after the path a session started in, as given: the
        # root both as git reports it and resolved (a symlinked checkout has two names).
        roots = sorted({*resolved, str(root), os.path.abspath(root)})
        return cls(roots, RepoPaths(os.path.realpath(root), roots))

    def ours(self, cwd: str) -> bool:
        return inside(cwd, self.roots)


def find_transcripts(settings: Settings, cfg: ConversationSource, roots: list[str]) -> list[Found]:
    """The transcript files that may belong to the repository, most recently changed first."""
    paths: list[tuple[str, Path]] = []
    if cfg.claude:
        paths += [(CLAUDE, p) for p in claude_files(settings.claude_dir, roots)]
    if cfg.codex:
        paths += [(CODEX, p) for p in codex_files(settings.codex_dir)]
    found = []
    for source, path in paths:
        if not storable(str(path)):
            continue  # a name that is not UTF-8: neither a node nor source_files could hold it
        try:
            stat = path.stat()
        except OSError:
            continue  # deleted since it was listed
        found.append(Found(source, str(path), stat.st_size, stat.st_mtime_ns))
    found.sort(key=lambda f: (f.mtime_ns, f.path), reverse=True)
    return found


def read_transcript(
    found: Found, scope: Scope, project_id: str, max_chars: int
) -> tuple[Transcript | None, Built]:
    """Parse one file and build its nodes (in a worker thread: both are CPU work); None for
    a file that cannot be read, which the caller counts as one line passed over."""
    parse = parse_claude if found.source == CLAUDE else parse_codex
    try:
        transcript = parse(found.path, scope.ours)
    except OSError as err:
        log.debug("transcript_unreadable", path=found.path, error=str(err))
        return None, Built()
    if not transcript.ours:
        return transcript, Built()
    return transcript, turn_nodes(project_id, transcript, max_chars, scope.paths)


async def _each(nodes: Iterable[Node]) -> AsyncIterator[Node]:
    for node in nodes:
        yield node


async def sync_conversations(engine: Engine, report: SyncReport, write: Writer) -> None:
    """Read the transcripts that changed since the last sync and write their turns (inside
    the sync's transaction; ``write`` leaves out nodes holding a forgotten value)."""
    cfg = engine.config.sources.conversation
    db, pid, limit = engine.db, engine.project_id, engine.config.limits.max_body_chars
    scope = await Scope.of(engine.repo.root)
    found = await anyio.to_thread.run_sync(find_transcripts, engine.settings, cfg, scope.roots)
    read = await _read_before(db, pid)
    changed = [f for f in found if read.get((f.source, f.path)) != (f.size, f.mtime_ns)]
    for item in changed[: cfg.max_files]:
        transcript, built = await anyio.to_thread.run_sync(read_transcript, item, scope, pid, limit)
        if transcript is None:  # not remembered: read again once it can be (a permission fixed)
            report.conversation_skipped += 1
            continue
        if transcript.ours:
            report.conversation_files += 1
            report.conversation_skipped += transcript.skipped
            report.redacted += sum(built.redacted)
            if report.rebuilt and transcript.session:
                await _forget_turns(db, pid, item.source, transcript.session)
            report.conversation += await write(_each(built.nodes), "conversation")
        await _remember(db, pid, item, transcript)


async def _forget_turns(db: Database, pid: str, source: str, session: str) -> None:
    """Delete the stored turns of ``session``, about to be written again (a rebuild)."""
    rows = await db.fetchall(
        "select id from nodes where project_id = ? and source = ? and kind = ? "
        "and json_extract(meta, '$.session') = ?",
        (pid, source, KIND, redact(session)),  # meta is stored redacted (store/nodes.py)
    )
    await delete_nodes(db, [node_id for (node_id,) in rows])


async def _read_before(db: Database, pid: str) -> dict[tuple[str, str], tuple[int, int]]:
    rows = await db.fetchall(
        "select source, path, size, mtime_ns from source_files "
        "where project_id = ? and source in (?, ?)",
        (pid, CLAUDE, CODEX),
    )
    return {(source, path): (size, mtime) for source, path, size, mtime in rows}


async def _remember(db: Database, pid: str, item: Found, transcript: Transcript) -> None:
    """Note the file as read, as it was when listed: if it grew meanwhile, the next sync
    sees a change and reads it again. ``session`` is set only for a file of this repository."""
    session = transcript.session if transcript.ours else None
    await db.execute(
        "insert into source_files (project_id, source, path, size, mtime_ns, session, read_at) "
        "values (?, ?, ?, ?, ?, ?, ?) on conflict (project_id, source, path) do update set "
        "size = excluded.size, mtime_ns = excluded.mtime_ns, session = excluded.session, "
        "read_at = excluded.read_at",
        (pid, item.source, redact(item.path), item.size, item.mtime_ns, session, int(time.time())),
    )


# ------------------------------------------------------------------------------------ dry run


@dataclass
class Preview:
    """What a sync would write, read from every transcript as if none had been read before."""

    files: int = 0  # transcripts of this repository read
    skipped: int = 0
    redacted: int = 0
    nodes: list[tuple[Node, int]] = field(default_factory=list)  # with the secrets replaced

    def to_dict(self) -> dict[str, Any]:
        """The totals, and one row per node in the shape of the other ``scan-*`` commands."""
        from ...retrieval.pack import preview_row

        rows = [{**preview_row(n), "redacted": redacted} for n, redacted in self.nodes]
        return {
            "files": self.files,
            "skipped": self.skipped,
            "redacted": self.redacted,
            "nodes": rows,
        }


async def preview(
    settings: Settings, repo: RepoInfo, config: ProjectConfig, limit: int | None = None
) -> Preview:
    """The nodes a sync would write (the ``claude``/``codex`` switches and ``max_files``
    apply; ``enabled`` does not: this is how to look before turning the source on)."""
    cfg = config.sources.conversation
    scope = await Scope.of(repo.root)
    found = await anyio.to_thread.run_sync(find_transcripts, settings, cfg, scope.roots)
    result = Preview()
    for item in found[: cfg.max_files]:
        transcript, built = await anyio.to_thread.run_sync(
            read_transcript, item, scope, repo.project_id, config.limits.max_body_chars
        )
        if transcript is None:
            result.skipped += 1
            continue
        if not transcript.ours:
            continue
        result.files += 1
        result.skipped += transcript.skipped
        result.redacted += sum(built.redacted)
        result.nodes += zip(built.nodes, built.redacted, strict=True)
    if limit:
        result.nodes = result.nodes[:limit]
    return result
