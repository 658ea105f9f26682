"""The sync use case: bring one repository's memory up to date, in one transaction."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from . import ingest, walker
from .collectors.agent.nodes import agent_node
from .collectors.agent.told import sync_notes
from .collectors.changelog import NAME_WORDS as _CHANGELOG_WORDS
from .collectors.changelog import is_changelog
from .collectors.diffs import PatchCap, patch_args
from .collectors.git import git_ahead, is_ancestor, read_repo
from .collectors.shell import hooklog
from .collectors.shell.history import PARSERS, LastRead
from .embed import EmbedTimeoutError, EmbedUnavailableError
from .engine import Engine
from .errors import FileAccessError, UsageError
from .hygiene.deny import DenyFilter
from .hygiene.flags import count_open, judging_off
from .hygiene.scrub import note_table_change
from .hygiene.unreachable import CURSOR as UNREACHABLE_CURSOR
from .hygiene.unreachable import prune_unreachable
from .identity import Prior, adopt, follow_registry
from .logging import get_logger
from .models import Node, SyncReport
from .redact import redact
from .registry import register_project
from .store import wordtops
from .store.db import DB_ERRORS, Database
from .store.fts import DeferredIndex, compact, deferred_index, delete_every_node
from .store.nodes import (
    delete_nodes,
    get_cursor,
    held_changelogs,
    refresh_names,
    set_cursor,
    upsert_nodes,
    upsert_project,
    write_rows,
)
from .store.rows import Row

if TYPE_CHECKING:
    from .config import ProjectConfig
    from .embed.ollama import OllamaEmbedder

__all__ = ["Progress", "embed_pending", "git_since", "sync"]

Progress = Callable[[str, int], None]
log = get_logger("sync")
BATCH = 2000
WRITE_CACHE_KIB = 32_768  # our peak at 50k commits: 103 MB (64 MiB: ~20 MB more, 3% faster)
RELEASE_HISTORY_CURSOR = "release-history"  # the deleted changelogs whose history is read
_AGO = re.compile(r"\d+[ .](second|minute|hour|day|week|month|year)s?[ .]ago", re.IGNORECASE)


def _noop(_stage: str, _count: int) -> None:
    return None


def git_since(text: str | None) -> str | None:
    """``--since`` as git's ``--since`` reads it exactly; None for None.

    git reads any text as some date ("notadate" is now, "2026-13-45" a day next December), so
    only forms with one meaning pass: a date (that day's start, local time), a date and time,
    ``@`` unix seconds, or "N units ago". Anything else is a one-line error.
    """
    if text is None:
        return None
    import datetime as dt

    value = text.strip()
    if _AGO.fullmatch(value) or re.fullmatch(r"@\d+", value):
        return value
    try:
        if len(value) == 10:
            moment = dt.datetime.combine(dt.date.fromisoformat(value), dt.time())
        else:
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        return f"@{int(moment.timestamp())}"  # a naive value is local time, as git reads it
    except (ValueError, OverflowError, OSError):
        raise UsageError(
            f"--since: {text!r} is not a date: use YYYY-MM-DD, YYYY-MM-DDTHH:MM[:SS], "
            "@UNIX_SECONDS or 'N days ago' (or hours, weeks, months, years)"
        ) from None


async def sync(engine: Engine, **options: Any) -> SyncReport:
    """Ingest what is new since the last sync, then embed it: see :func:`_sync` for
    ``options``."""
    # Bulk writes insert random ids into the indexes: with SQLite's default 2 MB page cache
    # they spill to the WAL again and again (a first sync of 50k commits: 1.5 s more).
    async with engine.db.page_cache(WRITE_CACHE_KIB):
        return await _sync(engine, **options)


async def _sync(
    engine: Engine,
    *,
    rebuild: bool = False,
    since: str | None = None,
    embed: bool = True,
    embed_limit: int | None = None,
    link_failures: bool = False,
    conversation: bool = False,
    github: bool = False,
    progress: Progress = _noop,
    walk_child: walker.Child | None = None,
) -> SyncReport:
    """Ingest what is new since the last sync, in one transaction: all of it or none of it.

    Then, outside that transaction (it waits on a model, and must not hold the write lock),
    embed what has no vector yet, batch by batch: an interrupted pass resumes where it stopped.
    ``link_failures`` links failed commands to their fixes (done anyway when agent commands
    or conversation turns came in, unless the config turns it off). ``conversation`` and
    ``github`` turn those opt-in sources on for this run only; the config file is unchanged.
    ``walk_child`` is a second process started early (walker.prestart), used when the walk
    is a full one; the caller stops it either way.
    """
    started = time.perf_counter()
    engine.config = _opted_in(engine.config, conversation=conversation, github=github)
    since = git_since(since)
    db = engine.db
    report = SyncReport(project=engine.repo.name, root=str(engine.repo.root), rebuilt=rebuild)
    # A bulk load's commit leaves its WAL to be checkpointed beside the steps after it.
    async with db.checkpoint_aside() as checkpoint:
        empty, carried = await _record(
            engine, report, rebuild, since, progress, walk_child, link_failures=link_failures
        )
        if empty:
            checkpoint()
        await _tidy(engine, report, carried, fresh=empty)
    if engine.config.sources.session.enabled:
        # After the ingest transaction, like embedding: it waits on a chat model.
        from .collectors.session.step import summarize_sessions

        await summarize_sessions(engine, report)
    if embed:
        await embed_pending(engine, report, embed_limit, progress)
        await _judge_contradictions(engine, report)  # a few judgements, when Ollama is there
    report.seconds = round(time.perf_counter() - started, 3)
    return report


async def _record(
    engine: Engine,
    report: SyncReport,
    rebuild: bool,
    since: str | None,
    progress: Progress,
    walk_child: walker.Child | None,
    *,
    link_failures: bool,
) -> tuple[bool, list[Prior]]:
    """The ingest transaction; whether memory held none of this project's nodes before it (a
    first sync or a rebuild), and the repository's earlier identities whose memory it
    carried over (identity.adopt: almost always none)."""
    db = engine.db
    async with db.transaction():
        # HEAD may have moved since the engine was opened. It is read under the write lock:
        # read before it, by a sync that then waited for another one to commit, it can be
        # older than that sync's cursor, which looks like a rewritten history (a full walk,
        # and the cursor set back).
        engine.repo = await read_repo(engine.repo.root)
        repo, pid = engine.repo, engine.project_id
        # The origin may have changed since the engine was opened (a long-lived MCP server):
        # memory recorded under the old project id comes along first (see identity.py).
        carried = await adopt(db, repo)
        await upsert_project(db, pid, repo.name, str(repo.root), repo.origin)
        # People's judgements (review, mark-stale) outlive a rebuild: node ids are derived
        # from what a node is, so the re-ingested node gets its judgement back.
        judged = None
        if rebuild:
            from .hygiene.review import keep_judgements

            judged = await keep_judgements(db, pid)
        kept: dict[str, int] = {}
        if rebuild:
            # So do the record times: `query --as-of` must still see what was recorded when.
            await db.execute("drop table if exists temp.recorded")
            # Keyed by id: the restore below looks each rebuilt node up in it (a table
            # without a key made that a scan per node: Flask's rebuild took 4x its first sync).
            await db.execute(
                "create temp table recorded (id text primary key, created_at integer) without rowid"
            )
            await db.execute(
                "insert into temp.recorded select id, created_at from nodes where project_id = ?",
                (pid,),
            )
            kept = await _drop_project(db, pid, engine.config)
            report.notes += _kept_notes(kept, engine.config)
        empty = not await db.fetchone("select 1 from nodes where project_id = ? limit 1", (pid,))
        async with deferred_index(db) if empty else contextlib.nullcontext() as index:
            await _ingest(engine, report, since, progress, walk_child, index)
        await refresh_names(db, pid, fresh=empty)  # after an upgrade that split them otherwise
        if report.commits:
            from .reverts import link_reverts

            report.reverts = await link_reverts(db, engine.project_id)
        if kept.get("github") and not engine.config.sources.github.enabled:
            await _relink_threads(engine)  # sync_github does it when it runs
        # After the index is built (a first sync or a rebuild defers it): the discussion
        # linker searches it for the conversations that discussed a failure (kept ones too).
        turns = report.conversation or kept.get("conversation")
        auto = engine.config.sources.agent.link_failures and (report.agent or turns)
        if link_failures or auto:
            from .chains import link_failures as link

            links = await link(db, pid)
            report.failures_examined = links.examined
            report.linked_retry, report.linked_discussion = links.retry, links.discussion
            report.linked_signature, report.linked_trace = links.signature, links.trace
        if judged is not None:
            from .hygiene.review import restore_judgements

            await restore_judgements(db, judged)
            await db.execute(
                "update nodes set created_at = (select r.created_at from temp.recorded r "
                "where r.id = nodes.id) where project_id = ? "
                "and id in (select id from temp.recorded)",
                (pid,),
            )
            await db.execute("drop table temp.recorded")
        await set_cursor(db, pid, "last_sync", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    return empty, carried


async def _tidy(engine: Engine, report: SyncReport, carried: list[Prior], *, fresh: bool) -> None:
    """What follows the ingest transaction, each step in its own: what fails leaves what was
    ingested standing, and says so in the report's notes."""
    db = engine.db
    # Outside the ingest transaction, like the lists below: it reads every node once, on the
    # first sync after an upgrade that changed the redaction table. What was ingested stands
    # if it fails; the next sync looks again.
    try:
        note = await note_table_change(engine, fresh=fresh)
    except DB_ERRORS as err:
        note = f"the stored memory was not checked against the redaction table: {err}"
    if note:
        report.notes.append(note)
    # Outside the ingest transaction: it reads for seconds on a big memory, then writes briefly.
    # What was ingested stands if it fails: the lists only speed one-word queries up, and a
    # query scores what they do not cover.
    try:
        refreshed = await wordtops.refresh(db)
    except DB_ERRORS as err:
        report.notes.append(f"the common words' lists were not brought up to date: {err}")
    else:
        if refreshed is not None:
            report.word_lists = refreshed.tokens
    # Outside the ingest transaction too: merging the word index's segments only speeds
    # queries up; a memory left with many reads the same.
    try:
        report.index_compacted = await compact(db)
    except DB_ERRORS as err:
        report.notes.append(f"the word index's segments were not merged: {err}")
    try:
        if carried:
            follow_registry(engine, carried)
        register_project(engine.settings.home, engine.registry_entry(), synced=True)
    except FileAccessError as err:  # memory is written; only the cross-project index is not
        report.notes.append(f"the project registry was not updated: {err}")


async def _ingest(
    engine: Engine,
    report: SyncReport,
    since: str | None,
    progress: Progress,
    walk_child: walker.Child | None = None,
    index: DeferredIndex | None = None,
) -> None:
    """Every source in turn: commits, then their diffs, then docs (dated by the commits). A
    full walk of a long history runs in a second process (``walk_child`` when given), and
    the word index of a bulk load (``index``) is filled while it does."""
    repo, db, pid, sources = engine.repo, engine.db, engine.project_id, engine.config.sources
    touched: dict[str, int] = {}
    full = structured = walked_all = False
    docs: list[ingest.DocFile] | None = None  # read while the history was walked
    deny = await DenyFilter.load(db, pid)  # forgotten values: a node holding one is not written
    if repo.head:
        cursor = await get_cursor(db, pid, "git")
        full = cursor is None or not await is_ancestor(repo.root, cursor, repo.head)
        report.full_walk = full
        rev = repo.head if full else f"{cursor}..{repo.head}"
        moved = full or cursor != repo.head  # else there is no commit to walk: no git log
        limit = ["-n", str(sources.diff.max_commits)] if full else []
        since_args = [f"--since={since}"] if since else []
        rev_args = [*limit, *since_args, rev]
        patching = sources.diff.enabled and moved
        walked = False
        beside = full and sources.git.enabled and not deny
        if beside and (walk_child is not None or await walker.worth_it(repo.root, rev)):
            walked, docs = await _walk_beside(
                engine, report, rev, rev_args, since, touched, progress, walk_child, index
            )
            structured = walked and sources.structure.enabled
        if not walked:
            # The patches' git starts now and runs on the other core while the history walk
            # is parsed here; its output waits in memory until the diffs are read.
            ahead = git_ahead(repo.root, *patch_args(rev_args)) if patching else None
            async with ahead or contextlib.nullcontext() as patches:
                if sources.git.enabled and moved:
                    report.commits = await _sync_commits(
                        engine, rev, since, touched, report, progress, deny
                    )
                if patches is not None:
                    report.diffs = await _sync_diffs(
                        engine, report, rev_args, patches, progress, deny
                    )
        # Every commit was walked: a doc path ``touched`` lacks is in none (staged only).
        walked_all = full and since is None and sources.git.enabled
        if since is None:
            # The cursor says every commit up to it is in memory: a --since walk passed the
            # older ones over, so it leaves the cursor where it was, and the next plain sync
            # walks them (what this one wrote is unchanged then: ids are content-addressed).
            await set_cursor(db, pid, "git", repo.head)
        await _prune_unreachable(engine, report, rewritten=full and cursor is not None)
    if sources.docs.enabled:
        await _sync_docs(engine, touched, report, progress, deny, docs, walked_all=walked_all)
    if repo.head and sources.diff.enabled and since is None:
        report.diffs += await _sync_release_history(engine, touched, full, progress, deny)
    if sources.shell.enabled:
        await _sync_shell(engine, report, progress, deny)
    if sources.agent.enabled:
        await _sync_agent(engine, report, progress, deny)

    async def write(nodes: AsyncIterator[Node], stage: str) -> int:
        return await _write_all(db, nodes, stage, progress, deny)

    if sources.conversation.enabled:
        from .collectors.conversation.step import sync_conversations

        await sync_conversations(engine, report, write)
    if sources.github.enabled:
        from .collectors.github.step import sync_github

        await sync_github(engine, report, write)
    if sources.structure.enabled and not structured:
        from .collectors.structure.step import sync_structure

        await sync_structure(engine, report)
    report.denied, report.deny_timeouts = deny.dropped, deny.timed_out


async def _prune_unreachable(engine: Engine, report: SyncReport, *, rewritten: bool) -> None:
    """Commits a history rewrite left behind leave memory after a grace period (see
    hygiene/unreachable.py). Only looked for when history was rewritten this sync, or when
    earlier sightings are waiting out their grace: ``git rev-list --all`` is not free."""
    days = engine.config.sources.git.prune_unreachable_days
    waiting = await get_cursor(engine.db, engine.project_id, UNREACHABLE_CURSOR)
    if not days or not (rewritten or (waiting and waiting != "{}")):
        return
    found = await prune_unreachable(engine, apply=True, grace_days=days)
    report.unreachable_pruned, report.unreachable_waiting = found.removed, found.waiting


async def _judge_contradictions(engine: Engine, report: SyncReport) -> None:
    """After the embedding pass: a few new contradiction judgements (the judge's modules load
    only when the model answered), then the count of open "likely superseded" flags."""
    off = judging_off(engine.config, report.vectors)
    if off:
        report.contradictions = off
    else:
        from .hygiene.contradictions import judge_during_sync

        await judge_during_sync(engine, report)
    report.flagged = await count_open(engine.db, engine.project_id)


def _opted_in(config: ProjectConfig, *, conversation: bool, github: bool) -> ProjectConfig:
    """``config`` with the opt-in sources a run asked for turned on."""
    sources = config.sources
    if conversation:
        talk = sources.conversation.model_copy(update={"enabled": True})
        sources = sources.model_copy(update={"conversation": talk})
    if github:
        threads = sources.github.model_copy(update={"enabled": True})
        sources = sources.model_copy(update={"github": threads})
    return config.model_copy(update={"sources": sources})


# A rebuild keeps the session summaries (each is a model call, made again only when its
# session's prompt changes; ``sync --prune-source session`` drops them) and the opt-in sources'
# nodes, whose memory outlives what they were read from: Claude Code deletes a transcript after
# 30 days, and a thread is read only while GitHub answers. A source that runs in the rebuild
# reads again over what it kept (conversation/step.py replaces a re-read session's turns); one
# that does not keeps its record of what it read, so its next sync does not read it all again.
_OPT_IN = {
    "conversation:claude": "conversation",
    "conversation:codex": "conversation",
    "conversation:gemini": "conversation",
    "conversation:opencode": "conversation",
    "github": "github",
}
_SOURCES = ", ".join(f"'{source}'" for source in _OPT_IN)
_REBUILT = f"project_id = ? and kind != 'session_summary' and source not in ({_SOURCES})"


async def _drop_project(db: Database, pid: str, config: ProjectConfig) -> dict[str, int]:
    """Everything a rebuild re-ingests. Return the opt-in sources' nodes kept, by source
    (``conversation``, ``github``)."""
    if await db.fetchone(f"select 1 from nodes where not ({_REBUILT}) limit 1", (pid,)):
        await db.execute(
            f"delete from node_files where node_seq in (select seq from nodes where {_REBUILT})",
            (pid,),
        )
        await db.execute(f"delete from nodes where {_REBUILT}", (pid,))
    else:  # nothing is kept (the usual case): the word index is emptied at once
        await delete_every_node(db)
    sources = config.sources
    transcripts = (
        []
        if sources.conversation.enabled
        else [source for source in _OPT_IN if source.startswith("conversation:")]
    )
    await _delete_but(db, "source_files", pid, transcripts)
    await _delete_but(db, "cursors", pid, [] if sources.github.enabled else ["github:since"])
    for table in ("doc_files", "import_edges"):
        await db.execute(f"delete from {table} where project_id = ?", (pid,))
    rows = await db.fetchall(
        "select source, count(*) from nodes where project_id = ? "
        # Turns and threads: the commands a transcript gave are kept too, but not counted.
        f"and kind not in ('session_summary', 'shell_command') and source in ({_SOURCES}) "
        "group by source",
        (pid,),
    )
    kept: dict[str, int] = {}
    for source, count in rows:
        kept[_OPT_IN[source]] = kept.get(_OPT_IN[source], 0) + count
    return kept


async def _delete_but(db: Database, table: str, pid: str, sources: list[str]) -> None:
    """Delete the project's rows of ``table`` but those of ``sources``."""
    spare = f" and source not in ({','.join('?' * len(sources))})" if sources else ""
    await db.execute(f"delete from {table} where project_id = ?{spare}", (pid, *sources))


def _kept_notes(kept: dict[str, int], config: ProjectConfig) -> list[str]:
    """What a rebuild kept of the opt-in sources that did not run, and how to read it again."""
    notes = []
    if kept.get("conversation") and not config.sources.conversation.enabled:
        notes.append(
            f"the rebuild kept {kept['conversation']} conversation turn(s) without reading "
            "their transcripts again; `sync --rebuild --conversation` reads them afresh"
        )
    if kept.get("github") and not config.sources.github.enabled:
        notes.append(
            f"the rebuild kept {kept['github']} GitHub thread(s) without fetching them again; "
            "`sync --rebuild --github` fetches them afresh"
        )
    return notes


async def _relink_threads(engine: Engine) -> None:
    """Link the kept GitHub threads to the rebuilt commits and failures (the links went with
    them), as a sync that reads GitHub does."""
    from .collectors.github.gh import github_repo
    from .collectors.github.links import link_threads

    slug = github_repo(engine.repo.origin)
    repo = "/".join(slug).lower() if slug else None
    await link_threads(engine.db, engine.project_id, repo, written=0)


async def _write_all(
    db: Database, nodes: AsyncIterator[Node], stage: str, progress: Progress, deny: DenyFilter
) -> int:
    """Upsert a stream of nodes in batches, but none that ``deny`` denies; return the rows
    changed.

    Writing overlaps parsing: while the database thread inserts one batch, the event loop
    builds the next (at most two batches in flight, so memory stays flat). aiosqlite runs
    statements in submission order, so the writes land in order.
    """
    changed = 0
    in_flight = anyio.Semaphore(2)

    async def write(batch: list[Node]) -> None:
        nonlocal changed
        async with in_flight:
            rows = await upsert_nodes(db, batch)
        changed += rows  # not `changed += await ...`: that reads `changed` before the await

    seen = 0
    batch: list[Node] = []
    async with _one_error(), anyio.create_task_group() as tg:
        async for node in nodes:
            if deny.denies(node):
                continue
            batch.append(node)
            seen += 1
            if len(batch) >= BATCH:
                await in_flight.acquire()  # back-pressure before handing the batch over
                in_flight.release()
                tg.start_soon(write, batch)
                batch = []
                progress(stage, seen)
        tg.start_soon(write, batch)
    progress(stage, seen)
    return changed


async def _walk_beside(
    engine: Engine,
    report: SyncReport,
    rev: str,
    rev_args: list[str],
    since: str | None,
    touched: dict[str, int],
    progress: Progress,
    child: walker.Child | None,
    index: DeferredIndex | None,
) -> tuple[bool, list[ingest.DocFile] | None]:
    """A full walk's commits and file diffs from a second process (walker.py: ``child``, or
    one started now), written as they come while this one builds the import graph and reads
    and cuts up the doc files (which the walk dates: they are written after it). False when
    no process could take it (nothing was read: the caller walks here).

    The diffs are the child's: this process is the busier one on a history of a few thousand
    commits (ripgrep: it was still reading them 0.15 s after the child's last commit). On a
    long history the child is, but handing them back to this one there measured no faster
    (10k and 50k commits), and slower when the hand-over came late in the walk."""
    sources, config = engine.config.sources, engine.config
    job = walker.Job(
        root=str(engine.repo.root),
        project_id=engine.project_id,
        rev=rev,
        since=since,
        max_chars=config.limits.max_body_chars,
        now=int(time.time()),
        patches=patch_args(rev_args) if sources.diff.enabled else None,
        skip_globs=list(sources.diff.skip_globs),
    )
    docs: list[ingest.DocFile] | None = None

    async def read_docs() -> None:
        nonlocal docs
        skipped: Counter[str] = Counter()
        docs = await ingest.read_doc_files(engine.repo.root, config, skipped)
        _doc_skips(report, skipped)
        for doc in docs:
            doc.sections  # noqa: B018  (cut up now, while the walk runs; kept on the file)
            await anyio.lowlevel.checkpoint()  # the frames' writes go on between files

    async with walker.walk(job, child) as frames:
        if frames is None:
            return False, None
        async with _one_error(), anyio.create_task_group() as tg:
            tg.start_soon(_write_walked, engine.db, frames, touched, report, progress, index)
            if sources.structure.enabled:
                from .collectors.structure.step import sync_structure

                tg.start_soon(sync_structure, engine, report)
            if sources.docs.enabled:
                tg.start_soon(read_docs)
    return True, docs


async def _write_walked(
    db: Database,
    frames: AsyncIterator[tuple[Any, ...]],
    touched: dict[str, int],
    report: SyncReport,
    progress: Progress,
    index: DeferredIndex | None = None,
) -> None:
    """Write the rows of a walk made in a second process (walker.py) as they come, two
    batches in flight as in :func:`_write_all`; note what it says of the paths it walked.

    A bulk load's word index (``index``) is filled in large steps meanwhile: on a long
    history this process would otherwise spend much of the walk waiting for rows, then index
    them all after it (50k commits: 0.46 s; the sync 0.23 s shorter)."""
    in_flight = anyio.Semaphore(2)
    seen = {"commits": 0, "diffs": 0}

    async def write(stage: str, rows: list[Row], files: list[tuple[str, str]]) -> None:
        async with in_flight:
            changed = await write_rows(db, rows, files, new=index is not None)
        # Written: a task waiting its turn at the index below holds no frame. When the walk
        # runs ahead of the index steps, several wait, and each held its rows (50k commits,
        # once the walk's child got faster: the sync's peak 87-110 MB, 82-83 MB so).
        del rows, files
        if stage == "commits":
            report.commits += changed
        else:
            report.diffs += changed
        if index is not None:
            await index.step()

    async with _one_error(), anyio.create_task_group() as tg:
        async for frame in frames:
            if frame[0] == "walked":
                touched.update(frame[1])
                report.git_skipped += frame[2]
                report.diffs_left_out += frame[4]
                log.debug("walk.ended", planned=frame[3]["planned"], early_rows=frame[3]["rows"])
                continue
            stage, rows, files = frame
            await in_flight.acquire()  # back-pressure before handing the batch over
            in_flight.release()
            tg.start_soon(write, stage, rows, files)
            seen[stage] += len(rows)
            progress(stage, seen[stage])


@contextlib.asynccontextmanager
async def _one_error() -> AsyncIterator[None]:
    """A task group's single failure raised as itself: callers (and the one-line error
    mapping of database errors) expect the error, not a group."""
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise


async def _sync_commits(
    engine: Engine,
    rev: str,
    since: str | None,
    touched: dict[str, int],
    report: SyncReport,
    progress: Progress,
    deny: DenyFilter,
) -> int:
    """Upsert commit nodes; note the newest commit time of every path (doc dates come from it).
    A record git printed that cannot be read is counted in ``report.git_skipped``."""

    def passed_over(_record: bytes) -> None:
        report.git_skipped += 1

    async def nodes() -> AsyncIterator[Node]:
        async for commit, node in ingest.commit_nodes(
            engine.project_id, engine.repo.root, rev, engine.config, since, passed_over
        ):
            for _, path in commit.changes:
                touched.setdefault(path, commit.ts)
            yield node

    return await _write_all(engine.db, nodes(), "commits", progress, deny)


async def _sync_diffs(
    engine: Engine,
    report: SyncReport,
    rev_args: list[str],
    output: AsyncIterator[bytes],
    progress: Progress,
    deny: DenyFilter,
) -> int:
    """Upsert the diff nodes of ``rev_args``'s commits, read from its git's ``output``; the
    files past a commit's caps are counted in ``report.diffs_left_out``."""
    root, config = engine.repo.root, engine.config
    cap = PatchCap(config.limits.max_body_chars, config.sources.diff.skip_globs)
    nodes = ingest.diff_nodes(engine.project_id, root, rev_args, config, output=output, cap=cap)
    written = await _write_all(engine.db, nodes, "diffs", progress, deny)
    report.diffs_left_out += cap.left_out
    return written


async def _sync_release_history(
    engine: Engine, touched: dict[str, int], full: bool, progress: Progress, deny: DenyFilter
) -> int:
    """A repository that no longer keeps a changelog (cobra deleted its CHANGELOG.md for
    GitHub's release pages) still has one in its history: the patches of the commits that
    wrote it, which a first sync reads only for its last ``diff.max_commits`` commits. Read
    them all, once for each such file, so "which release added X" finds the commit that
    wrote the release's notes (retrieval/group.py lets them speak for their commit). A
    repository whose memory holds a changelog's sections needs none of it: they answer.

    The changelogs in history are the paths the commits walked touched (``touched``: all of
    history on a full walk); a memory that never looked (made before this) looks once among
    every commit's files.
    """
    db, pid = engine.db, engine.project_id
    if await held_changelogs(db, pid):
        return 0
    done = await get_cursor(db, pid, RELEASE_HISTORY_CURSOR)
    if done is None and not full:
        rows = await db.fetchall(
            "select distinct f.path from node_files f join nodes n on n.seq = f.node_seq "
            "where n.project_id = ? and n.kind = 'git_commit' and ("
            + " or ".join("f.path like ?" for _ in _CHANGELOG_WORDS)  # like: any case
            + ")",
            (pid, *(f"%{word}%" for word in _CHANGELOG_WORDS)),
        )
        seen = [path for (path,) in rows]
    else:
        seen = list(touched)
    # After a rewrite every commit is new: each changelog's history is read again.
    read = set(done.split("\n")) if done and not full else set()
    paths = sorted({path for path in seen if is_changelog(path)} - read)
    if done is not None and not paths:
        return 0
    written = 0
    if paths and engine.repo.head:  # the caller asks only in a repository with commits
        nodes = ingest.diff_nodes(pid, engine.repo.root, [engine.repo.head], engine.config, paths)
        written = await _write_all(db, nodes, "diffs", progress, deny)
    await set_cursor(db, pid, RELEASE_HISTORY_CURSOR, "\n".join(sorted(read | set(paths))))
    return written


async def _sync_docs(
    engine: Engine,
    touched: dict[str, int],
    report: SyncReport,
    progress: Progress,
    deny: DenyFilter,
    read: list[ingest.DocFile] | None = None,
    *,
    walked_all: bool = False,
) -> None:
    """Re-parse only the doc files whose content or date changed; forget vanished sections.
    ``read``: the doc files as they were read while the history was walked; ``walked_all``:
    whether that walk was of all history (its ``touched`` then dates every committed doc).

    A section's date is its file's last commit: noted by the walk, else kept from the last
    sync, else asked of git (a ``--since`` walk stopped before it); only a doc in no commit
    yet takes its file's time."""
    db, pid = engine.db, engine.project_id
    stored = {
        path: (digest, ts)
        for path, digest, ts in await db.fetchall(
            "select path, content_hash, ts from doc_files where project_id = ?", (pid,)
        )
    }
    if read is None:
        skipped: Counter[str] = Counter()
        read = await ingest.read_doc_files(engine.repo.root, engine.config, skipped)
        _doc_skips(report, skipped)
    current = read
    # A file whose very path holds a forgotten value is not read at all: its sections would
    # be denied one by one, and its bookkeeping row would keep the path.
    current = [doc for doc in current if not (deny and deny.matches([doc.path]))]
    undated = [doc.path for doc in current if doc.path not in touched and doc.path not in stored]
    head = engine.repo.head
    if undated and head and engine.config.sources.git.enabled and not walked_all:
        touched = {**touched, **await ingest.last_changed(engine.repo.root, head, undated)}
    changed: list[tuple[ingest.DocFile, int]] = []
    for doc in current:
        old = stored.get(doc.path)
        ts = touched.get(doc.path) or (old[1] if old else None) or doc.mtime
        if not (old and old == (doc.digest, ts)):
            changed.append((doc, ts))
    if changed:
        # All changed files at once: a statement per file took four trips to the database
        # thread each (a first sync of httpx's 60-odd doc files: 24 ms after the walk).
        limit = engine.config.limits.max_body_chars
        nodes = [n for doc, ts in changed for n in ingest.doc_nodes(pid, doc, ts, limit)]
        nodes = [n for n in nodes if not deny.denies(n)]
        keep = {n.id for n in nodes}
        paths = {doc.path for doc, _ in changed}
        existing = await db.fetchall(
            "select id, grp from nodes where project_id = ? and source = 'docs'", (pid,)
        )
        stale = [i for i, grp in existing if grp in paths and i not in keep]
        report.removed += await delete_nodes(db, stale)
        # A project that has no doc files yet has no sections either: its first sync.
        report.docs_sections += await upsert_nodes(db, nodes, new=not stored)
        report.docs_files_parsed += len(changed)
        report.docs_cut += sum(doc.cut or doc.folded for doc, _ in changed)
        await db.executemany(
            "insert into doc_files (project_id, path, content_hash, ts) values (?, ?, ?, ?) "
            "on conflict(project_id, path) do update set content_hash = excluded.content_hash, "
            "ts = excluded.ts",
            # A file may be named after a token.
            [(pid, redact(doc.path), doc.digest, ts) for doc, ts in changed],
        )
    gone = set(stored) - {doc.path for doc in current}
    for path in sorted(gone):
        rows = await db.fetchall(
            "select id from nodes where project_id = ? and source = 'docs' and grp = ?",
            (pid, path),
        )
        report.removed += await delete_nodes(db, [i for (i,) in rows])
        await db.execute("delete from doc_files where project_id = ? and path = ?", (pid, path))
    progress("docs", len(current))


def _doc_skips(report: SyncReport, skipped: Counter[str]) -> None:
    """Count the doc files not read, and say why in a note."""
    report.docs_skipped += sum(skipped.values())
    if skipped:
        why = ", ".join(f"{count} {_SKIP_REASONS[reason]}" for reason, count in skipped.items())
        report.notes.append(f"doc file(s) not read: {why}")


_SKIP_REASONS = {
    "binary": "binary (a NUL byte, or not UTF-8)",
    "outside": "a link leading out of the work tree",
    "not a file": "not a regular file",
}


async def _sync_shell(
    engine: Engine, report: SyncReport, progress: Progress, deny: DenyFilter
) -> None:
    """Commands from the hook log when there is one, else scraped from history files (each
    compared with what the last sync read of it: see collectors/shell/history.py)."""
    db, pid = engine.db, engine.project_id
    cursor = hooklog.LogCursor.decode(await get_cursor(db, pid, "shell:hook"))
    last = {
        shell: LastRead.decode(await get_cursor(db, pid, f"shell:{shell}:read"))
        for shell in PARSERS
    }
    found = await ingest.shell_nodes(engine.repo, engine.config, engine.settings.home, cursor, last)
    report.shell = await _write_all(db, found.nodes, "shell", progress, deny)
    # Read as the nodes were written (ingest.ShellNodes): final now.
    report.shell_mode, report.shell_skipped = found.mode, found.malformed
    if found.cursor is not None:
        await set_cursor(db, pid, "shell:hook", found.cursor.encode())
    for shell, read in found.read.items():
        await set_cursor(db, pid, f"shell:{shell}:read", read.encode())


async def _sync_agent(
    engine: Engine, report: SyncReport, progress: Progress, deny: DenyFilter
) -> None:
    """Commands the coding agents ran (every agent's hook writes the one log, read under the
    ``agent:claude`` cursor, the first agent's name). A failure whose exit code the agent did
    not give takes it from a shell-hook record of the same command at the same moment, when
    there is one."""
    db, pid = engine.db, engine.project_id
    cursor = hooklog.LogCursor.decode(await get_cursor(db, pid, "agent:claude"))
    found = await ingest.agent_records(engine.repo, engine.settings.home, cursor)
    for record in found.records:
        when = record.get("ts")
        if record.get("outcome") == "failed" and record.get("exit") is None and when:
            row = await db.fetchone(
                "select json_extract(meta, '$.exit') from nodes where project_id = ? "
                "and kind = 'shell_command' and source = 'shell:hook' "
                "and json_extract(meta, '$.cmd_hash') = ? and ts between ? and ? "
                "and json_extract(meta, '$.exit') not in (0, 130, 131) limit 1",
                (pid, record.get("cmd_hash"), int(when) - 60, int(when) + 5),
            )
            if row and isinstance(row[0], int):
                record["exit"] = row[0]
    root = os.path.realpath(engine.repo.root)
    limit = engine.config.limits.max_body_chars

    async def nodes() -> AsyncIterator[Node]:
        for record in found.records:
            yield agent_node(pid, record, limit, root)

    report.agent = await _write_all(db, nodes(), "agent", progress, deny)
    report.agent_skipped = found.malformed
    if found.cursor is not None:
        await set_cursor(db, pid, "agent:claude", found.cursor.encode())
    # What the hook told the agents in this repository (a record for the viewer, not nodes).
    await sync_notes(db, pid, root, engine.settings.home)


async def embed_pending(
    engine: Engine, report: SyncReport, limit: int | None, progress: Progress = _noop
) -> None:
    """Give vectors to the nodes that lack one for the configured model.

    Any failure of the model ends the pass with one line in ``report.vectors``; what was
    embedded stays, and BM25 is unaffected.
    """
    embedder = engine.embedder()
    if embedder is None:
        report.vectors = (
            ("off: " + engine.db.vectors.reason)
            if engine.db.vectors.reason
            else "off (embed.enabled is false)"
        )
        return
    db = engine.db
    try:
        await embedder.check()  # before any query over the nodes: Ollama is often just absent
    except EmbedUnavailableError as err:
        # Never set up is a first-class mode, said quietly ("off"); a model that worked
        # before and is gone now is worth a line ("skipped").
        had = await db.fetchone("select 1 from embeddings limit 1")
        state = "skipped" if had else "off"
        report.vectors = f"{state}: {err}; search uses BM25 meanwhile"
        return
    from .store import sketches, vectors  # a reachable model: there is something to embed

    async with db.transaction():
        note = await vectors.prepare(db, embedder.model)
        await vectors.prune_orphans(db)
        await vectors.backfill_sketches(db)
    report.vectors = note or "ok"
    await _embed_batches(db, embedder, report, limit, progress)
    async with db.transaction():  # the sign pages of what changed, for fast reads of the sketch
        await sketches.refresh_pages(db)


async def _embed_batches(
    db: Database,
    embedder: OllamaEmbedder,
    report: SyncReport,
    limit: int | None,
    progress: Progress,
) -> None:
    """Embed the pending nodes batch by batch, one transaction each, until none is left, the
    limit is reached, or the model fails (said in ``report.vectors``)."""
    from .store import vectors

    batch_size = embedder.batch
    while limit is None or report.embedded < limit:
        size = batch_size if limit is None else min(batch_size, limit - report.embedded)
        batch = await vectors.pending(db, embedder.model, size)
        if not batch:
            return
        try:
            found = await embedder.embed(vectors.texts(batch))
        except EmbedTimeoutError as err:
            if batch_size > 1:
                # A busy model: halve the batch rather than retry the same slow one for ever.
                batch_size = max(1, batch_size // 2)
                continue
            report.vectors = f"skipped: {err}; search uses BM25 meanwhile"
            return
        except EmbedUnavailableError as err:
            report.vectors = f"skipped: {err}; search uses BM25 meanwhile"
            return
        async with db.transaction():
            await vectors.store(db, embedder.model, batch, found)
        report.embedded += len(batch)
        progress("embedding", report.embedded)
