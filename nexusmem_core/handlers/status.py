"""What a project's memory holds and how each source stands, as one ``Status`` value (its text
is ``render.status_text``).
"""

from __future__ import annotations

import time

from ..collectors.git import read_repo
from ..engine import Engine
from ..files import obstacle
from ..models import Status
from ..store import vectors
from ..store.nodes import get_cursor


async def status(engine: Engine) -> Status:
    from ..hygiene.flags import count_open

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
    from ..chains import chain_counts  # the status command's alone: not on every import

    chains = await chain_counts(db, pid)
    sessions = await db.fetchall(
        "select state, count(*) from sessions where project_id = ? group by state", (pid,)
    )
    import_edges, structure = await _import_graph(engine)
    blocked = obstacle(db.path)
    days = engine.config.sources.git.prune_unreachable_days
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
        # Read now: a server's engine stays open across commits, and its repo is as it was.
        head=(await read_repo(engine.repo.root)).head,
        cursor=await get_cursor(db, pid, "git"),
        vector=vector,
        embedded=embedded,
        schema_version=version,
        unreachable_waiting=await _unreachable_waiting(engine) if days else 0,
        prune_unreachable_days=days,
    )


async def _unreachable_waiting(engine: Engine) -> int:
    """The commits a rewrite (a rebase) left that the last sync saw unreachable, keeps for
    their grace period (hygiene/unreachable.py) and memory still holds (``sync
    --prune-unreachable --yes`` may have removed them since): its cursor and one indexed
    lookup per commit in it, no git call."""
    from ..hygiene.unreachable import CURSOR

    seen = await get_cursor(engine.db, engine.project_id, CURSOR)
    if not seen or seen == "{}":
        return 0
    row = await engine.db.fetchone(
        "select count(*) from json_each(?) j where exists (select 1 from nodes n "
        "where n.project_id = ? and n.source = 'git' and n.ref = j.key and n.kind = 'git_commit')",
        (seen, engine.project_id),
    )
    return int(row[0]) if row else 0


async def _identity_text(engine: Engine) -> str:
    """Whether the origin changed: carried over already, or waiting for a sync to be."""
    from ..identity import last_change

    origin = engine.repo.origin
    if engine.prior is not None:
        return (
            f"changed from {engine.prior.origin or 'no origin'} to {origin or 'no origin'}: "
            f"the next sync carries {engine.prior.nodes} node(s) over"
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
        return {}, "not built yet: the next sync builds it"
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
    from ..collectors.shell.hooklog import LOG_FILE

    log = engine.settings.home / LOG_FILE
    if log.exists():
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(log.stat().st_mtime))
        return f"shell hook (last command recorded {when})"
    if engine.config.sources.shell.scrape:
        return "scraped from history files: no cwd or exit codes (`nexusmem hook install`)"
    return "off: no hook log, and scraping is disabled"
