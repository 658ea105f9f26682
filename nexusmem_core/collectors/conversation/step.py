"""The conversation source's sync step, and the dry run ``scan-conversation`` shows.

Which transcripts: Claude Code's in the project directories named after the repository's work
trees or paths beneath them, every Codex rollout, Gemini CLI's in the project folders of those
paths, and opencode's sessions run there (each a "file" of its own, ``<database>#<session>``,
whose size is its count of parts and whose mtime its last change); each kept when the working
directory it records lies inside the repository (one of its worktrees included). The shell
commands Codex CLI's, Gemini CLI's and opencode's sessions record become ``shell_command``
nodes beside the turns (see ``ran.py``).

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
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import asdict, dataclass, field
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
from .gemini import gemini_files, parse_gemini
from .opencode import opencode_db, opencode_sessions, parse_opencode
from .paths import RepoPaths
from .ran import command_nodes
from .transcript import Transcript, storable
from .turns import KIND, Built, turn_nodes

if TYPE_CHECKING:
    from ...config import ConversationSource, ProjectConfig, Settings

__all__ = ["CLAUDE", "CODEX", "GEMINI", "OPENCODE", "SOURCES", "Preview", "preview",
           "sync_conversations"]  # fmt: skip

CLAUDE = "conversation:claude"
CODEX = "conversation:codex"
GEMINI = "conversation:gemini"
OPENCODE = "conversation:opencode"
SOURCES = (CLAUDE, CODEX, GEMINI, OPENCODE)
log = get_logger("conversation")


@dataclass(frozen=True)
class Found:
    """A transcript file as it is on disk now."""

    source: str
    path: str
    size: int
    mtime_ns: int
    cwd: str | None = None  # where the session ran, when the file's place tells (Gemini, opencode)


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


def find_transcripts(
    settings: Settings, cfg: ConversationSource, scope: Scope
) -> tuple[list[Found], int]:
    """The transcript files that may belong to the repository, most recently changed first,
    and how many stores could not be listed (an opencode database locked or corrupt)."""
    roots = scope.roots
    paths: list[tuple[str, Path, str | None]] = []
    if cfg.claude:
        paths += [(CLAUDE, p, None) for p in claude_files(settings.claude_dir, roots)]
    if cfg.codex:
        paths += [(CODEX, p, None) for p in codex_files(settings.codex_dir)]
    if cfg.gemini:
        paths += [
            (GEMINI, p, cwd) for p, cwd in gemini_files(settings.gemini_home / ".gemini", roots)
        ]
    found, unlisted = [], 0
    for source, path, cwd in paths:
        if not storable(str(path)):
            continue  # a name that is not UTF-8: neither a node nor source_files could hold it
        try:
            stat = path.stat()
        except OSError:
            continue  # deleted since it was listed
        found.append(Found(source, str(path), stat.st_size, stat.st_mtime_ns, cwd))
    if cfg.opencode:
        sessions, unlisted = _opencode_found(opencode_db(settings.data_home), scope)
        found += sessions
    found.sort(key=lambda f: (f.mtime_ns, f.path), reverse=True)
    return found, unlisted


def _opencode_found(db: Path, scope: Scope) -> tuple[list[Found], int]:
    """opencode's sessions of the repository, each a "file": its size is its count of parts,
    its mtime its last change. A database that cannot be read is one line and one skip."""
    try:
        sessions = opencode_sessions(db, scope.ours)
    except sqlite3.Error as err:
        log.warning("opencode_unreadable", path=str(db), error=str(err))
        return [], 1
    return [
        Found(OPENCODE, s.key, s.parts, s.updated_ms * 1_000_000, s.directory)
        for s in sessions
        if storable(s.key)
    ], 0


@dataclass
class Read:
    """One transcript parsed, and its nodes: the turns, and the commands the agent ran."""

    transcript: Transcript
    turns: Built = field(default_factory=Built)
    commands: Built = field(default_factory=Built)


def _parse(found: Found, scope: Scope) -> Transcript:
    if found.source == GEMINI:
        return parse_gemini(found.path, found.cwd or "", scope.ours)
    if found.source == OPENCODE:
        return parse_opencode(found.path, found.cwd or "", scope.ours)
    parse = parse_claude if found.source == CLAUDE else parse_codex
    return parse(found.path, scope.ours)


def read_transcript(
    found: Found, scope: Scope, project_id: str, max_chars: int, home: str
) -> Read | None:
    """Parse one file and build its nodes (in a worker thread: both are CPU work); None for
    a file that cannot be read, which the caller counts as one line passed over."""
    try:
        transcript = _parse(found, scope)
    except OSError as err:
        log.debug("transcript_unreadable", path=found.path, error=str(err))
        return None
    if not transcript.ours:
        return Read(transcript)
    turns = turn_nodes(project_id, transcript, max_chars, scope.paths)
    commands = command_nodes(project_id, transcript, home, scope.paths.root, max_chars)
    return Read(transcript, turns, commands)


async def _each(nodes: Iterable[Node]) -> AsyncIterator[Node]:
    for node in nodes:
        yield node


async def sync_conversations(engine: Engine, report: SyncReport, write: Writer) -> None:
    """Read the transcripts that changed since the last sync and write their turns (inside
    the sync's transaction; ``write`` leaves out nodes holding a forgotten value)."""
    cfg = engine.config.sources.conversation
    db, pid, limit = engine.db, engine.project_id, engine.config.limits.max_body_chars
    home = str(engine.settings.home)
    scope = await Scope.of(engine.repo.root)
    found, unlisted = await anyio.to_thread.run_sync(find_transcripts, engine.settings, cfg, scope)
    report.conversation_skipped += unlisted
    read = await _read_before(db, pid)
    changed = [f for f in found if read.get((f.source, f.path)) != (f.size, f.mtime_ns)]
    hooked = await _hooked(db, pid) if changed else set()
    for item in changed[: cfg.max_files]:
        got = await anyio.to_thread.run_sync(read_transcript, item, scope, pid, limit, home)
        if got is None:  # not remembered: read again once it can be (a permission fixed)
            report.conversation_skipped += 1
            continue
        transcript = got.transcript
        if transcript.ours:
            report.conversation_files += 1
            report.conversation_skipped += transcript.skipped
            report.redacted += sum(got.turns.redacted) + sum(got.commands.redacted)
            if report.rebuilt and transcript.session:
                await _forget_turns(db, pid, item.source, transcript.session)
            report.conversation += await write(_each(got.turns.nodes), "conversation")
            # Commands the agent ran, counted with the hooks' (and linked to their fixes).
            fresh = [n for n in got.commands.nodes if _call(n) not in hooked]
            report.agent += await write(_each(fresh), "conversation")
        await _remember(db, pid, item, transcript)


def _call(node: Node) -> tuple[str, str]:
    return node.source.partition(":")[2], str(node.meta.get("tool_use_id"))


async def _hooked(db: Database, pid: str) -> set[tuple[str, str]]:
    """The (agent, tool call) of every command an agent's hook recorded here: the same run,
    read again from the agent's session, would be a second node of it."""
    rows = await db.fetchall(
        "select source, json_extract(meta, '$.tool_use_id') from nodes "
        "where project_id = ? and kind = 'shell_command' and source like 'agent:%' "
        "and json_extract(meta, '$.tool_use_id') is not null",
        (pid,),
    )
    return {(source.partition(":")[2], str(call)) for source, call in rows}


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
        f"where project_id = ? and source in ({', '.join('?' * len(SOURCES))})",
        (pid, *SOURCES),
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
class Tally:
    """What one agent's transcripts gave a dry run."""

    files: int = 0
    turns: int = 0
    commands: int = 0
    failed: int = 0  # of the commands, those that failed
    skipped: int = 0
    redacted: int = 0


@dataclass
class Preview:
    """What a sync would write, read from every transcript as if none had been read before."""

    files: int = 0  # transcripts of this repository read
    skipped: int = 0
    redacted: int = 0
    nodes: list[tuple[Node, int]] = field(default_factory=list)  # with the secrets replaced
    agents: dict[str, Tally] = field(default_factory=dict)  # by agent, each switched-on one

    def add(self, agent: str, got: Read) -> None:
        tally = self.agents.setdefault(agent, Tally())
        turns, commands = got.turns, got.commands
        secrets = sum(turns.redacted) + sum(commands.redacted)
        tally.files += 1
        tally.turns += len(turns.nodes)
        tally.commands += len(commands.nodes)
        tally.failed += sum(n.meta.get("outcome") == "failed" for n in commands.nodes)
        tally.skipped += got.transcript.skipped
        tally.redacted += secrets
        self.files += 1
        self.skipped += got.transcript.skipped
        self.redacted += secrets
        self.nodes += zip(turns.nodes, turns.redacted, strict=True)
        self.nodes += zip(commands.nodes, commands.redacted, strict=True)

    def to_dict(self) -> dict[str, Any]:
        """The totals, one row per node in the shape of the other ``scan-*`` commands, and
        the totals by agent."""
        from ...retrieval.pack import preview_row

        rows = [
            {**preview_row(n), "source": n.source, "redacted": redacted}
            for n, redacted in self.nodes
        ]
        return {
            "files": self.files,
            "skipped": self.skipped,
            "redacted": self.redacted,
            "agents": {agent: asdict(tally) for agent, tally in self.agents.items()},
            "nodes": rows,
        }


def _agents(cfg: ConversationSource) -> list[str]:
    return [a for a in ("claude", "codex", "gemini", "opencode") if getattr(cfg, a)]


async def preview(
    settings: Settings, repo: RepoInfo, config: ProjectConfig, limit: int | None = None
) -> Preview:
    """The nodes a sync would write (the per-agent switches and ``max_files`` apply;
    ``enabled`` does not: this is how to look before turning the source on)."""
    cfg = config.sources.conversation
    scope = await Scope.of(repo.root)
    found, unlisted = await anyio.to_thread.run_sync(find_transcripts, settings, cfg, scope)
    result = Preview(skipped=unlisted, agents={agent: Tally() for agent in _agents(cfg)})
    if unlisted:
        result.agents["opencode"].skipped += unlisted
    home = str(settings.home)
    for item in found[: cfg.max_files]:
        agent = item.source.partition(":")[2]
        got = await anyio.to_thread.run_sync(
            read_transcript, item, scope, repo.project_id, config.limits.max_body_chars, home
        )
        if got is None:
            result.skipped += 1
            result.agents[agent].skipped += 1
        elif got.transcript.ours:
            result.add(agent, got)
    if limit:
        result.nodes = result.nodes[:limit]
    return result
