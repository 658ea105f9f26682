"""A repository as a project: set it up, bring its memory up to date, check a commit before
it is made, and the registry of every project on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine import Engine, adopt_workspace, ensure_workspace, open_engine, read_project
from ..errors import UsageError
from ..files import make_dir
from ..models import SyncReport
from ..paths import DB_FILE, workspace_dir
from ..private import PRIVATE_DIR
from ..registry import check_entry, load_registry, register_project, remove_projects
from ..store.nodes import upsert_project

if TYPE_CHECKING:
    from ..config import Settings
    from ..precheck import PrecheckReport


async def sync(engine: Engine, *, auto: bool = False, **options: Any) -> SyncReport:
    """Bring the memory up to date: see ``nexusmem_core.sync.sync`` for the options.

    ``auto`` (git's post-commit hook) holds ``.nexusmem/sync.lock`` for the whole sync; while
    another live process holds it, nothing is done and ``report.skipped`` says why.
    """
    from ..sync import sync as run_sync

    if not auto:
        return await run_sync(engine, **options)
    from ..lock import SYNC_LOCK, LockBusy, acquire

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
    from ..precheck import precheck as run_precheck

    return await run_precheck(settings, path, **options)


async def init_project(
    settings: Settings, path: Path, *, adopt: bool = False
) -> tuple[Path, list[str]]:
    """Create the workspace (idempotent) and register the project.

    ``adopt`` first marks an existing workspace that holds no marker of this home's key as the
    user's own (see :func:`..engine.adopt_workspace`). Returns the workspace and the files
    created; a second run creates nothing.
    """
    # The home first: what init validates (the config it reads, the one it writes) is kept
    # there (config/snapshot.py), so that init in the next repository validates nothing.
    make_dir(settings.home, PRIVATE_DIR)
    if adopt:
        await adopt_workspace(settings, path)
    repo, _ = await read_project(settings, path)
    created = ensure_workspace(repo.root, settings.home)
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
