"""The use cases. Both adapters (``cli.py`` and the MCP tools) call these and nothing else."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .chains import chain_counts
from .collectors.git import RepoInfo
from .config import ProjectConfig, Settings
from .engine import Engine, ensure_workspace, open_engine, read_project
from .errors import UsageError
from .files import obstacle
from .models import NODE_KINDS, SearchResponse, Status, SyncReport
from .paths import DB_FILE, workspace_dir
from .precheck import PrecheckReport
from .registry import check_entry, load_registry, register_project, remove_projects
from .retrieval.pack import display_title, format_date, preview_row
from .store import vectors
from .store.fts import Candidate
from .store.nodes import NODE_COLUMNS, get_cursor, upsert_project

if TYPE_CHECKING:
    from .collectors.session.scan import SessionScan
    from .hygiene.forget import ExportReport, ForgetReport, ImportReport
    from .hygiene.prune import PruneReport
    from .hygiene.review import MarkStaleResult, ReviewResult
    from .hygiene.scrub import ScrubReport
    from .hygiene.stale import DismissResult, OpenSuggestions, StaleReport
    from .hygiene.unreachable import UnreachableReport

# Heavier modules (the collectors, the shell parsers and the redaction table) are imported by
# the use cases that need them, so a query or a status does not pay for them at start-up.

__all__ = [
    "ProjectsReport",
    "check_contradictions",
    "deny_list",
    "dismiss_suggestion",
    "export_deny_list",
    "forget",
    "import_deny_list",
    "init_project",
    "list_projects",
    "list_recent",
    "mark_stale",
    "open_suggestions",
    "precheck",
    "prune_source",
    "prune_unreachable",
    "review",
    "scan",
    "scan_conversation",
    "scan_github",
    "scan_session",
    "scan_structure",
    "scrub_secrets",
    "search",
    "search_all",
    "share_text",
    "stale",
    "status",
    "sync",
]


async def sync(engine: Engine, *, auto: bool = False, **options: Any) -> SyncReport:
    """Bring the memory up to date: see ``nexusmem_core.sync.sync`` for the options.

    ``auto`` (git's post-commit hook) holds ``.nexusmem/sync.lock`` for the whole sync; while
    another live process holds it, nothing is done and ``report.skipped`` says why.
    """
    from .sync import sync as run_sync

    if not auto:
        return await run_sync(engine, **options)
    from .lock import SYNC_LOCK, LockBusy, acquire

    try:
        lock = acquire(engine.workspace / SYNC_LOCK)
    except LockBusy as busy:
        report = SyncReport(project=engine.repo.name, root=str(engine.repo.root))
        report.skipped = f"sync already running (pid {busy.pid}); skipped"
        return report
    with lock:
        return await run_sync(engine, **options)


async def precheck(settings: Settings, path: Path, **options: Any) -> PrecheckReport:
    """Before a commit, what memory knows about its files: see ``nexusmem_core.precheck``."""
    from .precheck import precheck as run_precheck

    return await run_precheck(settings, path, **options)


async def init_project(settings: Settings, path: Path) -> tuple[Path, list[str]]:
    """Create the workspace (idempotent) and register the project.

    Returns the workspace and the files created; a second run creates nothing.
    """
    repo, _ = await read_project(path)
    created = ensure_workspace(repo.root)
    db_file = workspace_dir(repo.root) / DB_FILE
    if not db_file.exists():
        created.append(str(db_file))
    async with open_engine(settings, repo.root, create=True) as engine:
        async with engine.db.transaction():
            await upsert_project(
                engine.db, engine.project_id, repo.name, str(repo.root), repo.origin
            )
        register_project(settings.home, engine.registry_entry())
    return engine.workspace, created


# -------------------------------------------------------------------------------------- search


async def search(
    engine: Engine,
    query: str,
    budget: int | None = None,
    vector: bool = True,
    as_of: str | None = None,
    now: float | None = None,
) -> SearchResponse:
    """Rank this repository's memory against ``query`` and pack the best into ``budget``.

    ``vector=False`` forces BM25 alone; otherwise the vector arm joins when it can. ``as_of``
    (a date) reads memory as it was then: only nodes recorded at or before it. ``now`` is the
    moment recency is measured from (the clock by default). The pipeline is
    ``retrieval/search.py``.
    """
    from .retrieval.search import search as run_search

    return await run_search(engine, query, budget, vector, as_of, now)


async def search_all(
    settings: Settings,
    query: str,
    budget: int | None = None,
    vector: bool = True,
    as_of: str | None = None,
    now: float | None = None,
) -> SearchResponse:
    """Search every registered repository, each project's list fused by rank."""
    from .retrieval.search import search_all as run_search_all

    return await run_search_all(settings, query, budget, vector, as_of, now)


# -------------------------------------------------------------------------------------- status


async def status(engine: Engine) -> Status:
    from .hygiene.stale import count_open

    db, pid = engine.db, engine.project_id
    by_kind = dict(
        await db.fetchall(
            "select kind, count(*) from nodes where project_id = ? group by kind order by 2 desc",
            (pid,),
        )
    )
    first, last = await db.fetchone(
        "select min(ts), max(ts) from nodes where project_id = ?", (pid,)
    ) or (None, None)
    (version,) = await db.fetchone("select max(version) from schema_migrations") or (0,)
    vector, embedded = await _vector_status(engine)
    chains = await chain_counts(db, pid)
    sessions = await db.fetchall(
        "select state, count(*) from sessions where project_id = ? group by state", (pid,)
    )
    import_edges, structure = await _import_graph(engine)
    blocked = obstacle(db.path)
    return Status(
        identity=await _identity_text(engine),
        unwritable=blocked.text if blocked else "",
        import_edges=import_edges,
        structure=structure,
        sessions=dict(sessions),
        flagged=await count_open(db, pid),
        chains=chains.__dict__,
        shell=_shell_capture(engine),
        project=engine.repo.name,
        project_id=pid,
        root=str(engine.repo.root),
        database=str(db.path),
        nodes=sum(by_kind.values()),
        by_kind=by_kind,
        first_ts=first,
        last_ts=last,
        last_sync=await get_cursor(db, pid, "last_sync"),
        head=engine.repo.head,
        cursor=await get_cursor(db, pid, "git"),
        vector=vector,
        embedded=embedded,
        schema_version=version,
    )


async def _identity_text(engine: Engine) -> str:
    """Whether the origin changed: carried over already, or waiting for a sync to be."""
    from .identity import last_change

    origin = engine.repo.origin
    if engine.prior is not None:
        return (
            f"changed from {engine.prior.origin or 'no origin'} to {origin or 'no origin'}: "
            f"the next `nexusmem sync` carries {engine.prior.nodes} node(s) over"
        )
    change = await last_change(engine.db, engine.project_id)
    return change.describe(origin) if change else ""


async def _import_graph(engine: Engine) -> tuple[dict[str, int], str]:
    """The import graph's edges by language, and why there is none when there is none."""
    db, pid = engine.db, engine.project_id
    rows = await db.fetchall(
        "select lang, count(*) from import_edges where project_id = ? group by lang "
        "order by 2 desc, 1",
        (pid,),
    )
    if rows:
        return dict(rows), ""
    if not engine.config.sources.structure.enabled:
        return {}, "off (sources.structure.enabled is false)"
    if await get_cursor(db, pid, "structure") is None:
        return {}, "not built yet: run `nexusmem sync`"
    return {}, "no import between files of the repository was found"


async def _vector_status(engine: Engine) -> tuple[str, int]:
    """What the vector arm has to work with, and how many nodes are embedded."""
    support = engine.db.vectors
    if not support.loaded:
        return f"off: {support.reason}; searching with BM25", 0
    embedder = engine.embedder()
    if embedder is None:
        return "off (embed.enabled is false); searching with BM25", 0
    cover = await vectors.coverage(engine.db, embedder.model)
    text = (
        f"{cover.embedded} embedded, {cover.pending} pending, model {cover.model} at "
        f"{embedder.host} (sqlite-vec {support.version})"
    )
    return text, cover.embedded


def _shell_capture(engine: Engine) -> str:
    if not engine.config.sources.shell.enabled:
        return "off (sources.shell.enabled is false)"
    from .collectors.shell.hooklog import LOG_FILE

    log = engine.settings.home / LOG_FILE
    if log.exists():
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(log.stat().st_mtime))
        return f"shell hook (last command recorded {when})"
    if engine.config.sources.shell.scrape:
        return "scraped from history files: no cwd or exit codes (`nexusmem hook install`)"
    return "off: no hook log, and scraping is disabled"


def status_text(s: Status) -> str:
    span = f"{format_date(s.first_ts)} .. {format_date(s.last_ts)}" if s.nodes else "empty"
    lines = [f"{s.project}  {s.root}", f"{s.nodes} node(s)  {span}"]
    lines += [f"{count:>10}  {kind}" for kind, count in s.by_kind.items()]
    behind = "" if s.cursor == s.head else "  (HEAD has moved: run `nexusmem sync`)"
    lines += [
        f"last sync  {s.last_sync or 'never'}{behind}",
        f"shell      {s.shell}",
        *([f"origin     {s.identity}"] if s.identity else []),
        f"chains     {_chains_text(s.chains)}",
        f"imports    {_imports_text(s.import_edges, s.structure)}",
        f"vectors    {s.vector}",
        f"flagged    {_flagged_text(s.flagged)}",
        *([f"sessions   {_sessions_text(s.sessions)}"] if s.sessions else []),
        f"database   {s.database} (schema v{s.schema_version})",
        *([f"           cannot be written: {s.unwritable}"] if s.unwritable else []),
    ]
    return "\n".join(lines)


def _imports_text(edges: dict[str, int], structure: str) -> str:
    if not edges:
        return structure
    langs = ", ".join(f"{lang} {count}" for lang, count in edges.items())
    return f"{sum(edges.values())} file-to-file import edge(s): {langs}"


def _flagged_text(flagged: int) -> str:
    if not flagged:
        return "no stale node is flagged as likely superseded"
    return f"{flagged} stale node(s) likely superseded: see `nexusmem stale`"


def _sessions_text(states: dict[str, int]) -> str:
    """Conversation sessions by summary state (see collectors/session)."""
    text = (
        f"{states.get('done', 0)} summarised, {states.get('queued', 0)} queued, "
        f"{states.get('pending', 0)} pending (the chat model did not answer)"
    )
    failed = states.get("failed", 0)
    return text + (f", {failed} summary(ies) kept out by the deny list" if failed else "")


def _chains_text(chains: dict[str, int]) -> str:
    if not chains.get("failures"):
        return "no failed commands recorded"
    return (
        f"{chains['failures']} failed command(s) examined: {chains['retry']} linked by retry, "
        f"{chains['discussion']} by discussion, {chains['unresolved']} with no fix recorded"
    )


def share_text(s: Status) -> str:
    """A plain summary to paste elsewhere: no local paths, no ids, nothing from node bodies."""
    span = f"{format_date(s.first_ts)} .. {format_date(s.last_ts)}" if s.nodes else "empty"
    lines = [f"NexusMem memory of {s.project}", f"{s.nodes} node(s)  {span}"]
    lines += [f"{count:>10}  {kind}" for kind, count in s.by_kind.items()]
    lines.append(f"search     {'hybrid (BM25 + vectors)' if s.embedded else 'BM25'}")
    return "\n".join(lines)


async def list_recent(
    engine: Engine, limit: int = 20, kind: str | None = None
) -> list[dict[str, Any]]:
    """The most recent nodes, newest first, optionally of one kind (one of ``NODE_KINDS``)."""
    if not 1 <= limit <= 500:
        raise UsageError("limit: must be between 1 and 500")
    if kind is not None and kind not in NODE_KINDS:
        raise UsageError(
            f"kind: {kind!r} is not a kind of node; the kinds are {', '.join(NODE_KINDS)}"
        )
    where, params = "n.project_id = ?", [engine.project_id]
    if kind:
        where += " and n.kind = ?"
        params.append(kind)
    rows = await engine.db.fetchall(
        f"select {NODE_COLUMNS} from nodes n where {where} "
        f"order by n.ts is null, n.ts desc, n.seq desc limit ?",
        (*params, limit),
    )
    return [_summary(Candidate.from_row(r, 0.0)) for r in rows]


def _summary(c: Candidate) -> dict[str, Any]:
    return {
        "id": c.id,
        "kind": c.kind,
        "ref": c.ref,
        "title": display_title(c),
        "date": format_date(c.ts),
        "ts": c.ts,
        "provenance": c.provenance,
        "trust": c.trust,
        "signal": c.signal,
        "superseded": c.superseded,
    }


async def get_node(engine: Engine, node_id: str) -> dict[str, Any] | None:
    """One node in full: text, files, metadata."""
    row = await engine.db.fetchone(
        f"select {NODE_COLUMNS}, n.body from nodes n where n.id = ?", (node_id,)
    )
    if row is None:
        return None
    candidate = Candidate.from_row(row, 0.0)
    files = [
        p
        for (p,) in await engine.db.fetchall(
            "select path from node_files where node_id = ? order by path", (node_id,)
        )
    ]
    return {**_summary(candidate), "meta": candidate.meta, "body": row[14], "files": files}


# ------------------------------------------------------------------------ review and staleness


async def review(engine: Engine, node_id: str, trust: str, note: str | None = None) -> ReviewResult:
    """A person's judgement of one node (id or unique prefix): ``verified``, ``rejected``, or
    ``candidate`` to clear it. Rejected ranks lower, never hidden; verified only labels."""
    from .hygiene.review import review as run

    return await run(engine, node_id, trust, note)


async def stale(engine: Engine, min_age_days: int = 45, limit: int = 20) -> StaleReport:
    """Non-observed nodes older than ``min_age_days`` with nothing confirming them, oldest
    first, with their open "likely superseded" suggestions. Read-only."""
    from .hygiene.stale import stale as run

    return await run(engine, min_age_days, limit)


async def check_contradictions(
    engine: Engine, min_age_days: int = 45, limit: int = 20
) -> StaleReport:
    """``stale``, after a local chat model judged each candidate against its most similar newer
    node; writes only the cache of verdicts (``report.contradictions`` says if it could not)."""
    from .hygiene.contradictions import check_contradictions as run

    return await run(engine, min_age_days, limit)


async def mark_stale(engine: Engine, old_id: str, new_id: str) -> MarkStaleResult:
    """Record that ``new_id`` replaces ``old_id``: the old node ranks lower, stays queryable."""
    from .hygiene.review import mark_stale as run

    return await run(engine, old_id, new_id)


async def dismiss_suggestion(engine: Engine, node_id: str) -> DismissResult:
    """Silence the "likely superseded" suggestions under one stale node."""
    from .hygiene.stale import dismiss

    return await dismiss(engine, node_id)


async def open_suggestions(engine: Engine, limit: int = 50) -> OpenSuggestions:
    """Every "likely superseded" suggestion nobody has acted on yet. Read-only."""
    from .hygiene.stale import open_suggestions as run

    return await run(engine, limit)


# ---------------------------------------------------------------------------------------- scan


async def scan(
    settings: Settings, repo: RepoInfo, cfg: ProjectConfig, source: str, limit: int | None = None
) -> list[dict[str, Any]]:
    """What a sync would write for one source, without writing: ``git``, ``diff``, ``docs``
    or ``shell``."""
    from . import ingest
    from .collectors.shell.hooklog import LogCursor

    _check_limit(f"scan-{source}", limit, "nodes")
    pid = repo.project_id
    nodes = []
    if source == "git" and repo.head:
        async for _, node in ingest.commit_nodes(pid, repo.root, repo.head, cfg):
            nodes.append(node)
            if limit and len(nodes) >= limit:
                break
    elif source == "diff" and repo.head:
        rev = ["-n", str(cfg.sources.diff.max_commits), repo.head]
        async for node in ingest.diff_nodes(pid, repo.root, rev, cfg):
            nodes.append(node)
            if limit and len(nodes) >= limit:
                break
    elif source == "shell":
        found = await ingest.shell_nodes(repo, cfg, settings.home, LogCursor())
        every = list(found.nodes)
        nodes = every[-limit:] if limit else every
    elif source == "docs":
        docs = await ingest.read_doc_files(repo.root, cfg)
        # Dated as a sync dates them: by the last commit that changed the file, else its mtime.
        dates = {}
        if cfg.sources.git.enabled and repo.head:
            dates = await ingest.last_changed(repo.root, repo.head, [d.path for d in docs])
        for doc in docs:
            ts = dates.get(doc.path) or doc.mtime
            nodes += ingest.doc_nodes(pid, doc, ts, cfg.limits.max_body_chars)
        nodes = nodes[:limit] if limit else nodes
    return [preview_row(n) for n in nodes]


def _check_limit(command: str, limit: int | None, what: str) -> None:
    """A dry run's ``--limit``: none, or 1 or more. Below 1 is refused: the scans would read 0
    as no limit at all and -1 as one node (or as all but the last)."""
    if limit is not None and limit < 1:
        raise UsageError(f"{command} --limit: give a number of {what}, 1 or more")


async def scan_structure(
    repo: RepoInfo, cfg: ProjectConfig, limit: int | None = None
) -> dict[str, Any]:
    """The import graph a sync would store, built from the working tree and not stored (so it
    works before ``init``): the first ``limit`` edges, and the counts."""
    import anyio.to_thread

    from .collectors.structure import build_graph, list_tree

    _check_limit("scan-structure", limit, "edges")
    listing = await list_tree(repo.root, cfg.sources.diff.skip_globs)
    graph, _ = await anyio.to_thread.run_sync(build_graph, listing)
    return graph.to_dict(limit)


async def scan_conversation(
    settings: Settings, repo: RepoInfo, cfg: ProjectConfig, limit: int | None = None
) -> dict[str, Any]:
    """What a sync with the conversation source on would write, without writing: the turns
    (with the secrets replaced in each), files read, lines skipped and secrets in total."""
    from .collectors.conversation.step import preview

    _check_limit("scan-conversation", limit, "nodes")
    return (await preview(settings, repo, cfg, limit)).to_dict()


async def scan_session(
    engine: Engine, limit: int | None = None, *, call_model: bool = False
) -> SessionScan:
    """The prompts the due sessions' summaries would come from, newest first, writing
    nothing; with ``call_model``, also what the chat model makes of each."""
    from .collectors.session.scan import scan_sessions

    _check_limit("scan-session", limit, "sessions")
    return await scan_sessions(engine, limit=limit, call_model=call_model)


async def scan_github(
    repo: RepoInfo, cfg: ProjectConfig, limit: int | None = None
) -> dict[str, Any]:
    """What a first sync with the GitHub source on would write, without writing: the threads,
    the secrets replaced in them, and ``github``: "ok" or why gh gave nothing."""
    from .collectors.github.step import preview_github

    _check_limit("scan-github", limit, "threads")
    return (await preview_github(repo, cfg, limit)).to_dict()


# ---------------------------------------------------------------------- forget and prune-source


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
    from .hygiene.forget import forget as run

    return await run(
        engine, value, regex=regex, ignore_case=ignore_case, reason=reason, apply=apply
    )


async def deny_list(engine: Engine, *, show_patterns: bool = True) -> list[dict[str, Any]]:
    """The deny list: a literal shows only its length, a regex its pattern (unless not
    ``show_patterns``), with reason and date."""
    from .hygiene.forget import list_entries

    return await list_entries(engine, show_patterns=show_patterns)


async def export_deny_list(engine: Engine, path: Path) -> ExportReport:
    """Write the deny list (salted hashes and their salts) to ``path``, mode 0600."""
    from .hygiene.forget import export_entries

    return await export_entries(engine, path)


async def import_deny_list(engine: Engine, path: Path, *, apply: bool = False) -> ImportReport:
    """Add an exported deny list to this checkout and forget the nodes it matches here;
    a dry run unless ``apply``."""
    from .hygiene.forget import import_entries

    return await import_entries(engine, path, apply=apply)


async def prune_source(engine: Engine, source: str, *, apply: bool = False) -> PruneReport:
    """Remove every node one source (``git``, ``shell:bash``, ...) wrote, and reset what it
    had read; a dry run unless ``apply``."""
    from .hygiene.prune import prune_source as run

    return await run(engine, source, apply=apply)


async def prune_unreachable(engine: Engine, *, apply: bool = False) -> UnreachableReport:
    """The commits in memory that no ref reaches any more (after a rebase), with their diffs;
    removed at once (no grace period) with ``apply``, else a dry run."""
    from .hygiene.unreachable import prune_unreachable as run

    if not apply:
        return await run(engine)
    async with engine.db.transaction():
        return await run(engine, apply=True)


# ------------------------------------------------------------------------------------ projects


@dataclass
class ProjectsReport:
    projects: list[dict[str, Any]]
    pruned: list[str]
    kept: list[str]  # why --prune left an entry whose repository is not there right now


async def list_projects(
    settings: Settings, prune: bool = False, remove: list[str] | None = None
) -> ProjectsReport:
    """Registered repositories, each with what is at its paths now (see ``check_entry``).

    ``prune`` forgets the entries whose repository or database was deleted, never one that
    is merely out of reach (an unmounted disk keeps its entry, and the report says why);
    ``remove`` forgets the entries of these roots, whatever their state.
    """
    forget = {str(Path(r).expanduser().resolve()) for r in remove or []}
    rows, kept = [], []
    for entry in load_registry(settings.home):
        found = check_entry(entry)
        if prune and found.prunable:
            forget.add(entry.root)
        elif prune and found.state != "ok":
            kept.append(
                f"{entry.root}: {found.reason}; kept (`nexusmem projects --remove {entry.root}`)"
            )
        rows.append(
            {
                "name": entry.name,
                "root": entry.root,
                "database": entry.database,
                "last_sync": entry.last_sync,
                "present": Path(entry.database).is_file(),
                "state": found.state,
                "reason": found.reason,
            }
        )
    unknown = forget - {r["root"] for r in rows}
    if unknown:
        raise UsageError(
            f"projects --remove: no registered repository at {sorted(unknown)[0]} "
            "(`nexusmem projects` lists them)"
        )
    gone = sorted(r["root"] for r in rows if r["root"] in forget)
    if gone:
        remove_projects(settings.home, set(gone))
    return ProjectsReport(
        projects=[r for r in rows if r["root"] not in forget], pruned=gone, kept=kept
    )


# --------------------------------------------------------------------------------------- scrub


async def scrub_secrets(
    settings: Settings, path: Path, *, all_projects: bool = False, apply: bool = False
) -> ScrubReport:
    """Re-apply the current redaction table to what is stored: the nodes of the repository at
    ``path`` (or, ``all_projects``, of every registered one) and the hook logs. A dry run
    unless ``apply``; applied, each database is backed up first (0600) and left with no free
    page or WAL frame holding the old text. See ``nexusmem_core.hygiene.scrub``."""
    from .hygiene.scrub import scrub

    return await scrub(settings, path, all_projects=all_projects, apply=apply)
