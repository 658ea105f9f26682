"""The engine: one repository's memory, opened as an async context manager.

    async with open_engine(settings, Path(".")) as engine:
        response = await handlers.search(engine, "why does sync fall back")

It owns the database connection for its lifetime; nothing is kept in module globals.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .collectors.git import RepoInfo, git, main_checkout, read_repo
from .config import load_config
from .config.snapshot import shipped_reach
from .embed.ollama import OllamaEmbedder
from .errors import (
    FileAccessError,
    NotInitialisedError,
    StoreError,
    UntrustedWorkspaceError,
    UsageError,
)
from .files import file_error, make_dir, read_text, replace_file
from .identity import Prior, settle
from .logging import get_logger
from .paths import CONFIG_FILE, DB_FILE, WORKSPACE_DIR, workspace_dir
from .private import PRIVATE_DIR, PRIVATE_FILE, home_paths, tighten, workspace_paths
from .registry import ProjectEntry
from .store.db import Database, open_database
from .store.maintenance import Compaction, due, finish_due
from .trust import MARKER, UNTRACK, foreign, refusal, stamp

if TYPE_CHECKING:
    from .config import ProjectConfig, Settings

__all__ = [
    "Engine",
    "adopt_workspace",
    "check_workspace",
    "ensure_workspace",
    "memory_repo",
    "open_engine",
    "read_project",
    "user_config",
]

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


def ensure_workspace(root: Path, home: Path) -> list[str]:
    """Create ``.nexusmem/`` (0700) with its owner marker (see :mod:`.trust`), ``.gitignore``
    and ``config.json`` (0600); return what was made.

    An existing config is validated, never rewritten. The caller has checked the workspace
    (:func:`check_workspace`): one that exists is this user's.
    """
    ws = workspace_dir(root)
    created = []
    if not ws.exists():
        make_dir(ws, PRIVATE_DIR)
        try:
            stamp(ws, home)
        except OSError as err:
            raise file_error("write", ws / MARKER, err) from err
        created.append(str(ws))
    ignore = ws / ".gitignore"
    if not ignore.exists():
        # The workspace ignores itself, so init never edits a file it does not own.
        replace_file(ignore, "*\n", mode=PRIVATE_FILE)
        created.append(str(ignore))
    config = ws / CONFIG_FILE
    if config.exists():
        load_config(config, user_config(home))
    else:
        from .config import default_config_text  # only init writes the file

        replace_file(config, default_config_text(home), mode=PRIVATE_FILE)
        created.append(str(config))
    return created


def user_config(home: Path) -> Path:
    """The user's own ``config.json``: the defaults of every repository's, and the only
    place (with the environment) for the settings that send data anywhere."""
    return home / CONFIG_FILE


async def check_workspace(root: Path, home: Path) -> None:
    """Refuse the ``.nexusmem`` at ``root`` unless this user's NexusMem made it (see
    :mod:`.trust`) and git does not track it: a clone's own files are data, never memory, and
    memory in a tracked file would be published by the next ``git commit -a``."""
    if not os.path.lexists(workspace_dir(root)):
        return
    why = refusal(root, home)
    if why is None and not await _tracked(root):
        return
    # A clone's workspace is refused for both; untracking it is the first step of the way out.
    if why is None or await _tracked(root, cached=False):
        raise _tracked_error(workspace_dir(root))
    raise UntrustedWorkspaceError(why)


def _tracked_error(ws: Path) -> UntrustedWorkspaceError:
    return UntrustedWorkspaceError(
        f"{ws} is tracked by git: the repository ships it, and a repository's own files are "
        f"never memory or config; run {UNTRACK}"
    )


async def adopt_workspace(settings: Settings, path: Path) -> None:
    """Mark the ``.nexusmem`` of the repository at ``path`` as this user's, on their word (a
    workspace of theirs whose marker no longer matches: $NEXUSMEM_HOME was reset or moved).
    Still never a link, another user's folder, or one git tracks."""
    repo = await memory_repo(await read_repo(path.expanduser()))
    ws = workspace_dir(repo.root)
    if not os.path.lexists(ws):
        raise UsageError(f"{ws} does not exist: there is nothing to adopt", argument="adopt")
    if (why := foreign(str(ws))) is not None:
        raise UntrustedWorkspaceError(why)
    if await _tracked(repo.root, cached=False):
        raise _tracked_error(ws)
    try:
        stamp(ws, settings.home)
    except OSError as err:
        raise file_error("write", ws / MARKER, err) from err


_INDEX_CHECKED = "index.checked"


async def _tracked(root: Path, cached: bool = True) -> bool:
    """Whether git tracks anything under the workspace. ``git ls-files`` reads the whole index
    (4 ms on werkzeug), so an answer of no is kept beside the index file's identity, and asked
    again only once the index changed (an ``add -f`` of the workspace changes it)."""
    stamp_file = workspace_dir(root) / _INDEX_CHECKED
    index = _index_identity(root) if cached else None
    if index is not None and read_text(stamp_file) == index:
        return False
    tracked = bool(await git(root, "ls-files", "-z", "--", WORKSPACE_DIR, check=False))
    if not tracked and index is not None:
        with contextlib.suppress(FileAccessError):  # a cache: a read-only workspace asks again
            replace_file(stamp_file, index, mode=PRIVATE_FILE)
    return tracked


def _index_identity(root: Path) -> str | None:
    """The index file's device, inode, size and mtime; None when git may read another index
    (a linked worktree or submodule, ``GIT_INDEX_FILE``) or there is none."""
    if os.environ.get("GIT_INDEX_FILE"):
        return None
    try:
        info = os.stat(root / ".git" / "index")
    except OSError:  # no index yet, or .git is a file naming the git dir elsewhere
        return None
    return f"{info.st_dev} {info.st_ino} {info.st_size} {info.st_mtime_ns}\n"


def _load_config(repo: RepoInfo, home: Path) -> ProjectConfig:
    """The repository's config over the user's; says in one line what it may not set."""
    path = workspace_dir(repo.root) / CONFIG_FILE
    config = load_config(path, user_config(home))
    ignored = shipped_reach(path)
    if ignored:
        log.warning(
            "config_ignored",
            file=str(path),
            settings=", ".join(ignored),
            why="a repository's config.json cannot send data anywhere or turn on a source; "
            f"set them in {user_config(home)} or the environment",
        )
    return config


async def memory_repo(checkout: RepoInfo) -> RepoInfo:
    """The repository whose memory ``checkout`` uses: itself, or for a linked worktree without a
    ``.nexusmem/`` of its own, its main checkout (HEAD and all: a worktree shares its memory,
    it does not move the main checkout's git cursor to its own branch)."""
    if os.path.lexists(workspace_dir(checkout.root)):
        return checkout
    main = await main_checkout(checkout.root)
    return checkout if main is None else await read_repo(main)


async def read_project(settings: Settings, path: Path) -> tuple[RepoInfo, ProjectConfig]:
    """The repository whose memory ``path`` belongs to (see :func:`memory_repo`) and its config,
    without opening (or creating) memory. Its workspace, if any, is checked first."""
    repo = await memory_repo(await read_repo(path.expanduser()))
    await check_workspace(repo.root, settings.home)
    return repo, _load_config(repo, settings.home)


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
    await check_workspace(repo.root, settings.home)
    if create:
        ensure_workspace(repo.root, settings.home)
    elif not (ws / DB_FILE).exists():
        raise NotInitialisedError(f"{repo.root} has no NexusMem memory yet")
    # Before the database is opened: a read-only open of an older schema fails in it, and a
    # database made 0600 first gets a -wal and -shm of its own mode.
    _make_private(ws, settings.home)
    config = _load_config(repo, settings.home)
    async with open_database(
        ws / DB_FILE, read_only=read_only, vectors=settings.vector != "off"
    ) as db:
        await _finish_compaction(db, read_only)
        engine = Engine(settings=settings, repo=repo, config=config, db=db)
        await settle(engine, writable=not read_only)  # the origin may have changed
        yield engine
