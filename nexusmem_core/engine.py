"""The engine: one repository's memory, opened as an async context manager.

    async with open_engine(settings, Path(".")) as engine:
        response = await handlers.search(engine, "why does sync fall back")

It owns the database connection for its lifetime; nothing is kept in module globals.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .collectors.git import RepoInfo, main_checkout, read_repo
from .config import load_config
from .embed.ollama import OllamaEmbedder
from .errors import NotInitialisedError, StoreError
from .files import make_dir, replace_file
from .identity import Prior, settle
from .logging import get_logger
from .paths import CONFIG_FILE, DB_FILE, workspace_dir
from .private import PRIVATE_DIR, PRIVATE_FILE, home_paths, tighten, workspace_paths
from .registry import ProjectEntry
from .store.db import Database, open_database
from .store.maintenance import Compaction, due, finish_due

if TYPE_CHECKING:
    from .config import ProjectConfig, Settings

__all__ = ["Engine", "ensure_workspace", "memory_repo", "open_engine", "read_project"]

log = get_logger("engine")


@dataclass
class Engine:
    settings: Settings
    repo: RepoInfo
    config: ProjectConfig
    db: Database
    # Read-only, after the origin changed and before a sync carried memory over to the new
    # id: the identity memory is still stored under (see identity.py).
    prior: Prior | None = None
    _embedders: dict[bool, tuple[Any, OllamaEmbedder]] = field(default_factory=dict, repr=False)

    @property
    def workspace(self) -> Path:
        return workspace_dir(self.repo.root)

    @property
    def project_id(self) -> str:
        return self.prior.id if self.prior else self.repo.project_id

    def registry_entry(self) -> ProjectEntry:
        """What makes this repository findable by ``--all-projects``."""
        return ProjectEntry(
            project_id=self.project_id,
            name=self.repo.name,
            root=str(self.repo.root),
            database=str(self.db.path),
        )

    def embedder(self, *, for_query: bool = False) -> OllamaEmbedder | None:
        """The configured embedding model, or None when vectors are off or cannot load.

        Kept for the engine's life: a new HTTP client per search cost ~30 ms of the vector
        arm's ~46 ms in a long-lived MCP server (measured in bench_vectors.py).
        """
        cfg = self.config.embed
        if not cfg.enabled or not self.db.vectors.loaded:
            return None
        key = (for_query, cfg, self.settings.ollama_host, self.settings.embed_model)
        if self._embedders.get(for_query, (None, None))[0] != key:
            self._embedders[for_query] = (
                key,
                OllamaEmbedder(
                    host=self.settings.ollama_host or cfg.host,
                    model=self.settings.embed_model or cfg.model,
                    timeout=cfg.query_timeout_seconds if for_query else cfg.timeout_seconds,
                    batch=cfg.batch,
                    light=for_query,
                ),
            )
        return self._embedders[for_query][1]


def ensure_workspace(root: Path) -> list[str]:
    """Create ``.nexusmem/`` (0700) with its ``.gitignore`` and ``config.json`` (0600); return
    what was made.

    An existing config is validated, never rewritten.
    """
    ws = workspace_dir(root)
    created = []
    if not ws.exists():
        make_dir(ws, PRIVATE_DIR)
        created.append(str(ws))
    ignore = ws / ".gitignore"
    if not ignore.exists():
        # The workspace ignores itself, so init never edits a file it does not own.
        replace_file(ignore, "*\n", mode=PRIVATE_FILE)
        created.append(str(ignore))
    config = ws / CONFIG_FILE
    if config.exists():
        load_config(config)
    else:
        from .config.schema import ProjectConfig, dump_config  # only init writes the file

        replace_file(config, dump_config(ProjectConfig()), mode=PRIVATE_FILE)
        created.append(str(config))
    return created


async def memory_repo(checkout: RepoInfo) -> RepoInfo:
    """The repository whose memory ``checkout`` uses: itself, or for a linked worktree without a
    ``.nexusmem/`` of its own, its main checkout (HEAD and all: a worktree shares its memory,
    it does not move the main checkout's git cursor to its own branch)."""
    if workspace_dir(checkout.root).exists():
        return checkout
    main = await main_checkout(checkout.root)
    return checkout if main is None else await read_repo(main)


async def read_project(path: Path) -> tuple[RepoInfo, ProjectConfig]:
    """The repository whose memory ``path`` belongs to (see :func:`memory_repo`) and its config,
    without opening (or creating) memory."""
    repo = await memory_repo(await read_repo(path.expanduser()))
    return repo, load_config(workspace_dir(repo.root) / CONFIG_FILE)


def _make_private(workspace: Path, home: Path) -> None:
    """Tighten what an older NexusMem, a copy or a hand left readable by others in the
    workspace and the home (see :mod:`.private`), and say so in one line."""
    changed = tighten([*workspace_paths(workspace), *home_paths(home)])
    if changed:
        log.warning(
            "permissions_tightened",
            changed=", ".join(changed),
            why="other local users could read them; NexusMem keeps them private (0700/0600)",
        )


async def _finish_compaction(db: Database, read_only: bool) -> None:
    """Finish the compaction that a forget, prune-source or scrub-secrets killed after its
    commit left marked (see :mod:`.store.maintenance`), and say so in one line. A read-only
    open does it on a writable connection of its own, if the file can be written at all."""
    if not await due(db):
        return
    event, fields = "compaction_resumed", {}
    try:
        if not read_only:
            fields = asdict(await finish_due(db) or Compaction())
        elif not db.immutable:
            async with open_database(db.path, vectors=db.vectors.loaded) as writer:
                fields = asdict(await finish_due(writer) or Compaction())
        else:
            event, fields = "compaction_pending", {"error": "the file cannot be written now"}
    except StoreError as err:
        event, fields = "compaction_pending", {"error": str(err)}
    log.warning(
        event,
        database=str(db.path),
        why="an earlier forget, prune-source or scrub-secrets stopped before it compacted the "
        "file, whose free space may hold the text it removed",
        **fields,
    )


@asynccontextmanager
async def open_engine(
    settings: Settings, path: Path, *, create: bool = False, read_only: bool = False
) -> AsyncIterator[Engine]:
    """Open the memory of the repository containing ``path`` (in a linked worktree, usually its
    main checkout's: see :func:`memory_repo`).

    ``create`` makes the workspace if it is missing (``init``, and ``sync_project`` over MCP);
    otherwise a repository without one raises NotInitialisedError.
    """
    repo = await memory_repo(await read_repo(path.expanduser()))
    ws = workspace_dir(repo.root)
    if create:
        ensure_workspace(repo.root)
    elif not (ws / DB_FILE).exists():
        raise NotInitialisedError(f"{repo.root} has no NexusMem memory yet")
    # Before the database is opened: a read-only open of an older schema fails in it, and a
    # database made 0600 first gets a -wal and -shm of its own mode.
    _make_private(ws, settings.home)
    config = load_config(ws / CONFIG_FILE)
    async with open_database(
        ws / DB_FILE, read_only=read_only, vectors=settings.vector != "off"
    ) as db:
        await _finish_compaction(db, read_only)
        engine = Engine(settings=settings, repo=repo, config=config, db=db)
        await settle(engine, writable=not read_only)  # the origin may have changed
        yield engine
